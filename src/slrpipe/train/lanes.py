"""L-BFGS on several starts of one training set at once, every start a lane sharing each pass over X
(docs/model.md §5; the objective J is ``slrpipe.train.erm.objective``'s).

ERM's evaluation of J and ∇J streams X (n, L, D) and its transposed copy once each, whatever the
number of parameter vectors they multiply: S starts as one (D, 2S) product cost far less than S
products of (D, 2) (``benchmarks/bench_erm_starts.py``). ``optax.lbfgs`` cannot be batched over
starts: under ``jax.vmap`` every ``lax.cond`` of its zoom line search becomes a select that runs
both branches (two evaluations per step) on copies of X, one per lane. Here the L-BFGS direction is
still optax's (``optax.scale_by_lbfgs``, vmapped: it never touches X), and the line search is this
module's: a strong-Wolfe bracketing and cubic-interpolation search (Nocedal & Wright, *Numerical
Optimization*, 2nd ed., Alg. 3.5–3.6) written lane-wise with ``jnp.where``, so that each of its
steps is one evaluation for all lanes.

Each lane is an independent L-BFGS run: its own direction, step size, iteration count and stop
(|∇J|₂ < tol); a lane that stops is frozen while the others go on (its evaluations continue,
unused, until the last lane stops: the block's cost is the slowest lane's).
"""

from __future__ import annotations

import logging
import time
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from slrpipe.models.attention import attention_from_fields
from slrpipe.train.erm import ERMResult, _DeviceData, _project, _Recorder, checked_options, stop_reason
from slrpipe.train.options import SolverOptions

log = logging.getLogger(__name__)

#: sufficient decrease (Armijo) and strong curvature constants, those of optax's zoom line search
C1, C2 = 1e-4, 0.9
#: the relative rise of J the approximate decrease condition allows (optax's default)
APPROX_DEC_RTOL = 1e-6
#: trial steps per line search; a search that ends without a Wolfe step takes its best Armijo step
#: (or none: the lane then stalls, as ``slrpipe.train.erm`` reports it)
MAX_LINESEARCH_STEPS = 20


def lane_objectives(P, X, mask, y, XT, sigma: str, lam):
    """J of every lane: (S,) for P = {"k": (S, D), "v": (S, D)[, "c": (S,)]}.

    One product X @ W with W (D, 2S) for all lanes; its gradient goes through
    ``slrpipe.train.erm._project`` (XT @ δ on the stored transpose when XT is given).
    """
    n, L, D = X.shape
    S = P["k"].shape[0]
    W = jnp.stack([P["k"], P["v"]], axis=-1).astype(X.dtype) / jnp.sqrt(jnp.asarray(D, X.dtype))  # (S, D, 2)
    W = jnp.transpose(W, (1, 0, 2)).reshape(D, 2 * S)
    proj = (_project(W, X, XT) if XT is not None else X @ W).reshape(n, L, S, 2)
    chi = jnp.where(mask[..., None], proj[..., 0], 0.0)
    z = jnp.where(mask[..., None], proj[..., 1], 0.0)
    f = jax.vmap(lambda p, c, zz: attention_from_fields(p, c, zz, mask, sigma), in_axes=(0, 2, 2))(P, chi, z)
    r = y[None, :] - f  # (S, n)
    pen = jnp.sum(P["k"] ** 2, axis=1) + jnp.sum(P["v"] ** 2, axis=1)
    return (0.5 * jnp.sum(r * r, axis=1) + 0.5 * lam * pen) / y.shape[0]


def _values_and_grads(P, data, sigma, lam):
    """(J (S,), ∇J per lane): the gradient of Σ_lanes J is each lane's own, the lanes being independent."""
    X, mask, y, XT = data

    def total(Q):
        values = lane_objectives(Q, X, mask, y, XT, sigma, lam)
        return jnp.sum(values), values

    (_, values), grads = jax.value_and_grad(total, has_aux=True)(P)
    return values, grads


def _lanes(x, like):
    """x (S,) shaped to broadcast against the lane-stacked array ``like`` (S, …)."""
    return x.reshape(x.shape + (1,) * (like.ndim - 1))


