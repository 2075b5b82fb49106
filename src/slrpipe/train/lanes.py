"""L-BFGS on every model of one training set at once, each model a lane sharing each pass over X
(docs/model.md §5; the objective J is ``slrpipe.train.erm.objective``'s).

ERM's evaluation of J and ∇J streams X (n, L, D) and its transposed copy once each, whatever the
number of parameter vectors they multiply: S models as one (D, 2S) product cost far less than S
products of (D, 2) (``benchmarks/bench_erm.py starts``, ``share``). The lanes of one solve may differ in their
start, their σ (consecutive lanes of one σ: a static segment, whose attention is applied to its
columns of the shared product) and their ridge λ (an (S,) array). ``optax.lbfgs`` cannot be
batched: under ``jax.vmap`` every ``lax.cond`` of its zoom line search becomes a select that runs
both branches (two evaluations per step) on copies of X, one per lane. Here the L-BFGS direction is
still optax's (``optax.scale_by_lbfgs``, vmapped: it never touches X), and the line search is this
module's: a strong-Wolfe bracketing and cubic-interpolation search (Nocedal & Wright, *Numerical
Optimization*, 2nd ed., Alg. 3.5–3.6) written lane-wise with ``jnp.where``, so that each of its
steps is one evaluation for all lanes.

Each lane is an independent L-BFGS run: its own direction, step size, iteration count and stop
(|∇J|₂ < tol); a lane that stops is frozen while the others go on (its evaluations continue,
unused, until the last lane stops: a block's cost is the slowest lane's). The whole solve is one
device program (``lanes_solve``): the stop tests and the trajectory stay on the device, and the
host receives only (S,)-sized progress reports (``jax.debug.callback``) until the end.
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
from slrpipe.train.erm import ERMResult, _DeviceData, _project, checked_options
from slrpipe.train.metrics import OVERLAPS
from slrpipe.train.options import SolverOptions

log = logging.getLogger(__name__)

#: sufficient decrease (Armijo) and strong curvature constants, those of optax's zoom line search
C1, C2 = 1e-4, 0.9
#: the relative rise of J the approximate decrease condition allows (optax's default)
APPROX_DEC_RTOL = 1e-6
#: trial steps per line search; a search that ends without a Wolfe step takes its best Armijo step
#: (or none: the lane then stalls, as ``slrpipe.train.erm`` reports it)
MAX_LINESEARCH_STEPS = 20


def lane_objectives(P, X, mask, y, XT, segments, lam):
    """J of every lane: (S,) for P = {"k": (S, D), "v": (S, D)[, "c": (S,)]}.

    One product X @ W with W (D, 2S) for all lanes; its gradient goes through
    ``slrpipe.train.erm._project`` (XT @ δ on the stored transpose when XT is given). After it, each
    lane's own attention and penalty: ``segments`` ((σ, count), …) gives the σ of consecutive lanes
    (a str: one σ for every lane), ``lam`` the ridge λ, a scalar or (S,).
    """
    n, L, D = X.shape
    S = P["k"].shape[0]
    W = jnp.stack([P["k"], P["v"]], axis=-1).astype(X.dtype) / jnp.sqrt(jnp.asarray(D, X.dtype))  # (S, D, 2)
    W = jnp.transpose(W, (1, 0, 2)).reshape(D, 2 * S)
    proj = (_project(W, X, XT) if XT is not None else X @ W).reshape(n, L, S, 2)
    chi = jnp.where(mask[..., None], proj[..., 0], 0.0)
    z = jnp.where(mask[..., None], proj[..., 1], 0.0)
    parts, a = [], 0
    for sigma, count in ((segments, S),) if isinstance(segments, str) else segments:
        seg = jax.tree.map(lambda x, a=a, count=count: x[a : a + count], P)
        fields = (chi[..., a : a + count], z[..., a : a + count])
        parts.append(
            jax.vmap(lambda p, c, zz, s=sigma: attention_from_fields(p, c, zz, mask, s), in_axes=(0, 2, 2))(
                seg, *fields
            )
        )
        a += count
    if a != S:
        raise ValueError(f"segments: {a} lanes, P has {S}")
    r = y[None, :] - jnp.concatenate(parts, axis=0)  # (S, n)
    pen = jnp.sum(P["k"] ** 2, axis=1) + jnp.sum(P["v"] ** 2, axis=1)
    return (0.5 * jnp.sum(r * r, axis=1) + 0.5 * lam * pen) / y.shape[0]


def _values_and_grads(P, data, segments, lam):
    """(J (S,), ∇J per lane): the gradient of Σ_lanes J is each lane's own, the lanes being independent."""
    X, mask, y, XT = data

    def total(Q):
        values = lane_objectives(Q, X, mask, y, XT, segments, lam)
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


