"""The 1RSB saddle point at one Parisi parameter s (docs/theory.md §13): damped, then Anderson
iteration (``solver.anderson_point``) of the map channel → prior, with cheap passes between full
prox searches; the RS start and the RS fixed point on the 1RSB samples."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from slrpipe.theory.replica.fields import Fields
from slrpipe.theory.replica.options import ReplicaTask, replica_task
from slrpipe.theory.replica.prox import check_sigma
from slrpipe.theory.replica.rsb1.channel import (
    CONJ1,
    STATE1,
    check_state,
    rsb1_channel,
    rsb1_prior,
    state_residual,
    thermodynamics,
)
from slrpipe.theory.replica.rsb1.sampling import Inner, draw_inner
from slrpipe.theory.replica.solver import anderson_point
from slrpipe.theory.replica.solver import test_error as rs_test_error
from slrpipe.vocabulary import DEFAULTS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rsb1Options:
    """How :func:`solve_rsb1` iterates (docs/theory.md §13).

    tol: on max_i |F(x)_i − x_i| / (1 + |x_i|), declared on full multi-start passes only.
    damping: d of x ← (1 − d)x + dF(x); a step leaving the domain (A ≤ 0, λ + V̂ ≤ 0) is retried
    with d halved (at most 6 times); also the mixing of the Anderson steps.  method: "anderson"
    (damped steps until the residual is below ``accel_below``, then type-II Anderson acceleration
    over the last ``memory`` + 1 passes; docs/theory.md §13) or "damped" (damped steps only).
    max_iter: cap on channel evaluations.  full_every: passes between full prox searches (the
    others start from the centre and the previous minima only, ~1/5 of the cost; a cheap pass
    within tol is confirmed by a full one).  n_steps: Newton steps per prox start.  patience: full
    passes without a new best residual that end the solve.  debias: the channel's two-half
    jackknife of the inner averages (:func:`rsb1_channel`)."""

    tol: float = DEFAULTS["rsb1"]["tol"]
    damping: float = 0.5
    method: str = "anderson"
    memory: int = 5
    accel_below: float = 0.1
    max_iter: int = DEFAULTS["rsb1"]["max_iter"]
    full_every: int = 16
    n_steps: int = 25
    patience: int = 20
    debias: bool = True

    def __post_init__(self):
        if self.method not in ("anderson", "damped"):
            raise ValueError(f"method: one of anderson, damped, got {self.method!r}")


class _Rsb1Point(NamedTuple):
    """One point of a 1RSB solve: the task (:class:`ReplicaTask`), the ridge λ and α."""

    task: ReplicaTask
    lam: float
    alpha: float

    @property
    def sigma(self) -> str:
        return self.task.sigma

    @property
    def model(self) -> str:
        return self.task.model

    @property
    def L(self) -> int:
        return self.task.L


class _Best(NamedTuple):
    """The best full pass of :func:`_iterate_rsb1` so far: its residual, state x (8,), channel pass
    (None before any) and image F(x) (8,)."""

    residual: float
    x: np.ndarray
    ch: dict | None
    fx: np.ndarray


class _Iterated(NamedTuple):
    """What :func:`_iterate_rsb1` ends with: the residual, state (8,), full channel pass there (None
    if no full pass gave a state), whether it converged and the channel evaluations used."""

    residual: float
    x: np.ndarray
    ch: dict | None
    converged: bool
    iterations: int


def _check_rsb1_task(pt: _Rsb1Point, s, fields: Fields) -> None:
    check_sigma(pt.sigma)
    if not (pt.lam > 0 and pt.alpha > 0 and s > 0):
        raise ValueError(f"lam, alpha, s: must be > 0, got {pt.lam}, {pt.alpha}, {s}")
    if fields.L != pt.L or fields.model != pt.model:
        raise ValueError(f"fields: drawn for model={fields.model}, L={fields.L}, not {pt.model}, {pt.L}")


def _damped(x, fx, damping):
    """(1 − d)x + dF(x), d halved (at most 6 times) while the step leaves the domain; None if
    every step does."""
    d = damping
    for _ in range(7):
        xn = (1 - d) * x + d * fx
        try:
            return check_state(xn)
        except ValueError:
            d /= 2
    return None


class _Accel:
    """The Anderson phase of :func:`_iterate_rsb1`: whether it has begun, and its memory of
    iterates xs and residual vectors fs = F(x) − x (full passes only: one map)."""

    def __init__(self):
        self.on, self.xs, self.fs = False, [], []

    def step(self, x, fx, best, o: Rsb1Options):
        """The next state after the pass F(x) = fx; ``best``: the best full pass (:class:`_Best`). Restarts from the best state (damped step, fresh memory) where the
        residual exceeds 10 × the best one; a point outside the domain falls back to the damped step."""
        if state_residual(x, fx) > 10 * best.residual:
            self.xs, self.fs = [], []
            x, fx = best.x, best.fx
        self.xs, self.fs = (self.xs + [x])[-(o.memory + 1) :], (self.fs + [fx - x])[-(o.memory + 1) :]
        if len(self.xs) > 1:
            try:
                return check_state(anderson_point(np.array(self.xs), np.array(self.fs), o.damping))
            except ValueError:
                self.xs, self.fs = [x], [fx - x]
        return _damped(x, fx, o.damping)


def _iterate_rsb1(pt: _Rsb1Point, s, samples, x, warm, o: Rsb1Options) -> _Iterated:
    """The iteration of :func:`solve_rsb1` from x on ``samples`` = (fields, inner) (damped, then
    Anderson: :class:`Rsb1Options`) at the point ``pt``.

    Passes are cheap (the centre and the previous pass's three best minima per sample) except the
    first when there are no warm starts, every ``full_every``-th and the confirmation of a cheap
    pass within ``tol``, which search from every start; convergence and the best state are those of
    full passes only, so the fixed point returned is one of the full-search map (docs/theory.md §13).
    Returns :class:`_Iterated` (its channel pass with the N₁ biases): that of the last full pass
    when converged, else of the best full pass."""
    sigma, lam, alpha = pt.sigma, pt.lam, pt.alpha
    best = _Best(math.inf, x, None, x)
    acc = _Accel()
    stall, it, conv, confirm = 0, 0, False, False
    for it in range(1, int(o.max_iter) + 1):
        full = (it == 1 and warm is None) or it % o.full_every == 0 or confirm
        ch = rsb1_channel(
            sigma, samples, alpha, s, x, warm=warm, multistart=full, n_steps=o.n_steps, bias=full, debias=o.debias
        )
        warm = ch["warm"]
        try:
            fx = rsb1_prior(lam, s, ch)
        except ValueError as err:  # λ + V̂ ≤ 0 or A ≤ 0: no state to step to
            log.warning("1RSB s=%g: %s; stopped at the best state found", s, err)
            break
        r = state_residual(x, fx)
        if full and r < best.residual:
            best, stall = _Best(r, x.copy(), ch, fx), 0
        elif full:
            stall += 1
        if full and r < o.tol:
            conv = True
            break
        if stall >= o.patience:
            break
        # a cheap pass within tol is confirmed by a full one at the same state (the two maps agree
        # to ~1e-10 unless the search finds a new minimum for some sample)
        confirm = not full and r < o.tol
        if confirm:
            continue
        if o.method == "anderson" and not acc.on and r < o.accel_below:
            acc.on = True
        x = acc.step(x, fx, best, o) if acc.on else _damped(x, fx, o.damping)
        if x is None:
            log.warning("1RSB s=%g: every damped step leaves the domain; stopped at the best state found", s)
            break
    if conv:
        return _Iterated(r, x, ch, True, it)
    return _Iterated(best.residual, best.x, best.ch, False, it)


#: the per-outer-sample arrays of a solve (for the paired s.e. of the scan; not stored)
SAMPLES = ("phi_samples", "sigma_samples", "energy_samples")


def _rsb1_outputs(pt: _Rsb1Point, s, x, ch) -> dict:
    """State (+ q₁), conjugates (+ ``*_se``), :func:`thermodynamics`, test error and N₁ biases of
    :func:`solve_rsb1` at x from the full channel pass ``ch`` there."""
    out = dict(zip(STATE1, x.tolist()))
    out.update(q1_k=x[1] + x[2], q1_v=x[5] + x[6])
    for k in CONJ1:
        out[k], out[k + "_se"] = ch[k], ch[k + "_se"]
    out.update(thermodynamics(pt.lam, pt.alpha, s, x, ch))
    out["test_error"] = rs_test_error(pt.sigma, pt.task.setting, (x[0], x[1] + x[2], x[4], x[5] + x[6]))
    out.update({k: v for k, v in ch.items() if k.endswith("_n1_bias")})
    out["phi_samples"] = pt.alpha * ch["phi_out_samples"]
    return out


def _log_rsb1(pt: _Rsb1Point, s, out) -> None:
    log.info(
        "1RSB %s α=%g λ=%g s=%g: δq=(%.3g, %.3g) Φ=%.5f Σ=%.3g e=%.5f e_test=%.4f resid=%.1e conv=%s (%.0fs)",
        pt.sigma,
        pt.alpha,
        pt.lam,
        s,
        out["dq_k"],
        out["dq_v"],
        out["phi"],
        out["sigma"],
        out["energy_direct"],
        out["test_error"],
        out["residual"],
        out["converged"],
        out["wall_time"],
    )


def solve_rsb1(
    task: ReplicaTask,
    lam,
    alpha,
    s,
    *,
    samples: tuple[Fields, Inner],
    init,
    warm=None,
    options: Rsb1Options | None = None,
) -> dict:
    """The 1RSB saddle point at Parisi parameter s by damped iteration (docs/theory.md §13).

    Args:
        task: :class:`~slrpipe.theory.replica.options.ReplicaTask` (σ and the setting), as for ``solve_replica``.
        lam: ridge λ > 0.  alpha: n/D > 0.  s: Parisi parameter > 0 (floats).
        samples: (fields, inner): outer samples (:class:`Fields`, N₀, drawn for the task's model
            and L) and :class:`Inner` (N₁); e.g. ``Rsb1Draw().samples(task)``.
        init: (8,) starting state (``STATE1`` order), e.g. the RS solution with δq = 0.05 q.
        warm: (N₀·N₁, W, L) prox warm starts from an earlier solve on the same samples.
        options: :class:`Rsb1Options` (defaults if None): tol, damping, max_iter, full_every,
            n_steps, patience.
    Returns:
        dict: the state ``STATE1`` (and q1_k, q1_v), the conjugates ``CONJ1`` with ``*_se``,
        :func:`thermodynamics` (phi, phi_se, sigma, sigma_se, energy, energy_direct, objective,
        train_loss, sigma_samples and energy_samples (N₀,): Σ and e_direct per outer sample),
        phi_samples (N₀,): α Φ_out per outer sample (the Monte Carlo part of Φ: the
        antithetic-paired s.e. of differences between solves on the same samples is that of ΔΦ;
        so for e), test_error (RS formula of docs/theory.md §7 at (m, q₁): a typical minimum at s),
        ess_median, ``*_n1_bias``, residual, converged, iterations, wall_time, s, n_outer, n_inner,
        prox_warm. Reported at the last full pass's state when converged, else at the best one.
    Raises:
        ValueError: any argument outside its range.
        TypeError: ``task`` not a ``ReplicaTask``.
    """
    o = options or Rsb1Options()
    pt = _Rsb1Point(replica_task(task), lam, alpha)
    fields, inner = samples
    _check_rsb1_task(pt, s, fields)
    t0 = time.perf_counter()
    run = _iterate_rsb1(pt, s, samples, check_state(init), warm, o)
    x, ch = run.x, run.ch
    if ch is None:  # no full pass gave a state: one at the start, for its outputs
        ch = rsb1_channel(
            pt.sigma, samples, alpha, s, x, warm=warm, multistart=True, n_steps=o.n_steps, debias=o.debias
        )
    out = _rsb1_outputs(pt, s, x, ch)
    out.update(
        ess_median=ch["ess_median"],
        residual=run.residual,
        converged=run.converged,
        iterations=run.iterations,
        wall_time=time.perf_counter() - t0,
        s=float(s),
        n_outer=fields.n,
        n_inner=inner.n,
        train_loss_se=ch["train_loss_se"],
        prox_warm=ch["warm"],
    )
    _log_rsb1(pt, s, out)
    return out


def rs_state(rs: dict, frac: float = 0.0) -> np.ndarray:
    """1RSB state (8,) from an RS solution dict (``solve_replica``): q₁ = q_RS, δq = frac·(q − m²)."""
    x = []
    for a in ("k", "v"):
        m, q, V = rs[f"m_{a}"], rs[f"q_{a}"], rs[f"V_{a}"]
        dq = frac * (q - m * m)
        x += [m, q - dq, dq, V]
    return np.array(x)


def rs_on_samples(task: ReplicaTask, lam, alpha, fields: Fields, init: dict) -> tuple[dict, dict]:
    """The RS fixed point on the 1RSB outer samples, for the comparison on the same samples and
    the start of the s scan: the soft-min channel from ``init`` (Anderson, then damped if that
    fails), then the hard channel (``softmin=None``, the one 1RSB uses; docs/theory.md §13) from it.

    Args:
        task: :class:`ReplicaTask`.  lam, alpha: floats > 0.  fields: the outer :class:`Fields`.
        init: starting order parameters (keys ``slrpipe.theory.replica.solver.STATE``), e.g. the
            RS sweep's fixed point at (λ, α) on its own samples.
    Returns:
        (soft, hard): the two ``solve_replica`` results.
    """
    from slrpipe.theory.replica.solver import STATE, solve_replica

    soft = solve_replica(task, lam, alpha, fields=fields, init=init, max_iter=80)
    if not soft["converged"]:
        start = {k: soft[k] for k in STATE}
        soft = solve_replica(task, lam, alpha, fields=fields, init=start, method="damped", max_iter=200, patience=200)
    hard = solve_replica(task, lam, alpha, fields=fields, init={k: soft[k] for k in STATE}, softmin=None, max_iter=60)
    return soft, hard


def inner_size_check(
    sigma,
    fields: Fields,
    alpha,
    lam,
    s,
    x,
    n_inners=(8, 32),
    inner_seed=DEFAULTS["rsb1"]["inner_seed"],
    independent=False,
    debias=False,
) -> list[dict]:
    """The N₁ dependence at a fixed state: one full channel pass per N₁ in ``n_inners`` at state x
    (8,) and Parisi parameter s, on the same outer ``fields`` (docs/theory.md §13, "Finite N₁"),
    with one inner set shared by the outer samples or (``independent``) one per outer sample, and the
    plain or (``debias``) jackknifed estimators of :func:`rsb1_channel`.

    At a saddle point Φ is stationary, so the change of Φ between N₁ values at fixed x is, to first
    order, the change of the solved Φ. Returns one dict per N₁: n_inner, phi, sigma, energy_direct,
    the conjugates ``CONJ1``, the residual max_i |F(x)_i − x_i|/(1 + |x_i|) and ess_median.
    Raises:
        ValueError: as :func:`rsb1_channel` / :func:`draw_inner`.
    """
    out = []
    for n1 in n_inners:
        inner = draw_inner(fields.L, int(n1), inner_seed, fields.n if independent else None)
        ch = rsb1_channel(sigma, (fields, inner), alpha, s, x, debias=debias)
        th = thermodynamics(lam, alpha, s, np.asarray(x, float), ch)
        fx = rsb1_prior(lam, s, ch)
        out.append(
            {
                "n_inner": int(n1),
                **{k: th[k] for k in ("phi", "sigma", "energy_direct")},
                **{k: ch[k] for k in CONJ1},
                "residual": state_residual(np.asarray(x, float), fx),
                "ess_median": ch["ess_median"],
            }
        )
    return out
