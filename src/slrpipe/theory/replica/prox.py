"""Per-sample proximal point of the SLR square loss over the 2L local fields, and its Jacobian.

For each sample, given the Gaussian centres ω = (ω_χ, ω_z) ∈ R^{L×2}, the label y and the
diagonal V = diag(V_k, V_v), the proximal point minimises
    φ(χ, z) = |χ − ω_χ|²/(2V_k) + |z − ω_z|²/(2V_v) + ½ (y − σ(χ)·z)².
For fixed χ, φ is quadratic in z and z is eliminated exactly (docs/theory.md §5):
    z = ω_z + V_v s r / (1 + V_v|s|²),  s = σ(χ),  r = y − s·ω_z,
    ψ(χ) = |χ − ω_χ|²/(2V_k) + r² / (2(1 + V_v|s|²)),
an L-dimensional non-convex problem. Its global minimum is found by a batched, monotone
(backtracking) saddle-free Newton method started from several points per sample: the centre ω_χ,
an optional warm start, and displacements of radius R = √(2 V_k ψ(ω_χ)) (no minimiser lies
farther from ω_χ) towards each token (σ normalised) or along ±e_ℓ and ±ω_z (σ linear); the
lowest end point wins. The Jacobian of the prox in (ω, y) comes from implicit differentiation of
∇φ = 0: ∂h/∂ω = H⁻¹ V⁻¹, ∂h/∂y = H⁻¹ ∇_h f, H = ∇²φ (2L × 2L).

Everything runs in float64 JAX (``jax.enable_x64``), jit-compiled and vmapped over samples.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from slrpipe.scores import score

PROX_SIGMAS = ("softmax", "linear", "softplus_norm")
_NORMALISED = ("softmax", "softplus_norm")
_STEPS = jnp.array([1.0, 0.5, 0.25, 0.125, 1 / 16, 1 / 64, 1 / 256, 0.0])


def check_sigma(sigma: str) -> None:
    """Raise ValueError unless σ is supported by the replica solver (erf needs a learned offset c)."""
    if sigma not in PROX_SIGMAS:
        raise ValueError(f"sigma: replica theory supports {', '.join(PROX_SIGMAS)}, got {sigma!r}")


def _psi(chi, wk, wv, y, Vk, Vv, sigma):
    s = score(sigma, chi, xp=jnp)
    r = y - s @ wv
    return jnp.sum((chi - wk) ** 2) / (2 * Vk) + r**2 / (2 * (1 + Vv * (s @ s)))


def _phi(h, wk, wv, y, Vk, Vv, sigma):
    L = wk.shape[0]
    chi, z = h[:L], h[L:]
    s = score(sigma, chi, xp=jnp)
    return (jnp.sum((chi - wk) ** 2) / (2 * Vk) + jnp.sum((z - wv) ** 2) / (2 * Vv)
            + 0.5 * (y - s @ z) ** 2)


def _starts(wk, wv, y, Vk, Vv, sigma):
    L = wk.shape[0]
    R = jnp.sqrt(2 * Vk * _psi(wk, wk, wv, y, Vk, Vv, sigma))
    eye = jnp.eye(L)
    if sigma in _NORMALISED:
        u = eye - 1.0 / L
        u = u / jnp.maximum(jnp.linalg.norm(u, axis=1, keepdims=True), 1e-12)
        dirs = jnp.concatenate([0.5 * u, u]) if L > 1 else u
    else:
        uz = wv / jnp.maximum(jnp.linalg.norm(wv), 1e-12)
        dirs = jnp.concatenate([0.5 * eye, -0.5 * eye, 0.5 * uz[None], -0.5 * uz[None],
                                uz[None], -uz[None]])
    return jnp.concatenate([wk[None], wk[None] + R * dirs])


def _chol_solve(A, b, tiny):
    """Solve A x = b by an unrolled Cholesky factorisation; ok=False if a pivot is ≤ tiny."""
    n = A.shape[0]
    Lm = [[None] * n for _ in range(n)]
    ok = True
    for j in range(n):
        d = A[j, j] - sum(Lm[j][k] ** 2 for k in range(j))
        ok = ok & (d > tiny)
        d = jnp.sqrt(jnp.maximum(d, 1e-300))
        Lm[j][j] = d
        for i in range(j + 1, n):
            Lm[i][j] = (A[i, j] - sum(Lm[i][k] * Lm[j][k] for k in range(j))) / d
    x = [None] * n
    for i in range(n):
        x[i] = (b[i] - sum(Lm[i][k] * x[k] for k in range(i))) / Lm[i][i]
    for i in reversed(range(n)):
        x[i] = (x[i] - sum(Lm[k][i] * x[k] for k in range(i + 1, n))) / Lm[i][i]
    return jnp.stack(x), ok


def _newton(chi0, wk, wv, y, Vk, Vv, sigma, n_steps):
    f = functools.partial(_psi, wk=wk, wv=wv, y=y, Vk=Vk, Vv=Vv, sigma=sigma)
    g_fn, h_fn = jax.grad(f), jax.hessian(f)
    fv = jax.vmap(f)

    def body(_, chi):
        g, H = g_fn(chi), h_fn(chi)
        # Newton step where H is positive definite, else a Levenberg-Marquardt step with the
        # Gershgorin shift (H + μI positive definite): always a descent direction. Unrolled
        # Cholesky: batched LAPACK calls on tiny matrices dominate the run time on CPU.
        p_n, ok = _chol_solve(H, g, 1e-6 / Vk)
        off = jnp.sum(jnp.abs(H), axis=1) - jnp.abs(jnp.diag(H))
        mu = jnp.maximum(0.0, jnp.max(off - jnp.diag(H))) + 1e-3 / Vk
        p_lm, _ = _chol_solve(H + mu * jnp.eye(H.shape[0]), g, 0.0)
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

    chi = jax.lax.fori_loop(0, n_steps, body, chi0)
    return chi, f(chi), jnp.linalg.norm(g_fn(chi))


def _one(wk, wv, y, warm, Vk, Vv, sigma, n_steps, use_warm, multistart=True):
    starts = _starts(wk, wv, y, Vk, Vv, sigma) if multistart else wk[None]
    if use_warm:
        starts = jnp.concatenate([starts, warm[None]])
    chis, vals, gns = jax.vmap(lambda c: _newton(c, wk, wv, y, Vk, Vv, sigma, n_steps))(starts)
    i = jnp.argmin(jnp.where(jnp.isfinite(vals), vals, jnp.inf))
    chi, gn = chis[i], gns[i]
    s = score(sigma, chi, xp=jnp)
    r = y - s @ wv
    den = 1 + Vv * (s @ s)
    z = wv + Vv * s * r / den
    # implicit differentiation of ∇φ = 0 on the full 2L problem
    h = jnp.concatenate([chi, z])
    H = jax.hessian(_phi)(h, wk, wv, y, Vk, Vv, sigma)
    L = wk.shape[0]
    grad_f = jnp.concatenate([jax.jacobian(lambda c: score(sigma, c, xp=jnp) @ z)(chi), s])
    # unrolled Cholesky solves instead of LAPACK: batched LAPACK calls on tiny matrices were
    # seen to hang jax 0.10.2 on CPU. H is positive definite at a strict minimum (pd flag).
    eye = jnp.eye(2 * L)
    cols = [_chol_solve(H, eye[j], 0.0) for j in range(2 * L)]
    hinv_diag = jnp.stack([c[0][j] for j, c in enumerate(cols)])
    pd = cols[0][1]
    dh_dy, _ = _chol_solve(H, grad_f, 0.0)
    return dict(chi=chi, z=z, psi=vals[i], grad_norm=gn, resid=r / den,
                hinv_diag=hinv_diag, dz_dy=dh_dy[L:], hess_pd=pd,
                n_best=jnp.sum(vals < vals[i] + 1e-9 * (1 + jnp.abs(vals[i]))),
                n_starts=jnp.full((), starts.shape[0]))


@functools.partial(jax.jit, static_argnames=("sigma", "n_steps", "use_warm", "multistart"))
def _batched(wk, wv, y, warm, Vk, Vv, sigma, n_steps, use_warm, multistart):
    return jax.vmap(lambda a, b, c, d: _one(a, b, c, d, Vk, Vv, sigma, n_steps, use_warm, multistart))(
        wk, wv, y, warm)


def prox(sigma, omega_k, omega_v, y, V_k, V_v, *, warm=None, n_steps=25, chunk=4096, multistart=True):
    """Global proximal point of the per-sample SLR loss and its implicit Jacobian, batched.

    Args:
        sigma: score function name (``PROX_SIGMAS``).
        omega_k, omega_v: (N, L) centres ω_χ, ω_z.  y: (N,) labels.
        V_k, V_v: positive scalars (the diagonal of V, docs/theory.md §3).
        warm: optional (N, L) extra Newton start for χ (e.g. the previous iteration's prox).
        n_steps: Newton steps per start.  chunk: samples per jitted call (bounds memory).
        multistart: False = only the centre and the warm start (cheap refinement between full
        global searches; the solver never declares convergence on such a pass).
    Returns:
        dict of numpy arrays: chi, z (N, L) prox point; psi (N,) minimal value = Moreau envelope;
        grad_norm (N,) |∇ψ| at the end point (convergence check); resid (N,) y − f(prox);
        hinv_diag (N, 2L) diagonal of H⁻¹ (χ block then z block); dz_dy (N, L) = ∂z/∂y;
        hess_pd (N,) bool, H positive definite (a strict local minimum);
        n_best (N,) how many starts reached the best value, n_starts (N,) how many were run.
    Raises:
        ValueError: unsupported σ, non-positive V, or mismatched shapes.
    """
    check_sigma(sigma)
    if not (V_k > 0 and V_v > 0):
        raise ValueError(f"V_k, V_v: must be > 0, got {V_k}, {V_v}")
    omega_k, omega_v, y = np.asarray(omega_k), np.asarray(omega_v), np.asarray(y)
    if omega_k.ndim != 2 or omega_k.shape != omega_v.shape or y.shape != omega_k.shape[:1]:
        raise ValueError(f"omega_k, omega_v, y: need shapes (N, L), (N, L), (N,); got "
                         f"{omega_k.shape}, {omega_v.shape}, {y.shape}")
    use_warm = warm is not None
    warm = np.asarray(warm) if use_warm else omega_k
    N = len(y)
    chunk = min(int(chunk), N)
    n_pad = -N % chunk
    # pad to whole chunks: one compiled shape per call (repeated compiles of new shapes were seen
    # to hang jax 0.10.2 on CPU); padded rows are copies of row 0 and are dropped
    pad = lambda a: np.concatenate([a, np.repeat(a[:1], n_pad, 0)]) if n_pad else a  # noqa: E731
    omega_k, omega_v, y, warm = pad(omega_k), pad(omega_v), pad(y), pad(warm)
    out = []
    with jax.enable_x64(True):
        for a in range(0, len(y), chunk):
            sl = slice(a, a + chunk)
            r = _batched(jnp.asarray(omega_k[sl]), jnp.asarray(omega_v[sl]), jnp.asarray(y[sl]),
                         jnp.asarray(warm[sl]), float(V_k), float(V_v), sigma, int(n_steps), use_warm,
                         bool(multistart))
            out.append({k: np.asarray(v) for k, v in r.items()})
    return {k: np.concatenate([o[k] for o in out])[:N] for k in out[0]}