def _tick(s: LaneState, on, data, segments, lam, opt) -> LaneState:
    """One evaluation of J and ∇J for all lanes, each at its own trial step, and the lanes where
    ``on`` moved on: the bracket updated (Nocedal & Wright Alg. 3.6), and where the search has
    ended (a strong-Wolfe step, or ``MAX_LINESEARCH_STEPS`` trials: its best Armijo step, or none)
    the step taken, the count advanced and the next search started."""
    ft, gt = _values_and_grads(_along(s.P, s.t, s.d), data, segments, lam)
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


def _lanes_init(P, data, lam, segments, memory_size) -> LaneState:
    """The ``LaneState`` at lane-stacked params P (count 0): J and ∇J evaluated there, the first
    search started along optax's first L-BFGS direction."""
    value, grad = _values_and_grads(P, data, segments, lam)
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


def _lanes_block(state: LaneState, data, lam, live, end, tol, segments, memory_size, ticks):
    """Ticks (``_tick``) until every lane where ``live`` (bool (S,)) has reached the count ``end``
    or |∇J|₂ < ``tol``; the other lanes are left as they are. Each lane's line search goes at its
    own pace: a tick costs one evaluation for all lanes (one pass over X), whatever each lane's step
    in its search. Returns (state, ``ticks`` + the ticks made)."""
    opt = optax.scale_by_lbfgs(memory_size=memory_size)

    def active(s):
        return live & (s.count < end) & (lane_gnorm(s.grad) >= tol)

    return jax.lax.while_loop(
        lambda c: jnp.any(active(c[0])),
        lambda c: (_tick(c[0], active(c[0]), data, segments, lam, opt), c[1] + 1),
        (state, ticks),
    )


#: the stop reasons (``ERMResult.reason``) by their code in the solve
REASONS = ("max_iter", "tol", "stalled", "nonfinite")


def _lane_overlaps(P, teacher):
    """The overlaps of ``slrpipe.train.metrics.overlaps`` per lane, (S, 7) in the order of
    ``OVERLAPS``, in the lanes' dtype (the trajectory's; the result's final overlaps are the host's,
    in float64); (S, 0) without a teacher."""
    k, v = P["k"], P["v"]
    if teacher is None:
        return jnp.zeros((k.shape[0], 0), k.dtype)
    ks, vs = (jnp.asarray(a, k.dtype) for a in teacher)
    D = k.shape[1]
    cols = (k @ ks, jnp.sum(k * k, 1), v @ vs, jnp.sum(v * v, 1), k @ vs, v @ ks, jnp.sum(k * v, 1))
    return jnp.stack(cols, axis=1) / D


class _Trace(NamedTuple):
    """The trajectory of every lane on the device, one row per block of ``record_every``
    iterations (row 0: the start), (R, S[, 7]): the count (−1: the lane had stopped before that
    block), J, |∇J|₂ and the overlaps."""

    step: jax.Array
    loss: jax.Array
    gnorm: jax.Array
    overlaps: jax.Array

    def put(self, r, written, count, value, gnorm, ov):
        def row(buf, x):
            return buf.at[r].set(jnp.where(_lanes(written, x), x, buf[r]))

        return _Trace(row(self.step, count), row(self.loss, value), row(self.gnorm, gnorm), row(self.overlaps, ov))


#: the host's receivers of ``lanes_solve``'s progress reports, the running solve's last
#: (``_report``: one compiled program serves every solve of its shapes)
_RECEIVERS: list = []


def _report(*args) -> None:
    _RECEIVERS[-1](*args)


