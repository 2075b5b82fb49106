"""One row of the ERM-vs-theory comparison, typed: :class:`Row` (slrpipe.analysis.comparison
builds them, slrpipe.analysis.render and slrpipe.analysis.tables and the figure 'validation' read
them; docs/results.md §2).

A row is one (experiment, σ, λ, α) point. Its fields come in three groups: the core (every row),
the D-ladder group (``LADDER_COLUMNS``: an ERM experiment with a D ladder) and the 1RSB group
(``RSB1_COLUMNS``: a replica experiment that solved 1RSB); a row outside a group has None in each
of that group's fields. ``results/validation.json`` is the list of :meth:`Row.to_dict` (a group
left out where it is None), read back by :func:`read_rows`. Numbers are floats (NaN: not
measured), counts ints, flags bools.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields


def _ladder():
    return field(default=None, metadata={"group": "ladder"})


def _rsb1():
    return field(default=None, metadata={"group": "rsb1"})


@dataclass(frozen=True)
class Row:
    """The comparison at one point (slrpipe.analysis.comparison, module docstring: what each
    quantity is and how it is computed)."""

    # the point
    experiment: str  # the replica experiment
    sigma: str
    lam: float
    alpha: float  # ERM's realised α = n/D
    D: int  # the largest D (-1: unknown)
    n_seeds: int
    # ERM, informed start, mean ± s.e. over seeds
    erm_quantity: str  # the store variable compared: test_error_pop, else test_error
    erm_mean: float
    erm_se: float
    erm_test: float  # finite-test-set error, seed mean
    erm_objective: float  # α·J
    # the ground state over starts (slrpipe.analysis.ground)
    ground_mean: float
    ground_se: float
    ground_objective: float
    ground_starts: str  # 'k/n not informed'; '' without starts
    erm_converged: float  # fraction of seeds ended by the gradient test (NaN: not recorded)
    ground_converged: float
    # the replica theory at (σ, λ, α) (slrpipe.analysis.replica: log-α interpolation)
    theory: float
    theory_mc_sd: float
    theory_objective: float
    theory_alt: float  # the second RS fixed point's test error
    reached_down: float
    reached_up: float
    replicon: float
    rs_stable: float  # 1.0 / 0.0, NaN: not computed
    theory_converged: bool
    n_branches: int  # -1: not covered
    theory_n_samples: int
    prox_ties: float  # a count, NaN: not computed
    theory_mc_se: float
    ill_conditioned: bool
    verdict: str  # slrpipe.analysis.verdict
    # the enforced check
    z: float
    rel_diff: float
    enforced: bool
    agrees: bool
    # D ladder (per-D seed means, D → ∞ fits; slrpipe.analysis.ladder)
    ladder_D: list[int] | None = _ladder()
    ladder_erm: list[float] | None = _ladder()
    ladder_erm_se: list[float] | None = _ladder()
    erm_limit: float | None = _ladder()
    erm_limit_se: float | None = _ladder()
    erm_law: str | None = _ladder()
    erm_chi2_dof: float | None = _ladder()
    erm_fit_p: float | None = _ladder()
    erm_fit_ok: bool | None = _ladder()
    z_limit: float | None = _ladder()
    ladder_ground_D: list[int] | None = _ladder()
    ladder_ground: list[float] | None = _ladder()
    ladder_ground_se: list[float] | None = _ladder()
    ground_limit: float | None = _ladder()
    ground_limit_se: float | None = _ladder()
    ground_law: str | None = _ladder()
    ground_chi2_dof: float | None = _ladder()
    ground_fit_p: float | None = _ladder()
    ground_fit_ok: bool | None = _ladder()
    z_ground_limit: float | None = _ladder()
    # 1RSB at the state reported (slrpipe.analysis.rsb1), its batch-means errors, the ERM reference
    # and the fraction of the RS–ERM gap closed (slrpipe.analysis.rsb1_columns)
    # (the rule: slrpipe.theory.replica.rsb1.scan; bracketed, the checks of s*, lower bound)
    rsb1_s_star: float | None = _rsb1()
    rsb1_s_reported: float | None = _rsb1()
    rsb1_bracketed: float | None = _rsb1()
    rsb1_lower_bound: float | None = _rsb1()
    rsb1_branch_lost: float | None = _rsb1()
    rsb1_checked: float | None = _rsb1()
    rsb1_star_sigma: float | None = _rsb1()
    rsb1_star_sigma_se: float | None = _rsb1()
    rsb1_star_sigma_fd: float | None = _rsb1()
    rsb1_star_sigma_fd_se: float | None = _rsb1()
    rsb1_star_de_ds: float | None = _rsb1()
    rsb1_sigma_scale: float | None = _rsb1()
    rsb1_objective: float | None = _rsb1()
    rsb1_objective_se: float | None = _rsb1()
    rsb1_test_error: float | None = _rsb1()
    rsb1_distance: float | None = _rsb1()
    rsb1_m_k: float | None = _rsb1()
    rsb1_m_v: float | None = _rsb1()
    rsb1_q1_k: float | None = _rsb1()
    rsb1_q1_v: float | None = _rsb1()
    rsb1_converged: float | None = _rsb1()
    rsb1_rs_objective: float | None = _rsb1()
    rsb1_rs_test_error: float | None = _rsb1()
    rsb1_rs_objective_se: float | None = _rsb1()
    rsb1_objective_batch_se: float | None = _rsb1()
    rsb1_test_error_batch_se: float | None = _rsb1()
    rsb1_distance_batch_se: float | None = _rsb1()
    rsb1_m_k_batch_se: float | None = _rsb1()
    rsb1_m_v_batch_se: float | None = _rsb1()
    rsb1_q1_k_batch_se: float | None = _rsb1()
    rsb1_q1_v_batch_se: float | None = _rsb1()
    rsb1_objective_batch_bias: float | None = _rsb1()
    rsb1_test_error_batch_bias: float | None = _rsb1()
    # RS and the state at 2N₀ outer samples (rsb1.n0_check; NaN: not checked)
    rsb1_n0x2_rs_objective: float | None = _rsb1()
    rsb1_n0x2_rs_test_error: float | None = _rsb1()
    rsb1_n0x2_objective: float | None = _rsb1()
    rsb1_n0x2_test_error: float | None = _rsb1()
    rsb1_n0x2_converged: float | None = _rsb1()
    rsb1_batches_converged: float | None = _rsb1()
    rsb1_complexity: float | None = _rsb1()
    rsb1_complexity_se: float | None = _rsb1()
    rsb1_erm_objective: float | None = _rsb1()
    rsb1_erm_objective_se: float | None = _rsb1()
    rsb1_erm_test: float | None = _rsb1()
    rsb1_erm_test_se: float | None = _rsb1()
    rsb1_erm_ref: str | None = _rsb1()
    gap_closed_objective: float | None = _rsb1()
    gap_closed_test: float | None = _rsb1()
    gap_z_objective: float | None = _rsb1()
    gap_z_test: float | None = _rsb1()
    gap_closed_objective_se: float | None = _rsb1()
    gap_closed_test_se: float | None = _rsb1()
    erm_distance: float | None = _rsb1()
    erm_distance_se: float | None = _rsb1()
    # ERM's ground-state overlaps beside 1RSB's m_k, m_v, q₁_k, q₁_v (D → ∞ where fitted)
    erm_m_k: float | None = _rsb1()
    erm_m_k_se: float | None = _rsb1()
    erm_m_v: float | None = _rsb1()
    erm_m_v_se: float | None = _rsb1()
    erm_q_k: float | None = _rsb1()
    erm_q_k_se: float | None = _rsb1()
    erm_q_v: float | None = _rsb1()
    erm_q_v_se: float | None = _rsb1()
    erm_overlaps_ref: str | None = _rsb1()
    # the convergence in N₀: the larger drift of RS and the state per quantity, 1/0 within half the
    # 1RSB correction (NaN: not checked)
    rsb1_n0_drift_objective: float | None = _rsb1()
    rsb1_n0_drift_test: float | None = _rsb1()
    rsb1_mc_converged: float | None = _rsb1()

    @property
    def has_ladder(self) -> bool:
        """Whether the row has the D-ladder group (its ERM experiment has a D ladder)."""
        return self.ladder_D is not None

    @property
    def has_rsb1(self) -> bool:
        """Whether the row has the 1RSB group (its replica experiment solved 1RSB)."""
        return self.rsb1_s_star is not None

    def to_dict(self) -> dict:
        """The row as ``results/validation.json`` holds it: every field in order, a group left out
        where the row lacks it."""
        absent = {g for g, has in (("ladder", self.has_ladder), ("rsb1", self.has_rsb1)) if not has}
        return {f.name: getattr(self, f.name) for f in fields(self) if f.metadata.get("group") not in absent}

    @classmethod
    def from_dict(cls, d: dict) -> Row:
        """A row from its :meth:`to_dict` form (a JSON object of ``results/validation.json``).

        Raises:
            ValueError: a key that is no field, or a core field missing.
        """
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"validation row: unknown columns {unknown}")
        missing = sorted(f.name for f in fields(cls) if "group" not in f.metadata and f.name not in d)
        if missing:
            raise ValueError(f"validation row: missing columns {missing}")
        return cls(**d)


def _columns(group: str | None) -> list[str]:
    return [f.name for f in fields(Row) if f.metadata.get("group") == group]


#: the columns of every row, of a D-ladder row and of a 1RSB row (the fields of :class:`Row`)
COLUMNS = _columns(None)
LADDER_COLUMNS = _columns("ladder")
RSB1_COLUMNS = _columns("rsb1")


def to_json(rows: list[Row]) -> str:
    """``rows`` as indented JSON (``results/validation.json``); NumPy scalars as floats, NaN as NaN."""
    return json.dumps([r.to_dict() for r in rows], indent=1, default=float)


def read_rows(path) -> list[Row]:
    """The rows of ``path`` (``results/validation.json``, :func:`to_json`).

    Raises:
        ValueError: a row with an unknown or a missing column (:meth:`Row.from_dict`).
    """
    with open(path) as f:
        return [Row.from_dict(d) for d in json.load(f)]
