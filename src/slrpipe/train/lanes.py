"""L-BFGS on every model of one training set at once, each model a lane sharing each pass over X
(docs/model.md §5; the objective J is ``slrpipe.train.erm.objective``'s).

ERM's evaluation of J and ∇J streams X (n, L, D) and its transposed copy once each, whatever the
number of parameter vectors they multiply: S models as one (D, 2S) product cost far less than S
products of (D, 2) (``benchmarks/bench_erm.py starts``, ``share``). The lanes of one solve may
differ in their start, their σ (consecutive lanes of one σ: a static segment, whose attention is
applied to its columns of the shared product) and their ridge λ (an (S,) array). ``optax.lbfgs``
cannot be batched: under ``jax.vmap`` every ``lax.cond`` of its zoom line search becomes a select
that runs both branches (two evaluations per step) on copies of X, one per lane. Here the L-BFGS
direction is still optax's (``optax.scale_by_lbfgs``, vmapped: it never touches X), and the line
search is ``slrpipe.train.lane_steps``': a strong-Wolfe search written lane-wise, so that each of
its steps is one evaluation for all lanes.

Each lane is an independent L-BFGS run: its own direction, step size, iteration count and stop
(|∇J|₂ < tol). A lane that stops is frozen while the others go on, and drops out of the passes over
X: each evaluation multiplies X with the lanes that move on only, gathered into the narrowest of a
few product widths (S and the powers of two below it, one compiled branch each), so that a solve's
cost follows the lanes still running rather than the slowest lane. The whole solve is one device
program (``lanes_solve``): the stop tests and the trajectory stay on the device, and the host
receives only (S,)-sized progress reports (``jax.debug.callback``) until the end.
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from slrpipe.train.erm import DeviceData, ERMResult, checked_options
from slrpipe.train.lane_steps import lane_gnorm, lane_shaped, lanes_block, lanes_init
from slrpipe.train.metrics import OVERLAPS
from slrpipe.train.options import SolverOptions

log = logging.getLogger(__name__)

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
            return buf.at[r].set(jnp.where(lane_shaped(written, x), x, buf[r]))

        return _Trace(row(self.step, count), row(self.loss, value), row(self.gnorm, gnorm), row(self.overlaps, ov))


#: the host's receivers of ``lanes_solve``'s progress reports, the running solve's last
#: (``_report``: one compiled program serves every solve of its shapes)
_RECEIVERS: list = []


def _report(*args) -> None:
    _RECEIVERS[-1](*args)


@partial(jax.jit, static_argnames=("segments", "memory_size", "max_iter", "record_every", "log_every", "compact"))
def lanes_solve(P, data, lam, tol, teacher, segments, memory_size, max_iter, record_every, log_every, compact=True):
    """The whole L-BFGS solve of every lane as one device program (module docstring).

    Blocks of ``record_every`` iterations (every live lane reaches the block's end count or its
    tolerance), each followed on the device by the stop test of ``slrpipe.train.erm.stop_reason``
    (|∇J|₂ < tol; a full block that left J unchanged: stalled; non-finite J or |∇J|) and a row of
    the trajectory. The running solve's ``_Progress`` receives (counts, values, gnorms, overlaps,
    live, reasons) (``jax.debug.callback``, only (S,)-sized arguments) after a block where some lane's
    count crossed a multiple of ``log_every``, some lane stopped, or the budget ended: nothing else
    leaves the device until the end.

    With ``compact`` (the default), each evaluation computes the lanes that move on only, in the
    narrowest product that holds them (``slrpipe.train.lane_steps.lane_fields``): a stopped lane,
    or one at its block's end while others finish theirs, drops out of the passes over X.

    Returns:
        (final ``LaneState``, reason codes (S,) int (``REASONS``), ``_Trace``, the evaluations of J
        and ∇J made, each one pass over X (int32; the start's included), and the lanes their
        products held in all (int32; S per evaluation without ``compact``)).
    """
    dtype = P["k"].dtype
    state = lanes_init(P, data, lam, segments, memory_size)
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
        s, live, reason, step, last, trace, r, counts = c
        end = jnp.minimum(step + record_every, max_iter)
        s, counts = lanes_block(s, data, lam, live, end, tol, segments, memory_size, counts, compact)
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
        return s, still, reason, end, s.value, trace, r + 1, counts

    counts = (jnp.int32(1), jnp.int32(S))  # the start's evaluation
    init = (state, live, reason, jnp.int32(0), state.value, trace, jnp.int32(0), counts)
    state, _, reason, _, _, trace, _, (ticks, work) = jax.lax.while_loop(cond, body, init)
    return state, reason, trace, ticks, work


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


@contextmanager
def receiving_progress(S: int, log_every: int, record_every: int, teacher: bool, runs=None):
    """Context in which the progress reports of :func:`lanes_solve` (S lanes) go to a new
    ``_Progress`` (log lines every ``log_every`` steps of each lane, ``record_every`` the block
    length; with the overlaps where ``teacher``; ``runs``: the start each lane trains, for the log),
    which it yields: its ``wall`` (S,) holds each lane's wall time in s once the solve has ended.
    Every call of ``lanes_solve`` has to run inside one (its reports have no other receiver)."""
    progress = _Progress(S, log_every, record_every, teacher, runs)
    _RECEIVERS.append(progress)
    try:
        yield progress
    finally:
        _RECEIVERS.pop()


def sigma_segments(sigmas: list[str]) -> tuple[tuple[str, int], ...]:
    """((σ, count), …) of consecutive equal σ: the ``segments`` argument of :func:`lanes_solve` for
    lanes whose σ are ``sigmas`` (in lane order; lanes of one σ consecutive)."""
    out: list = []
    for s in sigmas:
        if out and out[-1][0] == s:
            out[-1][1] += 1
        else:
            out.append([s, 1])
    return tuple((s, c) for s, c in out)


def minimize_lanes(
    params0: list[dict],
    data: DeviceData,
    sigma,
    lam,
    options: SolverOptions | None = None,
    *,
    teacher=None,
    compact: bool = True,
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
        compact: stopped lanes drop out of later evaluations (``lanes_solve``); False: every lane
            is evaluated until the last stops (the same numbers to rounding, at the slowest's cost).

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
    with receiving_progress(S, o.log_every, o.record_every, teacher is not None, order) as progress:
        state, reason, trace, passes, work = lanes_solve(
            P,
            data,
            lam_j,
            tol,
            teach,
            sigma_segments([sigmas[i] for i in order]),
            o.memory_size,
            o.max_iter,
            o.record_every,
            o.log_every,
            compact,
        )
        reason, trace = np.asarray(reason), jax.tree.map(np.asarray, trace)  # waits for the solve
        jax.effects_barrier()
        t = time.perf_counter() - progress.t0
        log.info("lanes: %d models, %d passes over X for %d lane-evaluations, %.1f s", S, int(passes), int(work), t)
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