@partial(jax.jit, static_argnames=("segments", "memory_size", "max_iter", "record_every", "log_every"))
def lanes_solve(P, data, lam, tol, teacher, segments, memory_size, max_iter, record_every, log_every):
    """The whole L-BFGS solve of every lane as one device program (module docstring).

    Blocks of ``record_every`` iterations (every live lane reaches the block's end count or its
    tolerance), each followed on the device by the stop test of ``slrpipe.train.erm.stop_reason``
    (|∇J|₂ < tol; a full block that left J unchanged: stalled; non-finite J or |∇J|) and a row of
    the trajectory. The running solve's ``_Progress`` receives (counts, values, gnorms, overlaps,
    live, reasons) (``jax.debug.callback``, only (S,)-sized arguments) after a block where some lane's
    count crossed a multiple of ``log_every``, some lane stopped, or the budget ended: nothing else
    leaves the device until the end.

    Returns:
        (final ``LaneState``, reason codes (S,) int (``REASONS``), ``_Trace``, the evaluations of J
        and ∇J made, each one pass over X for all lanes (int32; the start's included)).
    """
    dtype = P["k"].dtype
    state = _lanes_init(P, data, lam, segments, memory_size)
    S = state.value.shape[0]
    R = 1 + -(-max_iter // record_every)
    gnorm = lane_gnorm(state.grad)
    n_ov = 0 if teacher is None else len(OVERLAPS)
    trace = _Trace(
        jnp.full((R, S), -1, jnp.int32),
        jnp.full((R, S), jnp.nan, dtype),
        jnp.full((R, S), jnp.nan, dtype),
        jnp.full((R, S, n_ov), jnp.nan, dtype),
    )
    every = jnp.ones(S, bool)
    trace = trace.put(0, every, state.count, state.value, gnorm, _lane_overlaps(state.P, teacher))
    reason = jnp.where(gnorm < tol, REASONS.index("tol"), REASONS.index("max_iter"))
    live = gnorm >= tol

    def cond(c):
        _, live, _, step, _, _, _, _ = c
        return jnp.any(live) & (step < max_iter)

    def body(c):
        s, live, reason, step, last, trace, r, ticks = c
        end = jnp.minimum(step + record_every, max_iter)
        s, ticks = _lanes_block(s, data, lam, live, end, tol, segments, memory_size, ticks)
        gnorm = lane_gnorm(s.grad)
        stalled = (s.count == end) & (s.value == last)
        code = jnp.where(
            ~(jnp.isfinite(s.value) & jnp.isfinite(gnorm)),
            REASONS.index("nonfinite"),
            jnp.where(gnorm < tol, REASONS.index("tol"), jnp.where(stalled, REASONS.index("stalled"), 0)),
        )
        ov = _lane_overlaps(s.P, teacher)
        trace = trace.put(r + 1, live, s.count, s.value, gnorm, ov)
        reason = jnp.where(live, code, reason)
        still = live & (code == REASONS.index("max_iter"))
        crossed = live & ((s.count % log_every < record_every) | (code == REASONS.index("tol")))
        report = jnp.any(crossed | (live & ~still)) | (end >= max_iter)
        jax.lax.cond(
            report,
            lambda: jax.debug.callback(_report, s.count, s.value, gnorm, ov, live, reason, ordered=True),
            lambda: None,
        )
        return s, still, reason, end, s.value, trace, r + 1, ticks

    init = (state, live, reason, jnp.int32(0), state.value, trace, jnp.int32(0), jnp.int32(1))
    state, _, reason, _, _, trace, _, ticks = jax.lax.while_loop(cond, body, init)
    return state, reason, trace, ticks


def _lane(tree, i):
    return jax.tree.map(lambda a: np.asarray(a[i]), tree)


class _Progress:
    """The host side of ``lanes_solve``'s progress: a log line per lane whose count crossed a
    multiple of ``log_every`` (as ``slrpipe.train.erm._Recorder`` logs a run alone) or converged,
    and each lane's wall time (s, from the start of the solve to the report after its last block)."""

    def __init__(self, S: int, log_every: int, record_every: int, teacher: bool, runs=None):
        self.t0 = time.perf_counter()
        self.wall = np.zeros(S)
        self.runs = list(range(S)) if runs is None else list(runs)  # the start each lane trains
        self.log_every, self.record_every, self.teacher = log_every, record_every, teacher

    def __call__(self, counts, values, gnorms, ov, live, reasons):
        now = time.perf_counter() - self.t0
        for i in np.flatnonzero(np.asarray(live)):
            self.wall[i] = now
            count, reason = int(counts[i]), REASONS[int(reasons[i])]
            if count % self.log_every < self.record_every or reason == "tol":
                extra = "".join(f" {k}={ov[i][j]:.4f}" for j, k in enumerate(OVERLAPS[:4])) if self.teacher else ""
                log.info("lbfgs run %d step %d: J=%.6g |∇J|=%.3g%s", self.runs[i], count, values[i], gnorms[i], extra)
            if reason == "nonfinite":
                log.warning("run %d: non-finite loss or gradient at step %d; stopping", self.runs[i], count)


def _segments(sigmas: list[str]) -> tuple[tuple[str, int], ...]:
    """((σ, count), …) of consecutive equal σ."""
    out: list = []
    for s in sigmas:
        if out and out[-1][0] == s:
            out[-1][1] += 1
        else:
            out.append([s, 1])
    return tuple((s, c) for s, c in out)


def minimize_lanes(
    params0: list[dict],
    data: _DeviceData,
    sigma,
    lam,
    options: SolverOptions | None = None,
    *,
    teacher=None,
) -> list[ERMResult]:
    """Minimise J from each of ``params0`` at once, the starts as lanes (module docstring), each
    with its own σ and λ: every model of a training set evaluated from one product X·W, W (D, 2S).

    Args:
        params0: S ≥ 1 starts {"k": (D,), "v": (D,)[, "c": ()]} of one dtype (the run's) and the
            same fields (an erf start, with its offset c, trains with erf starts only).
        data: the training set on the device (``slrpipe.train.erm.place_data`` in that dtype).
        sigma, lam: score function and ridge λ ≥ 0 (on 𝓛), as ``slrpipe.train.erm.minimize``: one
            for every start, or a sequence of S (each start's own).
        options: ``SolverOptions`` (optimizer "lbfgs"): max_iter, tol, memory_size, record_every,
            log_every are each lane's.
        teacher: optional (k*, v*) to record overlaps along each trajectory (in the lanes' dtype).

    Returns:
        One ``ERMResult`` per start, in order, with stop reasons as ``minimize``'s ("tol",
        "max_iter", "stalled": a block of ``record_every`` iterations left J unchanged,
        "nonfinite"); ``wall_time``: from the solve's start to the progress report after the lane's
        last block (shared with the other lanes); ``lanes``: S.

    Raises:
        ValueError: no start, starts of different fields, sequences of σ or λ not of length S,
            unknown sigma, λ < 0, another optimizer than lbfgs, or ``data`` of another dtype than
            the starts'.
    """
    if not params0:
        raise ValueError("params0: at least one start expected")
    S = len(params0)
    sigmas = [sigma] * S if isinstance(sigma, str) else list(sigma)
    lams = [float(lam)] * S if np.ndim(lam) == 0 else [float(x) for x in lam]
    if len(sigmas) != S or len(lams) != S:
        raise ValueError(f"sigma, lam: one for every start or one each ({S}), got {len(sigmas)} and {len(lams)}")
    if any(set(p) != set(params0[0]) for p in params0):
        raise ValueError("params0: the starts must have the same fields (erf's c with erf starts only)")
    dtype = jnp.asarray(params0[0]["k"]).dtype
    for s_, l_ in dict.fromkeys(zip(sigmas, lams)):
        o = checked_options(s_, l_, options, int(data.y.shape[0]), dtype)
    if o.optimizer != "lbfgs":
        raise ValueError(f"optimizer: lanes run lbfgs only, got {o.optimizer!r}")
    if data.X.dtype != dtype:
        raise ValueError(f"data: placed as {data.X.dtype}, the starts are {dtype}")
    order = sorted(range(S), key=lambda i: sigmas[i])  # consecutive lanes of one σ (stable)
    P = jax.tree.map(lambda *a: jnp.stack([jnp.asarray(x, dtype) for x in a]), *[params0[i] for i in order])
    lam_j = jnp.asarray([lams[i] for i in order], dtype)
    tol = jnp.asarray(o.tol, dtype)
    teach = None if teacher is None else tuple(jnp.asarray(np.asarray(a), dtype) for a in teacher)
    progress = _Progress(S, o.log_every, o.record_every, teacher is not None, order)
    _RECEIVERS.append(progress)
    try:
        state, reason, trace, passes = lanes_solve(
            P,
            data,
            lam_j,
            tol,
            teach,
            _segments([sigmas[i] for i in order]),
            o.memory_size,
            o.max_iter,
            o.record_every,
            o.log_every,
        )
        reason, trace = np.asarray(reason), jax.tree.map(np.asarray, trace)  # waits for the solve
        jax.effects_barrier()
        log.info("lanes: %d models, %d passes over X, %.1f s", S, int(passes), time.perf_counter() - progress.t0)
    finally:
        _RECEIVERS.pop()
    wall = progress.wall
    count, value = np.asarray(state.count), np.asarray(state.value, np.float64)
    gnorm = np.asarray(lane_gnorm(state.grad), np.float64)
    out = [None] * S
    for lane, i in enumerate(order):
        rows = trace.step[:, lane] >= 0
        traj = {
            "step": trace.step[rows, lane].astype(np.int64),
            "loss": trace.loss[rows, lane].astype(np.float64),
            "gnorm": trace.gnorm[rows, lane].astype(np.float64),
        }
        if teacher is not None:
            traj.update({k: trace.overlaps[rows, lane, j].astype(np.float64) for j, k in enumerate(OVERLAPS)})
        r = REASONS[int(reason[lane])]
        out[i] = ERMResult(
            _lane(state.P, lane),
            float(value[lane]),
            float(gnorm[lane]),
            int(count[lane]),
            r == "tol",
            r,
            float(wall[lane]),
            traj,
            S,
        )
    return out
