"""Fixed-point solver of the RS zero-temperature equations of ridge ERM on SLR.

State x = (m_k, q_k, V_k, m_v, q_v, V_v). The map F: conjugates from the output channel
(:mod:`.channel`, Monte Carlo over fixed common random numbers), then the ridge prior
(:mod:`.prior`). Converged when max_i |F(x)_i − x_i| / (1 + |x_i|) < tol on a pass with the full
multi-start prox search; otherwise ``converged=False`` with the residual — never a silent number.

Iteration (``method``):
  * "anderson" (default): Anderson acceleration, type II (mixing 1), on f = F(x) − x with the
    weighted least-squares norm of the convergence test (Walker & Ni, SIAM J. Numer. Anal. 49
    (2011) 1715): the next point is Σ_i a_i (x_i + f_i) over the last ``memory`` + 1 evaluations,
    Σ a_i = 1, minimising |Σ a_i f_i|. Safeguards: a trust region (≤ 50 % relative change of any
    order parameter per step); the memory restarts from the best point when the residual exceeds
    ``_RESTART`` × the best one, and with a halved damped step from the best point after every
    ``_STALL`` evaluations without progress (Anderson can cycle); extrapolations outside the
    domain (q_a < m_a², V_a ≤ 0), failed prior steps (λ + V̂ ≤ 0) and stagnation (a point already
    in memory) fall back to the damped step from the best point; ``patience`` evaluations without
    a new best residual end the solve, and so do ``far_patience`` evaluations without halving the
    best residual while it is still ≥ ``far_below`` (10⁻²: a start outside the basin of any fixed
    point; the cap on wasted work, docs/theory.md §9).
  * "damped": x ← (1 − d) x + d F(x), d halved whenever the residual grows three times running.
Prox passes: the first, every ``full_every``-th and, once the residual is below ``_FULL_BELOW``,
every pass is a full multi-start search; the others start from the centre and the previous
pass's minima only. Convergence is declared on full passes only, except with ``cheap_finish``
(intermediate continuation points, which only provide warm starts): there the passes stay cheap
near the root and convergence is that of the cheap map (within ~10⁻³ of the full one where a new
prox branch appears; a full pass costs ~7 cheap ones).
Polish (``PolishOptions``): when the iteration ends unconverged with its best residual below
``below`` (10⁻²) — a near miss, e.g. Anderson stalling at 4e-5 where the map is steep (softmax,
λ = 0.01, spiked ν = 2, α = 5: a relative change of 1e-4 in x moves F(x) − x by 1e-3) — the root
of F(x) − x is sought by MINPACK's hybrid Powell method (``scipy.optimize.root``, 'hybr',
finite-difference Jacobian) on the full-search map with the prox warm starts frozen at those of
a fresh full search at the best point (so that the map is deterministic). Its result passes the
same test as any other point: one full pass, residual < tol.
Options: :mod:`.options` (``SolverOptions``: iterate / channel / polish groups, built once).
The solve is three steps: :func:`_iterate`, :func:`_polish_near_miss`, :func:`_report`.
Source: docs/theory.md §2–6, §9.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import root

from slrpipe.setting import Setting
from slrpipe.theory import overlap_risk
from slrpipe.theory.replica.channel import channel
from slrpipe.theory.replica.fields import Draw, Fields
from slrpipe.theory.replica.options import METHODS, ReplicaTask, SolverOptions, replica_task  # noqa: F401  (METHODS: re-export)
from slrpipe.theory.replica.prior import ridge_prior
from slrpipe.theory.replica.prox import check_sigma

log = logging.getLogger(__name__)

STATE = ("m_k", "q_k", "V_k", "m_v", "q_v", "V_v")
CONJ = ("mhat_k", "qhat_k", "Vhat_k", "mhat_v", "qhat_v", "Vhat_v")
DEFAULT_INIT = dict(m_k=0.5, q_k=1.0, V_k=1.0, m_v=0.5, q_v=1.0, V_v=1.0)
_FULL_BELOW = 1e-2  # residual below which every prox pass is a full multi-start search
_RESTART = 10.0  # Anderson memory restarts when the residual exceeds this factor × the best one
_STALL = 6  # … and every _STALL evaluations without a new best residual (breaks cycles)


def _check(task: ReplicaTask, lam, alpha):
    check_sigma(task.sigma)
    if not lam > 0:
        raise ValueError(f"lam: must be > 0, got {lam}")
    if not alpha > 0:
        raise ValueError(f"alpha: must be > 0, got {alpha}")


def _prior_step(lam, c):
    mk, qk, Vk = ridge_prior(lam, c["mhat_k"], c["qhat_k"], c["Vhat_k"])
    mv, qv, Vv = ridge_prior(lam, c["mhat_v"], c["qhat_v"], c["Vhat_v"])
    return np.array([mk, qk, Vk, mv, qv, Vv])


def _residual(lam, ch, x):
    """(F(x) − x, max_i |F(x)_i − x_i| / (1 + |x_i|)) from a channel pass ``ch`` at x; (None, inf)
    where the prior step fails (λ + V̂ ≤ 0 or a non-finite conjugate)."""
    try:
        f = _prior_step(lam, ch) - x
    except ValueError:
        return None, math.inf
    return f, float(np.max(np.abs(f) / (1 + np.abs(x))))


def _valid(x) -> bool:
    """x inside the domain of the channel: finite, V_a > 0 and q_a ≥ m_a²."""
    return bool(np.all(np.isfinite(x)) and x[2] > 0 and x[5] > 0 and x[1] >= x[0] ** 2 and x[4] >= x[3] ** 2)


def anderson_point(xs, fs, d, max_step=0.5):
    """Type-II Anderson point from iterates xs (k, n) and residuals fs = F(x) − x (k, n), k ≥ 2:
    x + d f − (ΔX + d ΔF) γ, γ = argmin |W (f − ΔF γ)|₂, W = diag 1/(1 + |x|) at the last iterate
    (the norm of the convergence test), shortened to a trust region: at most ``max_step`` relative
    change |Δx_i|/(1 + |x_i|) of any component. Used by the RS and the 1RSB iterations (module
    docstring; docs/theory.md §9, §13)."""
    x, f = xs[-1], fs[-1]
    w = 1.0 / (1.0 + np.abs(x))
    dX, dF = np.diff(xs, axis=0).T, np.diff(fs, axis=0).T
    gamma = np.linalg.lstsq(w[:, None] * dF, w * f, rcond=1e-10)[0]
    return trust_region(x + d * f - (dX + d * dF) @ gamma, x, max_step)


def trust_region(cand, x, max_step=0.5):
    """``cand`` moved towards x so that no component changes by more than ``max_step`` relative,
    |Δx_i|/(1 + |x_i|) (the norm of the convergence test)."""
    step = np.max(np.abs(cand - x) / (1 + np.abs(x)))
    return x + (cand - x) * min(1.0, max_step / step) if step > 0 else cand


def _polish(sigma, fields, alpha, lam, x0, warm, opts: SolverOptions):
    """Root of F(x) − x near x0 by 'hybr' (module docstring), at most ``opts.polish.maxfev``
    channel passes (``opts.channel``); F with its prox warm starts frozen.
    The unknowns are (m_a, q_a − m_a², V_a): forward finite differences then stay inside the
    domain q_a ≥ m_a² even where it is tight (L = 1: m_k = q_k = 0). Returns (x, number of channel
    evaluations); x is not checked here."""
    copts, maxfev = opts.channel, opts.polish.maxfev
    scale = 1.0 + np.abs(x0)
    bad = np.full(x0.size, 1e3)  # outside the domain, or λ + V̂ ≤ 0: steer hybr away
    to_u = lambda x: x - np.array([0, x[0] ** 2, 0, 0, x[3] ** 2, 0])
    to_x = lambda u: u + np.array([0, u[0] ** 2, 0, 0, u[3] ** 2, 0])

    def g(u):
        x = to_x(u)
        if not _valid(x):
            return bad
        f = _residual(lam, channel(sigma, fields, alpha, x, warm=warm, options=copts), x)[0]
        return bad if f is None else f / scale

    sol = root(g, to_u(x0), method="hybr", options=dict(xtol=1e-9, maxfev=maxfev, diag=1.0 / scale))
    return to_x(sol.x), int(sol.nfev)


def test_error(sigma: str, setting: Setting, overlaps) -> float:
    """e_test = E(y − f)² = Δ² + 1 − 2 m_v A + q_v B at the order parameters ``overlaps`` =
    (m_k, q_k, m_v, q_v) (model.md §4), by the quadrature of :mod:`slrpipe.theory.overlap_risk`
    (deterministic).

    Raises:
        ValueError: as :func:`slrpipe.theory.overlap_risk.risk`.
    """
    return overlap_risk.risk(sigma, setting, overlaps)


@dataclass
class _Iterated:
    """End of :func:`_iterate`: the reported point x (the best one seen if not converged), its
    residual, the channel pass at x when converged (else None), the last prox warm starts, the
    number of channel evaluations and the counters reported by the solve."""

    x: np.ndarray
    resid: float
    converged: bool
    ch: dict | None
    warm: np.ndarray | None
    it: int
    damping: float
    n_rejected: int
    polished: bool = False  # set by the solve after :func:`_polish_near_miss`


@dataclass
class _Memory:
    """What :func:`_iterate` carries from one evaluation to the next besides x: the damping d,
    the residuals of the damped steps, the Anderson memory (iterates xs, residual vectors fs), the
    best point (x, F(x) − x, residual) and the evaluation that found it, whether the iteration is
    near the root, the count of rejected steps, and the far-phase bookkeeping (the residual at the
    last halving of the best one and its evaluation; the lowest residual of the solve: ``best``
    restarts when near)."""

    d: float
    hist: list = field(default_factory=list)
    xs: list = field(default_factory=list)
    fs: list = field(default_factory=list)
    best: tuple | None = None
    it_best: int = 0
    near: bool = False
    n_rej: int = 0
    far_ref: float = math.inf
    it_far: int = 0
    lowest: float = math.inf

    def from_best(self, shrink: bool) -> np.ndarray:
        """Restart the Anderson memory at the best point; the damped step from there (d halved
        first, not below 0.05, with ``shrink``)."""
        if shrink:
            self.d = max(0.5 * self.d, 0.05)
        self.xs, self.fs = [self.best[0]], [self.best[1]]
        return self.best[0] + self.d * self.best[1]


def _full_pass(o, mem: _Memory, it: int, warm) -> bool:
    # cheap passes (centre + warm starts: the previous global prox and its runners-up) between
    # full multi-start searches; once near the solution every pass is full, so that the
    # accelerated iteration sees one consistent map (cheap and full passes differ by ~1e-3
    # where a new branch appears)
    return warm is None or (mem.near and not o.cheap_finish) or (it % o.full_every == 0 and not mem.near)


def _damped_next(mem: _Memory, x, f, resid):
    """x + d f, d halved (not below 0.05) when the residual grew three times running; None where
    the prior step failed."""
    if f is None:
        return None
    mem.hist.append(resid)
    h = mem.hist
    if len(h) > 3 and h[-1] > h[-2] > h[-3] > h[-4] and mem.d > 0.05:
        mem.d *= 0.5
    return x + mem.d * f


def _gives_up(mem: _Memory, o, it: int, new_best: bool) -> bool:
    """Whether the solve ends here: ``patience`` evaluations without a new best residual, or,
    far from any fixed point (residual ≥ ``far_below``), ``far_patience`` without halving it
    (module docstring)."""
    if not new_best and it - mem.it_best >= o.patience:
        log.debug("no progress in %d iterations: giving up", o.patience)
        return True
    far = mem.lowest >= o.far_below
    if o.far_patience is not None and far and it - mem.it_far >= o.far_patience:
        # far from any fixed point and not getting closer: this start is outside every basin
        log.debug("residual ≥ %.0e not halved in %d iterations: giving up", o.far_below, o.far_patience)
        return True
    return False


def _anderson_candidate(mem: _Memory, o, x, f):
    """The Anderson point from the memory extended by (x, f), within the trust region; the damped
    step from the best point where it leaves the domain or repeats a point of the memory."""
    mem.xs, mem.fs = (mem.xs + [x])[-(o.memory + 1) :], (mem.fs + [f])[-(o.memory + 1) :]
    xs, fs = np.array(mem.xs), np.array(mem.fs)
    cand = anderson_point(xs, fs, 1.0) if len(mem.xs) > 1 else trust_region(x + mem.d * f, x)
    # stagnation guard: Anderson can return a point already in its memory (F then adds no
    # information); restart from the best point with a (smaller) damped step instead
    seen = min(np.max(np.abs(cand - xi) / (1 + np.abs(xi))) for xi in mem.xs) < 1e-12
    if seen or not _valid(cand):
        cand = mem.from_best(shrink=seen)
    return cand


def _anderson_next(mem: _Memory, o, x, f, resid, it):
    """The next point of the safeguarded Anderson iteration (module docstring), or None where the
    solve ends (a failed prior step with no best point yet, or :func:`_gives_up`)."""
    if f is None:
        # the prior step failed (λ + V̂ ≤ 0): back to the best point, smaller damped step
        if mem.best is None:
            log.warning("prior step failed (λ + V̂ ≤ 0) at iteration %d", it)
            return None
        mem.n_rej += 1
        return mem.from_best(shrink=True)
    if resid <= 0.5 * mem.far_ref:
        mem.far_ref, mem.it_far = resid, it
    mem.lowest = min(mem.lowest, resid)
    new_best = mem.best is None or resid < mem.best[2]
    if new_best:
        mem.best, mem.it_best = (x, f, resid), it
    if _gives_up(mem, o, it, new_best):
        return None
    stalled = (it - mem.it_best) % _STALL == 0
    if not new_best and (resid > _RESTART * mem.best[2] or stalled):
        # the secant model failed (residual blew up), or the iteration is cycling without
        # progress: restart the memory from the best point (and, when stalled, from a
        # smaller damped step there)
        mem.n_rej += 1
        mem.xs, mem.fs = [mem.best[0]], [mem.best[1]]
        if stalled:
            return mem.from_best(shrink=True)
    return _anderson_candidate(mem, o, x, f)


def _iterate(sigma, fields, alpha, lam, x, opts: SolverOptions, warm=None) -> _Iterated:
    """The fixed-point iteration from x (module docstring: Anderson with safeguards, or damped).
    ``warm``: prox warm starts (N, W, L) of an earlier solve on the same fields (e.g. the
    neighbouring α); the first pass is then a cheap one."""
    o = opts.iterate
    mem = _Memory(d=float(o.damping))
    resid, it = math.inf, 0
    for it in range(1, int(o.max_iter) + 1):
        full = _full_pass(o, mem, it, warm)
        ch = channel(sigma, fields, alpha, x, warm=warm, multistart=full, options=opts.channel)
        warm = ch["warm"]
        f, resid = _residual(lam, ch, x)
        log.debug("iteration %d full=%s residual %.3e x=%s", it, full, resid, np.round(x, 5).tolist())
        if resid < o.tol and (full or o.cheap_finish):
            # x is reported, with this (full) pass's conjugates and train loss
            return _Iterated(x, resid, True, ch, warm, it, mem.d, mem.n_rej)
        if not mem.near and resid < max(_FULL_BELOW, 10 * o.tol):
            mem.near = True
            if not o.cheap_finish:  # the map changes (full passes from here): a fresh memory
                mem.hist, mem.xs, mem.fs, mem.best = [], [], [], None
                if not full:
                    continue  # evaluate the same point again, with the full search
        nxt = _damped_next(mem, x, f, resid) if o.method == "damped" else _anderson_next(mem, o, x, f, resid, it)
        if nxt is None:
            break
        x = nxt
    if mem.best is not None and mem.best[2] < resid:
        x, resid = mem.best[0], mem.best[2]  # report the best point seen, not the last one
    return _Iterated(x, resid, False, None, warm, it, mem.d, mem.n_rej)


def _polish_near_miss(sigma, fields, alpha, lam, run: _Iterated, opts: SolverOptions) -> tuple[_Iterated, bool]:
    """Finish an unconverged run whose residual is below ``opts.polish.below`` by :func:`_polish`
    (module docstring). Returns (the run, updated where the polish lowered the residual;
    whether the polish ran). Its channel evaluations are added to ``it``."""
    p, tol, copts = opts.polish, opts.iterate.tol, opts.channel
    if run.converged or not p.enabled or not run.resid < p.below:
        return run, False
    # the warm starts of one full search at x: those carried along the iteration can leave a
    # jump in the frozen map near the root (seen: hybr stuck at 4e-5)
    warm = channel(sigma, fields, alpha, run.x, options=copts)["warm"]
    xp, nfev = _polish(sigma, fields, alpha, lam, run.x, warm, opts)
    run.it += nfev + 1
    run.warm = warm
    if _valid(xp):
        chp = channel(sigma, fields, alpha, xp, warm=warm, options=copts)
        run.it += 1
        rp = _residual(lam, chp, xp)[1]
        if rp < run.resid:
            run.x, run.resid, run.ch, run.converged, run.warm = xp, rp, chp, rp < tol, chp["warm"]
    log.info("replica %s λ=%g α=%g: polish (%d evaluations) → residual %.2e", sigma, lam, alpha, nfev, run.resid)
    return run, True


def _outputs(task: ReplicaTask, lam, alpha, ch, x) -> dict:
    """The physical outputs of :func:`solve_replica` at state x from the channel pass ``ch`` there:
    order parameters, conjugates (+ ``*_se``), test error, train loss, objective, diagnostics."""
    st = dict(zip(STATE, map(float, x)))
    out = dict(st)
    out.update({k: ch[k] for k in CONJ})
    out.update({k + "_se": ch[k + "_se"] for k in CONJ})
    out["test_error"] = test_error(task.sigma, task.setting, (st["m_k"], st["q_k"], st["m_v"], st["q_v"]))
    out["train_loss"] = ch["train_loss"]
    out["train_loss_se"] = ch["train_loss_se"]
    out["objective"] = alpha * ch["train_loss"] + 0.5 * lam * (st["q_k"] + st["q_v"])
    for k in (
        "Vhat_k_jac",
        "Vhat_v_jac",
        "Vhat_k_stein",
        "Vhat_v_stein",
        "mhat_v_dy",
        "mhat_k_tilt",
        "mhat_k_general",
        "mhat_v_general",
    ):
        out[k] = ch.get(k, math.nan)
    return out


def _report(task: ReplicaTask, lam, alpha, fields, run: _Iterated, opts, t0) -> dict:
    """The output dict of :func:`solve_replica` at the run's point (a full channel pass there if
    the run has none: train loss and conjugates consistent with x); ``t0``: start of the solve
    (``time.perf_counter``)."""
    sigma = task.sigma
    ch = run.ch if run.ch is not None else channel(sigma, fields, alpha, run.x, warm=run.warm, options=opts.channel)
    out = _outputs(task, lam, alpha, ch, run.x)
    out.update(
        prox_unconverged=ch["prox_unconverged"],
        prox_multi=ch["prox_multi"],
        iterations=run.it,
        residual=run.resid,
        converged=bool(run.converged),
        damping=run.damping,
        n_rejected=run.n_rejected,
        polished=run.polished,
        n_samples=fields.n,
        seed=fields.seed,
        qmc=bool(fields.qmc),
        prox_warm=ch["warm"],
        wall_time=time.perf_counter() - t0,
    )
    if not run.converged:
        log.warning(
            "replica %s %s ν=%g L=%d λ=%g α=%g: not converged after %d iterations (residual %.2e)",
            sigma,
            task.model,
            task.nu,
            task.L,
            lam,
            alpha,
            run.it,
            run.resid,
        )
    return out


def _start_point(init, warm, fields: Fields) -> np.ndarray:
    """The initial state x (``DEFAULT_INIT`` updated by ``init``), checked with ``warm``.

    Raises:
        ValueError: x outside the domain, or warm not of shape (N, W, L)."""
    x0 = dict(DEFAULT_INIT, **(init or {}))
    x = np.array([float(x0[k]) for k in STATE])
    if not _valid(x):
        raise ValueError(f"init: needs V_a > 0 and q_a ≥ m_a², got {dict(zip(STATE, x.tolist()))}")
    if warm is not None and (np.ndim(warm) != 3 or np.shape(warm)[0] != fields.n):
        raise ValueError(f"warm: need shape (N, W, L) with N = {fields.n}, got {np.shape(warm)}")
    return x


def solve_replica(
    task: ReplicaTask,
    lam,
    alpha,
    *,
    fields: Fields | Draw | None = None,
    init=None,
    warm=None,
    options: SolverOptions | None = None,
    **flat,
) -> dict:
    """Solve the RS fixed point of ridge ERM on SLR at one (λ, α) (docs/theory.md §2–6, §9).

    Args:
        task: :class:`~slrpipe.theory.replica.options.ReplicaTask`: sigma (a σ of
            ``vocabulary.REPLICA_SIGMAS``) and the setting (model, ν, fixed length L, Δ;
            :class:`~slrpipe.setting.Setting`).
        lam: ridge λ > 0 (float).  alpha: n/D > 0 (float).
        fields: the common random numbers: pre-drawn :class:`Fields` (N samples), or the
            :class:`~slrpipe.theory.replica.fields.Draw` (n_samples: Monte Carlo samples of the
            channel, even, antithetic pairs; seed; qmc: scrambled-Sobol fields, :func:`draw_fields`)
            by which to draw them; None: ``Draw()`` (20 000 scrambled-Sobol samples, seed 0).
        init: dict of starting order parameters (keys ``STATE``; e.g. a neighbour's solution).
        warm: (N, W, L) prox warm starts of an earlier solve on the same ``fields`` (its
            ``prox_warm``); None: the first pass is a full multi-start search.
        options: :class:`~slrpipe.theory.replica.options.SolverOptions` (defaults if None);
        ``flat``: single options replacing those of ``options`` by their flat names (``tol``,
            ``max_iter``, ``method``, ``memory``, ``damping``, ``patience``, ``far_patience``,
            ``full_every``, ``vhat``, ``mhat``, ``softmin``, ``n_steps``, ``polish``,
            ``polish_below``, ``polish_maxfev``; their meaning: :mod:`.options`).
    Returns:
        dict: test_error (MSE incl. Δ²), train_loss (E ½(y − f)², per sample), objective
        (= α·train_loss + λ(q_k + q_v)/2, i.e. min 𝓛 / D), the six order parameters, the six
        conjugates and their ``*_se``, iterations (channel evaluations, the polish's included),
        residual, converged, wall_time (s), n_samples, seed, qmc, plus diagnostics:
        Vhat_k_jac/Vhat_v_jac (pointwise-Jacobian V̂), mhat_k_tilt (spiked/finite ν),
        mhat_*_general, prox_unconverged, prox_multi, damping (final), n_rejected (Anderson
        memory restarts and fallback steps), polished (the polish ran), prox_warm ((N, 3, L)
        prox minima of the last pass: ``warm`` of a next solve). When converged, the conjugates
        and train loss are those of the last (full) pass, at the returned state.
    Raises:
        ValueError: any argument or option outside its range (one line naming it).
        TypeError: ``task`` not a :class:`ReplicaTask`.
    """
    task = replica_task(task)
    lam, alpha = float(lam), float(alpha)
    _check(task, lam, alpha)
    opts = SolverOptions.build(options, **flat)
    t0 = time.perf_counter()
    if not isinstance(fields, Fields):
        fields = Draw(*(fields or ())).fields(task)
    x = _start_point(init, warm, fields)
    sigma = task.sigma
    run = _iterate(sigma, fields, alpha, lam, x, opts, warm=warm)
    run, run.polished = _polish_near_miss(sigma, fields, alpha, lam, run, opts)
    return _report(task, lam, alpha, fields, run, opts, t0)
