"""The per-sample search of the prox (:mod:`.prox`): the objective ψ over the L fields χ, its
multi-start Newton lanes and the finish at the winner (docs/theory.md §5).

For fixed χ the per-sample objective φ(χ, z) is quadratic in z, and z is eliminated exactly:
    ψ(χ) = |χ − ω_χ|²/(2V_k) + r² / (2(1 + V_v|s|²)),  s = σ(χ),  r = y − s·ω_z,
an L-dimensional non-convex problem (:func:`psi`; φ itself is :func:`phi`). Its global minimum is
found by a batched, monotone (backtracking) saddle-free Newton method started from several points
per sample: the centre ω_χ, optional warm starts (the previous pass's minimum and runners-up), and
displacements of radius R = √(2 V_k ψ(ω_χ)) (no minimiser lies farther from ω_χ) towards each
token (σ normalised) or along ±e_ℓ and ±ω_z (σ linear), at most ``MAX_DIRECTIONS`` of them (those
of lowest ψ: a start count that does not grow with L); the lowest end point wins. Newton runs in
two phases (all lanes a few steps, then only the unconverged ones; :func:`run_lanes`); a lane stops
once converged, and a batch of lanes (ordered start by start) once all of its lanes have. The
finish (:func:`batch_finish`) picks the winner and the runners-up, the implicit Jacobian at the
winner (∂h/∂ω = H⁻¹ V⁻¹, ∂h/∂y = H⁻¹ ∇_h f, H = ∇²φ, 2L × 2L) and the statistics of the soft-min
envelope over the distinct local minima found (docs/theory.md §4–5).
Every factorisation is a Cholesky of :mod:`.linalg` (written out entry by entry up to 6 × 6,
the library's batched call above): the compiled programs have a size bounded at every L
(compile time independent of L), the work is O(L³) per Newton step and per sample's finish. The
Newton steps' Hessian of ψ is in closed form above L = 6 (softmax, linear: :func:`_psi_hessian`).
On CPU the lanes run in cache-sized blocks (``_blocked``).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from slrpipe.scores import score
from slrpipe.sigmas import get as get_sigma
from slrpipe.theory.replica.linalg import (
    UNROLL_MAX,
    backward,
    chol_solve,
    cholesky,
    forward,
    inverse_diagonal,
)

_STEPS = jnp.array([1.0, 0.5, 0.25, 0.125, 1 / 16, 1 / 64, 1 / 256, 0.0])


def psi(chi, wk, wv, y, Vk, Vv, sigma):
    s = score(sigma, chi, xp=jnp)
    r = y - s @ wv
    return jnp.sum((chi - wk) ** 2) / (2 * Vk) + r**2 / (2 * (1 + Vv * (s @ s)))


def phi(h, wk, wv, y, Vk, Vv, sigma):
    L = wk.shape[0]
    chi, z = h[:L], h[L:]
    s = score(sigma, chi, xp=jnp)
    return jnp.sum((chi - wk) ** 2) / (2 * Vk) + jnp.sum((z - wv) ** 2) / (2 * Vv) + 0.5 * (y - s @ z) ** 2


def _psi_hessian(chi, wk, wv, y, Vk, Vv, sigma):
    """∇²ψ (L, L) at χ (docs/theory.md §5). ψ = |χ − ω_χ|²/(2V_k) + g(s), s = σ(χ),
    g = r²/(2D), r = y − s·ω_z, D = 1 + V_v|s|², so ∇²ψ = I/V_k + Jᵀ ∇²g J + Σ_i ∂g/∂s_i ∇²s_i:
    for linear σ (J = I, ∇²s = 0) and softmax (J = diag(s) − s sᵀ, ∇²s_i = s_i[(e_i − s)(e_i − s)ᵀ − J])
    written as outer products, O(L²) per lane where autodiff's forward-over-reverse costs ~L
    gradient passes (measured, one CPU core: 3.5 µs per lane at L = 16 and 82 µs at L = 64);
    other σ, and L ≤ 6 (as fast there; L = 3's results stay the same bit for bit), by autodiff."""
    if sigma not in ("softmax", "linear") or chi.shape[0] <= UNROLL_MAX:
        return jax.hessian(psi)(chi, wk, wv, y, Vk, Vv, sigma)
    s = score(sigma, chi, xp=jnp)
    r, D = y - s @ wv, 1 + Vv * (s @ s)
    ga, gb, gc, gd = 1 / D, 2 * Vv * r / D**2, Vv * r**2 / D**2, 4 * Vv**2 * r**2 / D**3
    out = jnp.outer
    L = chi.shape[0]
    if sigma == "linear":  # ∇²g itself
        return (1 / Vk - gc) * jnp.eye(L) + ga * out(wv, wv) + gb * (out(wv, s) + out(s, wv)) + gd * out(s, s)
    c = -r * wv / D - Vv * r**2 * s / D**2  # ∇g
    a, b, s2 = s * wv - s * (s @ wv), s * s - s * (s @ s), s * s  # J ω_z, J s, s∘s
    JJ = jnp.diag(s2) - out(s2, s) - out(s, s2) + (s @ s) * out(s, s)
    cs = c * s
    T = jnp.diag(cs - (c @ s) * s) - out(cs, s) - out(s, cs) + 2 * (c @ s) * out(s, s)
    JGJ = ga * out(a, a) + gb * (out(a, b) + out(b, a)) - gc * JJ + gd * out(b, b)
    return jnp.eye(L) / Vk + JGJ + T


#: most displaced starts kept per sample (the centre and the warm starts come on top): where the
#: candidate directions are more, those with the lowest ψ at their start point are kept. The
#: criterion: doubling this budget changes the global minimum of a fraction of the samples that
#: stays below 10⁻³ as L grows (docs/theory.md §5, measured L = 3–64). Every candidate is kept
#: up to L = 5 (softmax) and L = 3 (linear).
MAX_DIRECTIONS = 10


def _starts(wk, wv, y, Vk, Vv, sigma, max_dirs=MAX_DIRECTIONS):
    L = wk.shape[0]
    R = jnp.sqrt(2 * Vk * psi(wk, wk, wv, y, Vk, Vv, sigma))
    eye = jnp.eye(L)
    if get_sigma(sigma).normalised:
        u = eye - 1.0 / L
        u = u / jnp.maximum(jnp.linalg.norm(u, axis=1, keepdims=True), 1e-12)
        dirs = jnp.concatenate([0.5 * u, u]) if L > 1 else u
    else:
        uz = wv / jnp.maximum(jnp.linalg.norm(wv), 1e-12)
        dirs = jnp.concatenate([0.5 * eye, -0.5 * eye, 0.5 * uz[None], -0.5 * uz[None], uz[None], -uz[None]])
    cand = wk[None] + R * dirs
    if dirs.shape[0] > max_dirs:
        # a budget that does not grow with L (the cost per sample stays O(L³) per Newton step):
        # the candidates of lowest ψ, in their original order (static shapes)
        vals = jax.vmap(lambda c: psi(c, wk, wv, y, Vk, Vv, sigma))(cand)
        vals = jnp.where(jnp.isfinite(vals), vals, jnp.inf)
        keep = jnp.sort(jnp.argsort(vals, stable=True)[:max_dirs])
        cand = cand[keep]
    return jnp.concatenate([wk[None], cand])


def _newton(chi0, wk, wv, y, Vk, Vv, sigma, n_steps):
    """At most n_steps monotone Newton steps on ψ from chi0; a lane stops once |∇ψ| <
    ``_CONT_TOL`` (1 + 1/V_k) (one more step would move it by ≲ 1e-10 V_k). Under vmap the loop
    runs while any lane of the batch is unconverged, the converged ones frozen: a lane's end point
    does not depend on the other lanes of its batch (up to ~1 ulp of XLA's vectorised rounding).
    Returns (χ, ψ(χ), |∇ψ(χ)|)."""
    f = functools.partial(psi, wk=wk, wv=wv, y=y, Vk=Vk, Vv=Vv, sigma=sigma)
    g_fn = jax.grad(f)
    h_fn = functools.partial(_psi_hessian, wk=wk, wv=wv, y=y, Vk=Vk, Vv=Vv, sigma=sigma)
    fv = jax.vmap(f)
    tol = _CONT_TOL * (1 + 1 / Vk)

    def step(chi, g):
        H = h_fn(chi)
        # Newton step where H is positive definite, else a Levenberg-Marquardt step with the
        # Gershgorin shift (H + μI positive definite): always a descent direction.
        # Cholesky of :mod:`.linalg`: O(L³) work, a program that does not grow with L.
        p_n, ok = chol_solve(H, g, 1e-6 / Vk)
        off = jnp.sum(jnp.abs(H), axis=1) - jnp.abs(jnp.diag(H))
        mu = jnp.maximum(0.0, jnp.max(off - jnp.diag(H))) + 1e-3 / Vk
        p_lm, _ = chol_solve(H + mu * jnp.eye(H.shape[0]), g, 0.0)
        p = -jnp.where(ok, p_n, p_lm)
        cand = chi[None] + _STEPS[:, None] * p[None]
        # overflowing trial points give NaN; jnp.argmin would pick a NaN, so map them to +inf
        # (t = 0 keeps the current, finite point)
        vals = jnp.where(jnp.isfinite(vals := fv(cand)), vals, jnp.inf)
        i = jnp.argmin(vals)
        # near the minimum ψ changes by less than its rounding error: take the full step there,
        # else the search stalls at |∇ψ| ~ √eps
        i = jnp.where(vals[0] <= vals[i] + 1e-13 * (1 + jnp.abs(vals[i])), 0, i)
        return cand[i]

    def body(c):
        k, chi, g = c
        chi = step(chi, g)
        return k + 1, chi, g_fn(chi)

    # NaN gradients keep stepping (to n_steps), as the old fixed-count loop did
    running = lambda c: (c[0] < n_steps) & ~(jnp.linalg.norm(c[2]) < tol)
    _, chi, g = jax.lax.while_loop(running, body, (0, chi0, g_fn(chi0)))
    return chi, f(chi), jnp.linalg.norm(g)


class Obs(NamedTuple):
    """The observables of one sample (or a batch, leading axis): centres ω_χ, ω_z (L,) and label y."""

    wk: jax.Array
    wv: jax.Array
    y: jax.Array


class Ends(NamedTuple):
    """The S end points of the Newton starts of one sample: chis (S, L), ψ there vals (S,) and
    |∇ψ| there gns (S,)."""

    chis: jax.Array
    vals: jax.Array
    gns: jax.Array


def _softmin_stats(ends: Ends, i, obs: Obs, V, sigma, beta):
    """Weighted channel statistics over the distinct local minima found (docs/theory.md §5),
    ``i`` the index of the best end point, V = (V_k, V_v):
    weights w ∝ exp(−β(ψ_j − ψ_min)), each minimum counted once (end points closer than 1e-7
    relative are one minimum, represented by the first start that reached it); unconverged end
    points (|∇ψ| > 1e-6 (1 + 1/V_k)) other than the best are dropped."""
    (chis, vals, gns), (wk, wv, y), (Vk, Vv) = ends, obs, V
    S = chis.shape[0]
    scale = 1.0 + jnp.max(jnp.abs(chis), axis=1)
    close = jnp.max(jnp.abs(chis[:, None] - chis[None]), axis=2) < 1e-7 * scale[None]
    earlier = jnp.arange(S)[None] < jnp.arange(S)[:, None]
    dup = jnp.any(close & earlier, axis=1)
    # first member of each cluster; the cluster of the best end point always counts
    ok = ~dup & jnp.isfinite(vals) & ((gns < 1e-6 * (1 + 1 / Vk)) | close[i])
    w = jnp.where(ok, jnp.exp(-beta * jnp.maximum(jnp.where(ok, vals, 0.0) - vals[i], 0.0)), 0.0)
    w = w / jnp.sum(w)
    s = jax.vmap(lambda c: score(sigma, c, xp=jnp))(chis)
    den = 1 + Vv * jnp.sum(s * s, axis=1)
    res = (y - s @ wv) / den
    fk = (chis - wk) / Vk
    fv = s * res[:, None]  # (z − ω_z)/V_v
    return dict(zip(SOFT_KEYS, (w @ fk, w @ fv, w @ fk**2, w @ fv**2, 0.5 * (w @ res**2), jnp.sum(ok)), strict=True))


#: the outputs of :func:`_softmin_stats`
SOFT_KEYS = ("fk", "fv", "fk2", "fv2", "loss", "n_min")


def _finish(ends: Ends, obs: Obs, V, sigma, beta):
    """Per sample: select the global minimum among the S end points chis (S, L), the runner-up,
    the implicit Jacobian at the winner and the soft-min statistics at β = ``beta``; V = (V_k, V_v)."""
    (chis, vals, gns), (wk, wv, y), (Vk, Vv) = ends, obs, V
    vals = jnp.where(jnp.isfinite(vals), vals, jnp.inf)
    i = jnp.argmin(vals)
    chi, gn = chis[i], gns[i]
    # runners-up: the two best converged end points outside the winner's cluster and each other's
    # (warm starts of the next pass, so that cheap passes keep the competing branches; the winner
    # where there are fewer)
    scale = 1.0 + jnp.max(jnp.abs(chis), axis=1)
    far = lambda c: jnp.max(jnp.abs(chis - c), axis=1) > 1e-7 * scale
    cand = (gns < 1e-6 * (1 + 1 / Vk)) & far(chi)
    chi2 = jnp.where(jnp.any(cand), chis[jnp.argmin(jnp.where(cand, vals, jnp.inf))], chi)
    cand = cand & far(chi2)
    chi3 = jnp.where(jnp.any(cand), chis[jnp.argmin(jnp.where(cand, vals, jnp.inf))], chi)
    s = score(sigma, chi, xp=jnp)
    r = y - s @ wv
    den = 1 + Vv * (s @ s)
    z = wv + Vv * s * r / den
    # implicit differentiation of ∇φ = 0 on the full 2L problem
    h = jnp.concatenate([chi, z])
    H = jax.hessian(phi)(h, wk, wv, y, Vk, Vv, sigma)
    L = wk.shape[0]
    grad_f = jnp.concatenate([jax.jacobian(lambda c: score(sigma, c, xp=jnp) @ z)(chi), s])
    # one Cholesky factorisation (:mod:`.linalg`); H is positive definite at a strict
    # minimum (pd flag)
    Lh, pd = cholesky(H, 0.0)
    hinv_diag = inverse_diagonal(Lh)
    dh_dy = backward(Lh, forward(Lh, grad_f))
    out = {
        "chi": chi,
        "chi2": chi2,
        "chi3": chi3,
        "z": z,
        "psi": vals[i],
        "grad_norm": gn,
        "resid": r / den,
        "hinv_diag": hinv_diag,
        "dz_dy": dh_dy[L:],
        "hess_pd": pd,
        "n_best": jnp.sum(vals < vals[i] + 1e-9 * (1 + jnp.abs(vals[i]))),
    }
    return out | _softmin_stats(Ends(chis, vals, gns), i, obs, V, sigma, beta)


@functools.partial(jax.jit, static_argnames=("sigma", "multistart", "directions"))
def batch_starts(obs: Obs, warm, V, sigma, multistart, directions=MAX_DIRECTIONS):
    """(n, S, L) Newton starts of the samples ``obs`` (n): the multistart set (or the centre
    alone) then the warm starts (n, W, L) (None: none); V = (V_k, V_v)."""
    Vk, Vv = V
    st = jax.vmap(lambda a, b, c: _starts(a, b, c, Vk, Vv, sigma, directions) if multistart else a[None])(*obs)
    return st if warm is None else jnp.concatenate([st, warm], axis=1)


#: lanes per block of :func:`_blocked` on CPU: a block's n × n arrays hold about _BLOCK_ELEMENTS
#: numbers (32 KB: L1/L2-resident), and at least _BLOCK_MIN lanes. One vmap over all lanes is
#: memory-bound; measured (CPU time of one full multi-start pass, soft-min, 4096 samples):
#: L = 3 softmax 0.71 s unblocked, 0.59 s in blocks of 2¹⁵ numbers, 0.21 s in blocks of 2¹²;
#: L = 16 15.1 s (2¹⁵) vs 8.8 s (2¹²). An accelerator runs all lanes in one vmap.
_BLOCK_ELEMENTS = 1 << 12
_BLOCK_MIN = 16


def _blocked(fn, n, *args):
    """vmap(fn) over the leading axis of args; on CPU in sequential blocks of lanes
    (``_BLOCK_ELEMENTS`` numbers of an n × n array per block; a power of two ≥ _BLOCK_MIN), padded
    with copies of lane 0."""
    M = args[0].shape[0]
    b = _BLOCK_MIN
    while 2 * b * n * n <= _BLOCK_ELEMENTS and 2 * b <= M:
        b *= 2
    if b >= M or jax.default_backend() != "cpu":
        return jax.vmap(fn)(*args)
    pad = -M % b
    blocks = [jnp.concatenate([x, jnp.repeat(x[:1], pad, 0)]) if pad else x for x in args]
    blocks = [x.reshape((-1, b) + x.shape[1:]) for x in blocks]
    out = jax.lax.map(lambda t: jax.vmap(fn)(*t), tuple(blocks))
    return jax.tree.map(lambda x: x.reshape((-1,) + x.shape[2:])[:M], out)


@functools.partial(jax.jit, static_argnames=("sigma", "n_steps"))
def batch_newton(chi0, wk, wv, y, Vk, Vv, sigma, n_steps):
    """Newton from each of the (M, L) starts chi0 with its own centre and label (lanes)."""
    return _blocked(lambda c, a, b, e: _newton(c, a, b, e, Vk, Vv, sigma, n_steps), chi0.shape[1], chi0, wk, wv, y)


@functools.partial(jax.jit, static_argnames=("sigma",))
def batch_finish(ends: Ends, obs: Obs, V, beta, sigma):
    """:func:`_finish` of every sample (leading axis of ``ends`` and ``obs``), soft-min at β = ``beta``."""
    # the 2L × 2L Hessians of the full problem, in cache-sized blocks of samples
    return _blocked(
        lambda c, v, g, a, e, f: _finish(Ends(c, v, g), Obs(a, e, f), V, sigma, beta),
        2 * obs.wk.shape[1],
        *ends,
        *obs,
    )


# Newton steps run on every (sample, start) lane; lanes not converged by then (|∇ψ| above
# _CONT_TOL (1 + 1/V_k)) get the remaining n_steps − first steps in small fixed-size batches.
# Measured (L = 3, softmax and linear): > 99 % of lanes converge within 8 steps, so this costs
# ~1/3 of running every lane n_steps times; a lane stopped early is one Newton step from a point
# with |∇ψ| < 1e-10 (1 + 1/V_k), i.e. within ~1e-10 V_k of its end point. Within a phase a lane
# stops at that test too (:func:`_newton`) and a block of lanes once all of its lanes did; the
# lanes go start by start (prox._prox_chunk), so that the warm starts' blocks end after a few
# steps (one core, N = 4096, L = 3: softmax full / cheap pass 0.35 / 0.15 → 0.22 / 0.07 s, linear
# 0.27 / 0.09 → 0.17 / 0.05 s; a replica sweep, spiked ν = 1: softmax 61 → 49 s, linear 84 → 61 s,
# the fixed points the same to 1e-8 relative, the same iterations and folds). Above L = 6 a step
# costs more than the host's gather of the unconverged lanes, and the first phase is
# _FIRST_STEPS_LONG steps (L = 16, one solve of 11–12 passes at α = 10 on one core: linear
# 35.7 → 26.8 CPU s, softmax 57.0 → 37.5 s, the fixed point the same to 12 digits; at L = 3
# 4 steps are slower: 24.5 → 26.3 s).
_FIRST_STEPS, _FIRST_STEPS_LONG, _CONT_TOL, _CONT_BATCH = 8, 4, 1e-10, 512


#: lanes per first-phase Newton call on CPU: a pass has (samples × starts) lanes, and the starts
#: per sample differ between full, cheap and warm-started passes (7, 4, 10 at L = 3); calls of one
#: size compile one program instead of one per count (~2 s of XLA compilation each, per σ and
#: process without a warm persistent cache). Lanes are independent: the same numbers either way.
#: Not smaller: in calls of 512 lanes (the continuation's size, so one program for both phases) a
#: pass took 10–17 % longer (linear full pass 0.259 vs 0.223 s, softmax cheap pass 0.145 vs
#: 0.124 s; N = 4096, one core): the per-call cost outweighs one program's compilation.
#: Fewer lanes (small channel samples: 512 × 1, 4, 5 starts) are padded up to one call too at
#: L ≤ 6, where a program takes ~4 s to compile and a 4096-lane call ~0.03 s to run.
_LANE_CALL = 1 << 12


def _newton_calls(chi0, wk, wv, y, Vk, Vv, sigma, n_steps):
    """:func:`batch_newton` on numpy lanes; on CPU in calls of ``_LANE_CALL`` lanes (the last
    padded with copies of lane 0; fewer lanes in one call of their own above L = 6). Returns numpy
    chis (M, L), vals, gns (M,)."""
    M = chi0.shape[0]
    if jax.default_backend() != "cpu" or (M <= _LANE_CALL and chi0.shape[1] > UNROLL_MAX):
        return tuple(np.array(a) for a in batch_newton(chi0, wk, wv, y, Vk, Vv, sigma, n_steps))
    pad = -M % _LANE_CALL
    lanes = [np.concatenate([a, np.repeat(a[:1], pad, 0)]) if pad else a for a in (chi0, wk, wv, y)]
    calls = [
        batch_newton(*(a[i : i + _LANE_CALL] for a in lanes), Vk, Vv, sigma, n_steps)
        for i in range(0, M + pad, _LANE_CALL)
    ]
    return tuple(np.concatenate([np.asarray(c[k]) for c in calls])[:M] for k in range(3))


def run_lanes(chi0, wk, wv, y, Vk, Vv, sigma, n_steps):
    """Newton on (M, L) lanes, two-phase (see above); returns numpy chis (M, L), vals, gns (M,)."""
    n1 = min(_FIRST_STEPS if chi0.shape[1] <= UNROLL_MAX else _FIRST_STEPS_LONG, n_steps)
    chis, vals, gns = _newton_calls(chi0, wk, wv, y, Vk, Vv, sigma, n1)
    rest = np.flatnonzero(~(gns < _CONT_TOL * (1 + 1 / Vk)))
    if n_steps > n1 and rest.size:
        for a in range(0, rest.size, _CONT_BATCH):
            idx = rest[a : a + _CONT_BATCH]
            pad = np.concatenate([idx, np.repeat(idx[:1], _CONT_BATCH - idx.size)])
            sel = lambda arr, pad=pad: jnp.asarray(np.asarray(arr)[pad])
            c, v, g = batch_newton(sel(chis), sel(wk), sel(wv), sel(y), Vk, Vv, sigma, n_steps - n1)
            chis[idx], vals[idx], gns[idx] = (np.asarray(t)[: idx.size] for t in (c, v, g))
    return chis, vals, gns


#: samples per jitted call: on CPU 4096 bounds the memory of the (samples × starts) lanes at no
#: cost in speed; an accelerator wants every sample in one launch (a chunk is a few MB there).
#: Both shrink (by powers of two) where the lanes' L × L Hessians would exceed _LANE_ELEMENTS


@functools.cache
def multistart_count(sigma: str, L: int, directions: int) -> int:
    """Starts per sample of :func:`_starts` (the centre and the displaced starts kept), read off
    its traced output shape."""
    x, s = jax.ShapeDtypeStruct((L,), jnp.float64), jax.ShapeDtypeStruct((), jnp.float64)
    return jax.eval_shape(lambda a, b, c, d, e: _starts(a, b, c, d, e, sigma, directions), x, x, s, s, s).shape[0]
