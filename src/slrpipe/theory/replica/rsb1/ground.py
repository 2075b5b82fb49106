"""The 1RSB ground state of ridge ERM at one (λ, α): RS and the s scan on the same samples
(docs/theory.md §13), read by the zero-temperature rule of :mod:`slrpipe.theory.replica.rsb1.scan`."""

from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass

import numpy as np

from slrpipe.theory.replica.options import ReplicaTask, replica_task
from slrpipe.theory.replica.rsb1.channel import STATE1
from slrpipe.theory.replica.rsb1.sampling import Rsb1Draw
from slrpipe.theory.replica.rsb1.scan import ScanOptions, ScanResult, scan_potential
from slrpipe.theory.replica.rsb1.solve import SAMPLES, Rsb1Options, rs_state, solve_rsb1
from slrpipe.vocabulary import DEFAULTS

log = logging.getLogger(__name__)

#: the per-s quantities of a scan row that ``slrpipe rsb1`` stores, as ``scan_<name>`` in this order
#: (slrpipe.commands.rsb1.dataset)
STORED = (
    "phi",
    "phi_se",
    "sigma",
    "sigma_se",
    "energy_direct",
    "energy_direct_se",
    "test_error",
    "dq_k",
    "dq_v",
    "m_k",
    "m_v",
    "q1_k",
    "q1_v",
    "V_k",
    "V_v",
    "ess_median",
    "residual",
    "converged",
    "dqhat_k_n1_bias",
    "dqhat_v_n1_bias",
    "wall_time",
)
#: the per-s quantities kept of each solve (a scan row, and the solve at s*): s, the stored ones and
#: those the scan's rule and diagnostics read
SUMMARY = ("s", *STORED, "energy", "dqhat_k_se", "dqhat_v_se", "phi_out_n1_bias")
#: flags the scan's rule sets on a row (slrpipe.theory.replica.rsb1.scan), kept beside ``SUMMARY``
FLAGS = ("refined", "off_branch", "unphysical")

#: the RS solution kept beside the 1RSB
RS_KEYS = (
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
        "1RSB scan s=%g: Φ=%.6f ± %.6f e=%.6f ± %.6f Σ=%.3e ± %.1e e_test=%.5f δq̂ N₁-bias (%.2g, %.2g) vs s.e. "
        "(%.2g, %.2g), Φ_out N₁-bias %.2g, ESS %.1f",
        s,
        r["phi"],
        r["phi_se"],
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


def summary(row: dict) -> dict:
    """The ``SUMMARY`` and ``FLAGS`` of one scan row (a solve, or NaN with converged False for an s
    not solved)."""
    flags = {k: bool(row.get(k, False)) for k in FLAGS}
    if not row.get("solved", True):
        return dict.fromkeys(SUMMARY, math.nan) | {"s": row["s"], "converged": False, "wall_time": 0.0} | flags
    return {k: row[k] for k in SUMMARY} | flags


def _solver(solve, rs: dict, frac: float):
    """``solve(s, near)`` of :func:`scan_potential` over :func:`solve_rsb1` (``solve(s, init=, warm=)``):
    from the nearest solve's state and prox warm starts, or from the RS state with δq = frac·(q − m²)
    for the first and after a collapse to RS (δq ≈ 0)."""

    def at(s, near):
        if near is None or near["dq_k"] + near["dq_v"] < 1e-6 * frac:
            r = solve(s, init=rs_state(rs, frac), warm=None if near is None else near["prox_warm"])
        else:
            r = solve(s, init=np.array([near[k] for k in STATE1]), warm=near["prox_warm"])
        _log_scan(s, r)
        return r

    return at


@dataclass
class GroundState:
    """RS and the 1RSB s scan at one point: ``rs`` (``RS_KEYS``), ``scan`` (:class:`ScanResult`
    over :func:`solve_rsb1` results), n_outer N₀, n_inner N₁."""

    rs: dict
    scan: ScanResult
    n_outer: int
    n_inner: int

    @property
    def rows(self) -> list[dict]:
        """The scan rows' ``SUMMARY`` (ascending s)."""
        return [summary(r) for r in self.scan.rows]


def rsb1_ground_state(
    task: ReplicaTask,
    lam,
    alpha,
    *,
    draw: Rsb1Draw | None = None,
    s_grid=tuple(DEFAULTS["rsb1"]["s_grid"]),
    frac=DEFAULTS["rsb1"]["frac"],
    rs: dict | None = None,
    options: Rsb1Options | None = None,
    scan: ScanOptions | None = None,
) -> GroundState:
    """RS and 1RSB ground state of ridge ERM at one (λ, α) on the same samples (docs/theory.md §13).

    The RS fixed point (``solve_replica`` with the hard channel, ``softmin=None``, on the outer
    fields) starts the s scan of :func:`~slrpipe.theory.replica.rsb1.scan.scan_potential` (the
    zero-temperature rule: s* = argmax Φ where bracketed, else a lower bound), each s solved from
    the nearest solved s (the first from the RS state with δq = frac·(q − m²)).

    Args:
        task: :class:`~slrpipe.theory.replica.options.ReplicaTask` (σ and the setting), as for ``solve_replica``.
        lam: ridge λ > 0.  alpha: n/D > 0 (floats).
        draw: :class:`Rsb1Draw` (None: ``Rsb1Draw()``): N₀, N₁ and their seeds.
        s_grid: Parisi parameters (> 0) to start from.  frac: δq/(q − m²) of the first start.
        rs: an RS solution on the same fields to reuse.
        options: :class:`Rsb1Options` of every :func:`solve_rsb1` (defaults if None).
        scan: :class:`ScanOptions`, how far the grid may be extended (defaults if None).
    Returns:
        :class:`GroundState`.
    Raises:
        ValueError: as :func:`solve_rsb1`, or an empty / non-positive s_grid.
        TypeError: ``task`` not a ``ReplicaTask``.
    """
    from slrpipe.theory.replica.solver import solve_replica

    task = replica_task(task)
    if not len(s_grid) or min(s_grid) <= 0:
        raise ValueError(f"s_grid: need Parisi parameters > 0, got {list(s_grid)}")
    fields, inner = Rsb1Draw(*(draw or ())).samples(task)
    if rs is None:
        rs = solve_replica(task, lam, alpha, fields=fields, softmin=None)
    solve = functools.partial(solve_rsb1, task, float(lam), float(alpha), samples=(fields, inner), options=options)
    res = scan_potential(_solver(solve, rs, frac), s_grid, scan)
    for r in [*res.rows, *res.dropped, res.star or {}]:  # warm starts and samples: for the scan only
        for key in ("prox_warm", *SAMPLES):
            r.pop(key, None)
    return GroundState(rs={k: rs[k] for k in RS_KEYS}, scan=res, n_outer=fields.n, n_inner=inner.n)
