"""Replica sweeps over (λ, α) as ``xarray.Dataset``s (docs/theory.md §9–10).

Per λ, the α grid is solved by the continuation passes of
:mod:`slrpipe.theory.replica.continuation`; at each point the fixed point with the lower RS
objective among the passes' is reported and, where the passes converged to two different fixed
points, the point is flagged (``n_branches = 2``, the other in ``*_alt``). Also recorded: how far
each pass followed its branch, the RS stability of the reported point and its Monte Carlo error
over extra draws of the common random numbers.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from dataclasses import dataclass

import numpy as np
import xarray as xr

from slrpipe.theory.replica.continuation import SweepSetup, mc_sd, pick_fixed_point, run_passes
from slrpipe.theory.replica.fields import Draw
from slrpipe.theory.replica.options import ReplicaTask, SolverOptions, SweepOptions, replica_task
from slrpipe.theory.replica.solver import CONJ, STATE
from slrpipe.theory.replica.stability import STABILITY, rs_stability

log = logging.getLogger(__name__)

OUTPUTS = (
    ("test_error", "train_loss", "objective")
    + STATE
    + CONJ
    + (
        "iterations",
        "residual",
        "converged",
        "wall_time",
        "Vhat_k_jac",
        "Vhat_v_jac",
        "prox_multi",
        "prox_unconverged",
        "train_loss_se",
    )
    + tuple(c + "_se" for c in CONJ)
)
ALT = ("test_error", "objective", "converged") + STATE


@dataclass
class _Results:
    """The arrays of a sweep being filled in, all (lam, alpha) unless stated (names as in the
    returned Dataset; ``data``: ``OUTPUTS`` and ``STABILITY``, ``alt``: ``*_alt``)."""

    data: dict
    alt: dict
    branch: np.ndarray  # 0: down pass, 1: up pass
    n_branches: np.ndarray
    mc_sd: np.ndarray
    mc_mean: np.ndarray
    key_scale: np.ndarray  # (lam,)
    reached: dict  # pass → alpha_reached_<pass>

    @classmethod
    def empty(cls, n_lam: int, n_alpha: int) -> _Results:
        shape = (n_lam, n_alpha)
        data = {k: np.full(shape, np.nan) for k in OUTPUTS}
        data["converged"] = np.zeros(shape, bool)
        data.update({k: np.full(shape, np.nan) for k in STABILITY})  # rs_stable: 1/0, NaN = not checked
        alt = {f"{k}_alt": np.full(shape, np.nan) for k in ALT}
        alt["converged_alt"] = np.zeros(shape, bool)
        return cls(
            data=data,
            alt=alt,
            branch=np.zeros(shape, np.int64),
            n_branches=np.zeros(shape, np.int64),
            mc_sd=np.full(shape, np.nan),
            mc_mean=np.full(shape, np.nan),
            key_scale=np.ones(n_lam),
            reached={p: np.full(shape, np.nan) for p in ("down", "up")},
        )


def _record_reached(res: _Results, i, passes) -> None:
    """alpha_reached_<pass> of row i; where a pass stopped at a fold, the points beyond it get the
    α its branch reached."""
    ends = {p: r[next(reversed(r))] for p, r in passes.items() if r}
    ends = {p: math.nan if r["converged"] else r["alpha_reached"] for p, r in ends.items()}
    for j in range(res.branch.shape[1]):
        for p, r in passes.items():
            res.reached[p][i, j] = r[j]["alpha_reached"] if j in r else ends.get(p, math.nan)


def _log_two(setup: SweepSetup, lam, alpha, pick, other) -> None:
    log.warning(
        "replica %s λ=%g α=%g: two fixed points (objective %.5f, e_test %.4f | %.5f, %.4f); "
        "reporting the lower objective",
        setup.sigma,
        lam,
        alpha,
        pick["objective"],
        pick["test_error"],
        other["objective"],
        other["test_error"],
    )


def _record_point(setup: SweepSetup, res: _Results, ij, lam, alpha, passes) -> None:
    """Fill point ij = (i, j) of ``res`` from the passes' results there (nothing where both
    passes stopped before it): the reported fixed point, the other one, its RS stability
    (docs/theory.md §11) and its Monte Carlo error over the extra seeds."""
    cands = [(b, passes[b].get(ij[1])) for b in ("down", "up")]
    cands = [(b, r) for b, r in cands if r is not None]
    if not cands:  # both passes stopped before this point: nothing solved here (NaN)
        return
    (b, pick), other, n_distinct = pick_fixed_point(cands)
    res.n_branches[ij], res.branch[ij] = n_distinct, int(b == "up")
    for k in OUTPUTS:
        res.data[k][ij] = pick[k]
    if setup.sw.stability and pick["converged"]:  # replicon at the reported point (docs/theory.md §11)
        st = rs_stability(
            setup.sigma, setup.fields, alpha, [pick[k] for k in STATE], n_steps=setup.opts.channel.n_steps
        )
        for k in STABILITY:
            res.data[k][ij] = float(st[k])
    if other is not None:
        for k in ALT:
            res.alt[f"{k}_alt"][ij] = other[1][k]
        _log_two(setup, lam, alpha, pick, other[1])
    if setup.sw.mc_seeds > 1 and pick["converged"]:
        res.mc_mean[ij], res.mc_sd[ij] = mc_sd(setup, lam, alpha, pick)


def _dataset(setup: SweepSetup, res: _Results, lams, alphas) -> xr.Dataset:
    """The Dataset of :func:`replica_sweep` from its filled-in results."""
    t = setup.task
    sigma, model, nu, L, delta = t.sigma, t.model, t.nu, t.L, t.delta
    sw, dims = setup.sw, ("lam", "alpha")
    ds = xr.Dataset(
        {k: (dims, v) for k, v in {**res.data, **res.alt}.items()},
        coords=dict(lam=lams, alpha=alphas, sigma=sigma, model=model, nu=float(nu), L=int(L), delta=float(delta)),
    )
    ds["branch"] = (dims, res.branch)
    ds["n_branches"] = (dims, res.n_branches)
    ds["key_scale"] = ("lam", res.key_scale)
    for p in ("down", "up"):
        ds[f"alpha_reached_{p}"] = (dims, res.reached[p])
    ds["test_error_mc_sd"] = (dims, res.mc_sd)
    ds["test_error_seed_mean"] = (dims, res.mc_mean)
    # the best λ of the grid at each α, among the converged points
    te = np.where(res.data["converged"], res.data["test_error"], np.inf)
    best = np.argmin(te, axis=0)
    opt = te[best, np.arange(alphas.size)]
    ds["test_error_opt_lam"] = ("alpha", np.where(np.isfinite(opt), opt, np.nan))
    ds["lam_opt"] = ("alpha", np.where(np.isfinite(opt), lams[best], np.nan))
    ds.attrs.update(
        n_samples=int(setup.fields.n),
        seed=int(setup.draw.seed),
        qmc=int(bool(setup.draw.qmc)),
        mc_seeds=int(sw.mc_seeds),
        two_way=int(bool(sw.two_way)),
        theory="replica-symmetric, zero temperature",
        solver_options=json.dumps(dataclasses.asdict(setup.opts)),
        sweep_options=json.dumps(dataclasses.asdict(sw)),
    )
    return ds


def _grid(name: str, symbol: str, values) -> np.ndarray:
    """The sorted grid as floats; ValueError for an empty one or a value ≤ 0."""
    grid = np.asarray(sorted(float(v) for v in values))
    if grid.size == 0 or np.any(grid <= 0):
        raise ValueError(f"{name}: need a non-empty grid of {symbol} > 0, got {grid.tolist()}")
    return grid


def _split_options(options, sweep, flat) -> tuple[SolverOptions, SweepOptions]:
    """(solver options, sweep options) with the flat names of ``flat`` put in their group."""
    sweep_names = {f.name for f in dataclasses.fields(SweepOptions)}
    sw = dataclasses.replace(sweep or SweepOptions(), **{k: v for k, v in flat.items() if k in sweep_names})
    opts = SolverOptions.build(options, **{k: v for k, v in flat.items() if k not in sweep_names})
    return opts, sw


def replica_sweep(
    task: ReplicaTask,
    lams,
    alphas,
    *,
    draw: Draw | None = None,
    options: SolverOptions | None = None,
    sweep: SweepOptions | None = None,
    **flat,
) -> xr.Dataset:
    """RS fixed points on the grid lams × alphas (docs/theory.md §9–10).

    Args:
        task: :class:`~slrpipe.theory.replica.options.ReplicaTask` (σ and the setting), as for :func:`~slrpipe.theory.replica.solver.solve_replica`.
        lams, alphas: 1-D sequences of positive floats (λ and α grids; sorted here).
        draw: :class:`~slrpipe.theory.replica.fields.Draw` (n_samples, seed, qmc) of the common
            random numbers: one draw, shared by every point (None: ``Draw()``; qmc: scrambled
            Sobol').
        options: :class:`SolverOptions` of every solve (defaults if None).
        sweep: :class:`SweepOptions` (defaults if None), among them
            two_way: also continue from the smallest α upwards and keep the lower-objective
            branch where the two passes disagree (:mod:`~slrpipe.theory.replica.continuation`). Costs a second pass over
            the small-α end of the grid.
            mc_seeds: number of independent draws of the common random numbers (seeds seed,
            seed + 1, …); each extra seed re-solves every point warm-started from the reported
            solution, and gives ``test_error_mc_sd``, the seed-to-seed standard deviation of the
            test error (the Monte Carlo error of one solve). 1: not measured (NaN).
        ``flat``: single options by name, replacing those of ``sweep`` (its field names) or of
            ``options`` (:meth:`SolverOptions.build` names: tol, max_iter, method, …).
    Returns:
        Dataset with dims (lam, alpha): every output of ``solve_replica`` (``OUTPUTS``) for the
        reported fixed point; ``branch`` (0/1: from the down/up pass); ``n_branches``
        (number of distinct converged fixed points found: 0, 1 or 2) and, for the other one,
        ``test_error_alt``, ``objective_alt``, ``converged_alt`` and the order parameters
        ``*_alt`` (NaN where there is none); ``key_scale`` (lam) of the down pass's cold start
        (``continuation._cold_start``); ``alpha_reached_down``/``alpha_reached_up``: how far each pass
        followed its branch towards the point (``continuation._step``; locates the folds);
        ``test_error_mc_sd`` and ``test_error_seed_mean`` (over the mc_seeds draws); plus test_error_opt_lam (alpha)
        = min over the λ grid of the converged points and lam_opt (alpha); the RS stability
        outputs ``stability.STABILITY`` (replicon, rs_stable as 1/0, …; NaN where the point did not
        converge; docs/theory.md §11). Scalar coords sigma,
        model, nu, L, delta; attrs n_samples, seed, qmc, mc_seeds, two_way.
    Raises:
        ValueError: empty or non-positive grids, mc_seeds < 1, or any argument of
            ``solve_replica``.
        TypeError: ``task`` not a ``ReplicaTask``.
    """
    lams, alphas = _grid("lams", "λ", lams), _grid("alphas", "α", alphas)
    opts, sw = _split_options(options, sweep, flat)
    task, draw = replica_task(task), Draw(*(draw or ()))
    setup = SweepSetup(task, draw.fields(task), draw, opts, sw)
    res = _Results.empty(lams.size, alphas.size)
    for i, lam in enumerate(lams):
        passes = run_passes(setup, lam, alphas)
        res.key_scale[i] = passes["down"][alphas.size - 1]["key_scale"]
        _record_reached(res, i, passes)
        for j in range(alphas.size):
            _record_point(setup, res, (i, j), lam, alphas[j], passes)
    return _dataset(setup, res, lams, alphas)