def _along(P, t, d):
    """P + t d per lane (t (S,))."""
    return jax.tree.map(lambda p, u: p + _lanes(t, p) * u, P, d)


def _lane_dot(a, b):
    """⟨a, b⟩ per lane for two lane-stacked pytrees: (S,)."""
    return sum(jnp.sum((x * y).reshape(x.shape[0], -1), axis=1) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def _where(mask, a, b):
    """Lane-wise select between two lane-stacked pytrees (mask (S,))."""
    return jax.tree.map(lambda x, y: jnp.where(_lanes(mask, x), x, y), a, b)


def _cubic_step(a, fa, da, b, fb, db):
    """The minimiser of the cubic through (a, fa, slope da) and (b, fb, db), kept 10 % of |b − a|
    inside the interval; the midpoint where the cubic has none there (Nocedal & Wright eq. 3.59)."""
    d1 = da + db - 3.0 * (fa - fb) / (a - b)
    rad = d1 * d1 - da * db
    d2 = jnp.sign(b - a) * jnp.sqrt(jnp.maximum(rad, 0.0))
    t = b - (b - a) * (db + d2 - d1) / (db - da + 2.0 * d2)
    lo, hi = jnp.minimum(a, b), jnp.maximum(a, b)
    ok = jnp.isfinite(t) & (rad >= 0) & (t > lo + 0.1 * (hi - lo)) & (t < hi - 0.1 * (hi - lo))
    return jnp.where(ok, t, 0.5 * (a + b))


def _decrease(ft, st, t, f0, s0):
    """Sufficient decrease at step t: Armijo's, or near a minimum, where J's differences reach its
    rounding, the approximate one of Hager & Zhang (2005, eq. 23: a slope ≤ (2 C1 − 1) s0 and J ≤
    J(0) + ``APPROX_DEC_RTOL`` |J(0)|), as optax's zoom line search takes it."""
    armijo = ft <= f0 + C1 * t * s0
    approx = (st <= (2.0 * C1 - 1.0) * s0) & (ft <= f0 + APPROX_DEC_RTOL * jnp.abs(f0))
    return jnp.isfinite(ft) & (armijo | approx)


class LaneState(NamedTuple):
    """Every lane's L-BFGS run (leading axis S): the accepted point P with its J and ∇J, optax's
    ``scale_by_lbfgs`` state (vmapped), the iteration count (int32), the direction d of the
    current line search with the slope s0 = ⟨∇J, d⟩ at P, and that search's state: the trial step
    t, the bracket end ``lo`` with the lowest J satisfying Armijo (0: P itself) with its J, slope
    along d and ∇J, the other end ``hi`` (inf: not bracketed yet) with its J and slope, and the
    trials made."""

    P: dict
    value: jax.Array
    grad: dict
    lbfgs: optax.OptState
    count: jax.Array
    d: dict
    s0: jax.Array
    t: jax.Array
    lo: jax.Array
    f_lo: jax.Array
    s_lo: jax.Array
    g_lo: dict
    hi: jax.Array
    f_hi: jax.Array
    s_hi: jax.Array
    trials: jax.Array


def _new_search(s: LaneState, opt) -> LaneState:
    """The next L-BFGS direction at the accepted point (memory updated with the last step) and a
    fresh line search along it: first trial t = 1 (a non-descent direction: −∇J instead)."""
    u, lbfgs = jax.vmap(opt.update)(s.grad, s.lbfgs, s.P)
    d = jax.tree.map(jnp.negative, u)
    d = _where(_lane_dot(s.grad, d) < 0, d, jax.tree.map(jnp.negative, s.grad))
    s0 = _lane_dot(s.grad, d)
    one, zero, inf = jnp.ones_like(s0), jnp.zeros_like(s0), jnp.full_like(s0, jnp.inf)
    return s._replace(
        lbfgs=lbfgs,
        d=d,
        s0=s0,
        t=one,
        lo=zero,
        f_lo=s.value,
        s_lo=s0,
        g_lo=s.grad,
        hi=inf,
        f_hi=inf,
        s_hi=s0,
        trials=jnp.zeros_like(s.count),
    )


def _tick(s: LaneState, on, data, sigma, lam, opt) -> LaneState:
    """One evaluation of J and ∇J for all lanes, each at its own trial step, and the lanes where
    ``on`` moved on: the bracket updated (Nocedal & Wright Alg. 3.6), and where the search has
    ended (a strong-Wolfe step, or ``MAX_LINESEARCH_STEPS`` trials: its best Armijo step, or none)
    the step taken, the count advanced and the next search started."""
    ft, gt = _values_and_grads(_along(s.P, s.t, s.d), data, sigma, lam)
    st = _lane_dot(gt, s.d)
    decrease = _decrease(ft, st, s.t, s.value, s.s0)
    accept = decrease & (jnp.abs(st) <= -C2 * s.s0)
    shrink = ~accept & (~decrease | (ft >= s.f_lo))
    flip = ~shrink & ~accept & (st * (s.hi - s.lo) >= 0)  # the minimum lies back towards lo
    new_hi, new_lo = shrink | flip, ~shrink
    hi = jnp.where(new_hi, jnp.where(shrink, s.t, s.lo), s.hi)
    f_hi = jnp.where(new_hi, jnp.where(shrink, ft, s.f_lo), s.f_hi)
    s_hi = jnp.where(new_hi, jnp.where(shrink, st, s.s_lo), s.s_hi)
    lo, f_lo, s_lo = (jnp.where(new_lo, a, b) for a, b in ((s.t, s.lo), (ft, s.f_lo), (st, s.s_lo)))
    g_lo = _where(new_lo, gt, s.g_lo)
    bracketed = jnp.isfinite(hi)
    t = jnp.where(bracketed, _cubic_step(lo, f_lo, s_lo, jnp.where(bracketed, hi, 0.0), f_hi, s_hi), 2.0 * lo)
    trials = s.trials + 1
    searched = s._replace(t=t, lo=lo, f_lo=f_lo, s_lo=s_lo, g_lo=g_lo, hi=hi, f_hi=f_hi, s_hi=s_hi, trials=trials)
    ended = accept | (trials >= MAX_LINESEARCH_STEPS)
    moved = searched._replace(P=_along(s.P, lo, s.d), value=f_lo, grad=g_lo, count=s.count + 1)
    new = _where(ended, _new_search(moved, opt), searched)
    return _where(on, new, s)


@partial(jax.jit, static_argnames=("sigma", "memory_size"))
def lanes_init(P, data, lam, sigma, memory_size) -> LaneState:
    """The ``LaneState`` at lane-stacked params P (count 0): J and ∇J evaluated there, the first
    search started along optax's first L-BFGS direction."""
    value, grad = _values_and_grads(P, data, sigma, lam)
    opt = optax.scale_by_lbfgs(memory_size=memory_size)
    lbfgs = jax.vmap(opt.init)(P)
    count = jnp.zeros(value.shape, jnp.int32)
    # the search fields are placeholders: _new_search sets every one of them
    search = dict.fromkeys(("s0", "t", "lo", "f_lo", "s_lo", "hi", "f_hi", "s_hi"), jnp.zeros_like(value))
    s = LaneState(P=P, value=value, grad=grad, lbfgs=lbfgs, count=count, d=grad, g_lo=grad, trials=count, **search)
    return _new_search(s, opt)


def lane_gnorm(grad):
    """|∇J|₂ per lane: (S,)."""
    return jnp.sqrt(_lane_dot(grad, grad))


@partial(jax.jit, static_argnames=("sigma", "memory_size"))
def lanes_block(state: LaneState, data, lam, live, end, tol, sigma, memory_size) -> LaneState:
    """Ticks (``_tick``) until every lane where ``live`` (bool (S,)) has reached the count ``end``
    or |∇J|₂ < ``tol``; the other lanes are left as they are. Each lane's line search goes at its
    own pace: a tick costs one evaluation for all lanes, whatever each lane's step in its search."""
    opt = optax.scale_by_lbfgs(memory_size=memory_size)

    def active(s):
        return live & (s.count < end) & (lane_gnorm(s.grad) >= tol)

    return jax.lax.while_loop(lambda s: jnp.any(active(s)), lambda s: _tick(s, active(s), data, sigma, lam, opt), state)


def _lane(tree, i):
    return jax.tree.map(lambda a: np.asarray(a[i]), tree)


def minimize_lanes(
    params0: list[dict],
    data: _DeviceData,
    sigma: str,
    lam: float,
    options: SolverOptions | None = None,
    *,
    teacher=None,
) -> list[ERMResult]:
    """Minimise J from each of ``params0`` at once, the starts as lanes (module docstring).

    Args:
        params0: S ≥ 1 starts {"k": (D,), "v": (D,)[, "c": ()]} of one dtype (the run's).
        data: the training set on the device (``slrpipe.train.erm.place_data`` in that dtype).
        sigma, lam: score function and ridge λ ≥ 0 (on 𝓛), as ``slrpipe.train.erm.minimize``.
        options: ``SolverOptions`` (optimizer "lbfgs"): max_iter, tol, memory_size, record_every,
            log_every are each lane's.
        teacher: optional (k*, v*) to record overlaps along each trajectory.

    Returns:
        One ``ERMResult`` per start, in order, with stop reasons as ``minimize``'s ("tol",
        "max_iter", "stalled": a block of ``record_every`` iterations left J unchanged,
        "nonfinite"); ``wall_time``: the wall time of the blocks while the lane ran (shared with
        the other lanes); ``lanes``: S.

    Raises:
        ValueError: no start, unknown sigma, λ < 0, another optimizer than lbfgs, or ``data`` of
            another dtype than the starts'.
    """
    if not params0:
        raise ValueError("params0: at least one start expected")
    dtype = jnp.asarray(params0[0]["k"]).dtype
    o = checked_options(sigma, lam, options, int(data.y.shape[0]), dtype)
    if o.optimizer != "lbfgs":
        raise ValueError(f"optimizer: lanes run lbfgs only, got {o.optimizer!r}")
    if data.X.dtype != dtype:
        raise ValueError(f"data: placed as {data.X.dtype}, the starts are {dtype}")
    S = len(params0)
    P = jax.tree.map(lambda *a: jnp.stack([jnp.asarray(x, dtype) for x in a]), *params0)
    lam_j, tol = jnp.asarray(lam, dtype), jnp.asarray(o.tol, dtype)
    recs = [_Recorder(teacher, o.optimizer, o.log_every, o.record_every) for _ in range(S)]
    t0 = time.perf_counter()
    state = lanes_init(P, data, lam_j, sigma, o.memory_size)
    value, gnorm = np.asarray(state.value, np.float64), np.asarray(lane_gnorm(state.grad), np.float64)
    for i in range(S):
        recs[i].add(0, value[i], gnorm[i], _lane(state.P, i))
    reason = ["tol" if g < o.tol else "max_iter" for g in gnorm]
    live = gnorm >= o.tol
    wall = np.full(S, time.perf_counter() - t0)
    step, last = 0, value
    while live.any() and step < o.max_iter:
        nsteps = min(o.record_every, o.max_iter - step)
        tb = time.perf_counter()
        state = lanes_block(state, data, lam_j, jnp.asarray(live), step + nsteps, tol, sigma, o.memory_size)
        count = np.asarray(state.count)
        value, gnorm = np.asarray(state.value, np.float64), np.asarray(lane_gnorm(state.grad), np.float64)
        wall[live] += time.perf_counter() - tb
        for i in np.flatnonzero(live):
            stalled = count[i] == step + nsteps and value[i] == last[i]
            r = stop_reason(value[i], gnorm[i], o.tol, stalled)
            recs[i].add(int(count[i]), value[i], gnorm[i], _lane(state.P, i), converged=r == "tol")
            if r == "nonfinite":
                log.warning("lane %d: non-finite loss or gradient at step %d; stopping", i, count[i])
            reason[i] = r
            live[i] = r == "max_iter"
        step, last = step + nsteps, value
    count = np.asarray(state.count)
    return [
        ERMResult(
            _lane(state.P, i),
            float(value[i]),
            float(gnorm[i]),
            int(count[i]),
            reason[i] == "tol",
            reason[i],
            float(wall[i]),
            recs[i].arrays(),
            S,
        )
        for i in range(S)
    ]
