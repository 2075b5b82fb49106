"""The s scan of the 1RSB and the ground state read off it (docs/theory.md §13)."""

from __future__ import annotations

import functools
import logging
import math

import numpy as np

from slrpipe.theory.replica.options import ReplicaTask
from slrpipe.theory.replica.rsb1.channel import STATE1
from slrpipe.theory.replica.rsb1.sampling import Rsb1Draw
from slrpipe.theory.replica.rsb1.solve import Rsb1Options, rs_state, solve_rsb1

log = logging.getLogger(__name__)

_SUMMARY = (
    "s",
    "phi",
    "sigma",
    "sigma_se",
    "energy",
    "energy_direct",
    "energy_direct_se",
    "test_error",
    "dq_k",
    "dq_v",
    "q1_k",
    "q1_v",
    "m_k",
    "m_v",
    "V_k",
    "V_v",
    "ess_median",
    "residual",
    "converged",
    "dqhat_k_n1_bias",
    "dqhat_v_n1_bias",
    "dqhat_k_se",
    "dqhat_v_se",
    "phi_out_n1_bias",
    "wall_time",
)


_RS_KEYS = (
    "objective",
    "test_error",
    "train_loss",
    "train_loss_se",
    "m_k",
    "q_k",
    "V_k",
    "m_v",
    "q_v",
    "V_v",
    "residual",
    "converged",
)


def _log_scan(s, r) -> None:
    log.info(
        "1RSB scan s=%g: Φ=%.6f e=%.6f ± %.6f Σ=%.3e ± %.1e e_test=%.5f δq̂ N₁-bias (%.2g, %.2g) vs s.e. "
        "(%.2g, %.2g), Φ_out N₁-bias %.2g, ESS %.1f",
        s,
        r["phi"],
        r["energy_direct"],
        r["energy_direct_se"],
        r["sigma"],
        r["sigma_se"],
        r["test_error"],
        r["dqhat_k_n1_bias"],
        r["dqhat_v_n1_bias"],
        r["dqhat_k_se"],
        r["dqhat_v_se"],
        r["phi_out_n1_bias"],
        r["ess_median"],
    )


def _scan(solve, grid, rs, frac, stop_after_physical=True):
    """Solve at each s of the ascending ``grid`` (``solve(s, init=, warm=)``: :func:`solve_rsb1` at
    the point), each from the previous one's state and warm starts (the first, and any after a
    collapse to RS, from the RS state with δq = frac·(q − m²)). With ``stop_after_physical``, once
    the physical part has ended (:func:`physical_closed`) the remaining s are not solved: no row
    after that turn is physical, so they change neither the state reported nor s* (a crossing
    there lies off the physical part; slrpipe.store.rsb1), only the unphysical tail of Σ(e); their
    rows are NaN, not converged. Returns (summaries ``_SUMMARY``, full results or None)."""
    x, warm, scan, sols = rs_state(rs, frac), None, [], []
    for s in grid:
        if stop_after_physical and physical_closed(scan):
            log.info("1RSB scan s=%g: not solved, the physical part ended before it", s)
            scan.append(dict.fromkeys(_SUMMARY, math.nan) | {"s": float(s), "converged": False, "wall_time": 0.0})
            sols.append(None)
            continue
        r = solve(s, init=x, warm=warm)
        sols.append(r)
        _log_scan(s, r)
        scan.append({k: r[k] for k in _SUMMARY})
        x, warm = np.array([r[k] for k in STATE1]), r["prox_warm"]
        if r["dq_k"] + r["dq_v"] < 1e-6 * frac:  # collapsed to RS: re-seed the next s
            x = rs_state(rs, frac)
    return scan, sols


def _star(solve, scan, sols) -> dict | None:
    """The summary at s*, where Σ crosses zero from above between two successive converged grid
    points (a row that did not converge between them is passed over: its Σ is not a solution's; s*
    by linear interpolation, solved from the nearer one by ``solve`` as in :func:`_scan`); None
    where it does not."""
    done = [i for i, r in enumerate(scan) if r["converged"]]
    for i, j in zip(done, done[1:]):
        a, b = scan[i], scan[j]
        if a["sigma"] > 0 >= b["sigma"]:
            s_star = a["s"] + (b["s"] - a["s"]) * a["sigma"] / (a["sigma"] - b["sigma"])
            near = sols[i] if s_star - a["s"] < b["s"] - s_star else sols[j]
            r = solve(s_star, init=np.array([near[k] for k in STATE1]), warm=near["prox_warm"])
            return {k: r[k] for k in _SUMMARY}
    return None


#: a converged scan row "rises" when its e(s) exceeds the previous one's by more than this many of
#: its outer s.e. (:func:`physical`, :func:`physical_closed`: one rule for both)
RISE_REL_TOL = 0.1


def _turns(scan, rel_tol):
    """(converged rows, rises, start): the converged rows of finite energy, whether each rises
    above the previous one by more than ``rel_tol`` × its outer s.e., and the first one that the
    next does not rise above (None where every one rises)."""
    conv = [i for i, r in enumerate(scan) if r["converged"] and math.isfinite(r["energy_direct"])]
    e = lambda i: scan[i]["energy_direct"]
    rises = [e(b) > e(a) + rel_tol * scan[b]["energy_direct_se"] for a, b in zip(conv, conv[1:])]
    return conv, rises, next((k for k, up in enumerate(rises) if not up), None)


def physical(scan, rel_tol: float = RISE_REL_TOL) -> np.ndarray:
    """Which rows of an s scan (``rsb1_ground_state(...)["scan"]``, ascending s) lie on the physical
    part of the complexity curve, where de/ds ≤ 0 (Σ(e) concave, docs/theory.md §13). A converged
    row "rises" when its e(s) exceeds the previous converged row's by more than ``rel_tol`` × its
    outer s.e. (the energies of one scan share their samples, so their differences are far less
    noisy than that s.e.). The physical part starts at the first converged row that the next one
    does not rise above — where e(s) stops rising: a scan that starts at small s on the convex
    branch (de/ds > 0, Σ → 0⁺ as s → 0) reaches the concave one only there — and runs up to the
    next rise; every row after that turn is not physical. Where every converged row rises, the
    first one alone (its Φ is still a lower bound of e_gs).

    Returns:
        bool array, one per row.
    """
    conv, rises, start = _turns(scan, rel_tol)
    start = start or 0
    stop = next((k + 1 for k in range(start, len(rises)) if rises[k]), len(conv))
    out = np.zeros(len(scan), bool)
    out[conv[start:stop]] = True
    return out


def physical_closed(scan, rel_tol: float = RISE_REL_TOL) -> bool:
    """Whether the physical part of the rows so far (:func:`physical`) is final: it has started (a
    converged row the next one does not rise above) and ended (a later rise). Rows added after
    that are never physical, whatever they are; before it, a later row can still start or extend
    the physical part (a scan on the convex branch, where every row so far rises)."""
    _, rises, start = _turns(scan, rel_tol)
    return start is not None and any(rises[start:])


def rsb1_ground_state(
    task: ReplicaTask,
    lam,
    alpha,
    *,
    draw: Rsb1Draw | None = None,
    s_grid=(0.5, 1.0, 2.0, 4.0, 8.0),
    frac=0.05,
    rs: dict | None = None,
    options: Rsb1Options | None = None,
    stop_after_physical: bool = True,
) -> dict:
    """RS and 1RSB ground state of ridge ERM at one (λ, α) on the same samples (docs/theory.md §13).

    The RS fixed point (``solve_replica`` with the hard channel, ``softmin=None``, on the outer
    fields) starts a scan over ``s_grid`` (ascending, each s warm-started from the previous one; the
    first from the RS state with δq = frac·(q − m²)). The ground state is where Σ(s) crosses zero from
    above: s* by linear interpolation of Σ between the bracketing converged grid points (rows that
    did not converge are passed over), then one more solve at s*. Where Σ > 0 on the whole grid no crossing is claimed (``star`` is None; the largest Φ on
    the grid is then only a lower bound of e_gs).

    Args:
        task: :class:`~slrpipe.theory.replica.options.ReplicaTask` (sigma, model, nu, L, delta),
            or a plain tuple of those five, as for ``solve_replica``.
        lam: ridge λ > 0.  alpha: n/D > 0 (floats).
        draw: :class:`Rsb1Draw` (None: ``Rsb1Draw()``): n_outer N₀ (outer QMC samples, the RS
            sample size), n_inner N₁ (multiple of 4), seed / inner_seed their seeds.
        s_grid: Parisi parameters (> 0), a sequence of floats.  frac: δq/(q − m²) of the first
            start (float).  rs: an RS solution on the same fields to reuse.
        options: :class:`Rsb1Options` of every :func:`solve_rsb1` (defaults if None).
        stop_after_physical: leave the s after the end of the physical part unsolved (NaN rows,
            :func:`_scan`); False solves the whole grid (the unphysical tail of Σ(e) too).
    Returns:
        dict: rs (the RS solution: objective, test_error, train_loss(+_se), order parameters,
        residual, converged), scan (list of per-s summaries, keys ``_SUMMARY``), star (the summary at
        s*, or None), e_gs (Φ(s*) or NaN), test_error_gs, n_outer, n_inner.
    Raises:
        ValueError: as :func:`solve_rsb1`, or an empty / non-positive s_grid.
        TypeError: ``task`` not of five fields.
    """
    from slrpipe.theory.replica.solver import solve_replica

    task = ReplicaTask(*task).normalised()
    grid = sorted(float(v) for v in s_grid)
    if not grid or grid[0] <= 0:
        raise ValueError(f"s_grid: need Parisi parameters > 0, got {list(s_grid)}")
    fields, inner = Rsb1Draw(*(draw or ())).samples(task)
    if rs is None:
        rs = solve_replica(task, lam, alpha, fields=fields, softmin=None)
    solve = functools.partial(solve_rsb1, task, float(lam), float(alpha), samples=(fields, inner), options=options)
    scan, sols = _scan(solve, grid, rs, frac, stop_after_physical)
    star = _star(solve, scan, sols)
    return {
        "rs": {k: rs[k] for k in _RS_KEYS},
        "scan": scan,
        "star": star,
        "e_gs": star["phi"] if star else math.nan,
        "test_error_gs": star["test_error"] if star else math.nan,
        "n_outer": fields.n,
        "n_inner": inner.n,
    }
