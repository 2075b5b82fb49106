"""The 1RSB state a point reports, read off its s scan (docs/theory.md §13, "the state reported").

A ``slrpipe rsb1`` file holds the scan over the Parisi parameter s and, where Σ(s) crosses zero
between two converged rows, the solve at that s*. The state reported — the ``objective``,
``test_error``, δq, ``distance``, m, q₁ the store, the validation table and fig3 read — is:

- the solve at s*, where s* lies within the physical part of the scan (the run of converged rows
  with de/ds ≤ 0 from where e(s) stops rising to where it turns up again, ``scan_physical``,
  slrpipe.theory.replica.rsb1.physical; Σ(e) concave there);
- else the converged physical row of largest Φ: Φ(s) ≤ e_gs at every s, so its Φ is a lower bound
  of the ground-state energy (``lower_bound`` true), and its test error that of a typical state at
  that s — this is also the answer where 1RSB collapses onto RS (δq ≈ 0, Φ = e_RS at every s) or
  where Σ > 0 over the whole physical part. Where that row lies inside the physical part, between
  two converged physical rows of lower Φ (``phi_max_inside`` true), Φ(s) has its maximum between
  them: dΦ/ds = Σ/s² changes sign there, so s* lies in that bracket and the bound is e_gs up to
  the grid's resolution (Σ's own estimate may still miss the sign change within its Monte Carlo
  error); where it is the physical part's last row Φ may still rise beyond it;
- NaN where no row of the scan is converged and physical (not solved).

:func:`choose` is the rule on plain arrays; ``scripts/rsb1_gap_table.py`` (the docs' table) uses it
too, so the workflow and the table report the same state. :func:`gap_closed` is the fraction of
the RS–ERM gap that state closes, for both as well, and :func:`gap_closed_se` its standard error.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

#: an RS–ERM gap below this many standard errors is not resolved: no fraction of it is closed ("no gap")
MIN_GAP_Z = 2.0

#: point variables replaced by the physical row of largest Φ: (point name, scan name)
_FROM_SCAN = (
    ("objective", "scan_phi"),
    ("objective_se", "scan_energy_se"),
    ("test_error", "scan_test_error"),
    ("dq_k", "scan_dq_k"),
    ("dq_v", "scan_dq_v"),
    ("m_k", "scan_m_k"),
    ("m_v", "scan_m_v"),
    ("q1_k", "scan_q1_k"),
    ("q1_v", "scan_q1_v"),
)


def choose(s, ok, phi, s_star) -> tuple[bool, int | None]:
    """The rule of the module docstring on plain arrays: (keep s*, the row of largest Φ among the
    rows ``ok`` — converged and physical — or None where there is none). ``s``, ``ok``, ``phi``:
    per scan row (ascending s); ``s_star``: the crossing (NaN or None: none)."""
    s, ok, phi = np.asarray(s, float), np.asarray(ok, bool), np.asarray(phi, float)
    if not ok.any():
        return False, None
    if s_star is not None and np.isfinite(s_star) and s[ok].min() <= s_star <= s[ok].max():
        return True, None
    return False, int(np.flatnonzero(ok)[np.argmax(phi[ok])])


def reported(ds: xr.Dataset) -> xr.Dataset:
    """One 1RSB point's file with its point variables at the state reported (module docstring).

    Args:
        ds: a ``slrpipe rsb1`` result (``slrpipe.commands.rsb1.dataset``: dim s, the ``scan_*``
            variables, ``s_star`` and the point variables at s*).
    Returns:
        A copy with ``s_star`` NaN where the crossing lies off the physical part, the point
        variables (``objective`` ± ``objective_se``, ``test_error``, ``dq_k``, ``dq_v``,
        ``distance`` = 2(δq_k + δq_v), ``m_*``, ``q1_*``, ``converged``) at the state reported, and
        three new scalars: ``s_reported`` (its s; NaN: not solved), ``lower_bound`` (true where the
        state is the largest Φ, not s*) and ``phi_max_inside`` (true where that largest Φ lies
        between two converged physical rows of lower Φ: s* bracketed by them).
    Raises:
        KeyError: a variable of the rsb1 result missing.
    """
    s = ds["s"].values
    ok = ds["scan_physical"].values.astype(bool) & ds["scan_converged"].values.astype(bool)
    s_star = float(ds["s_star"])
    keep_star, i = choose(s, ok, ds["scan_phi"].values, s_star)
    out = ds.copy()
    if keep_star:
        return out.assign(s_reported=((), s_star), lower_bound=((), False), phi_max_inside=((), False))
    out["s_star"] = ((), np.nan)
    if i is None:
        for name, _ in _FROM_SCAN:
            out[name] = ((), np.nan)
        out["distance"] = ((), np.nan)
        out["converged"] = ((), False)
        return out.assign(s_reported=((), np.nan), lower_bound=((), False), phi_max_inside=((), False))
    for name, scan in _FROM_SCAN:
        out[name] = ((), float(ds[scan].values[i]))
    out["distance"] = ((), 2.0 * (float(out["dq_k"]) + float(out["dq_v"])))
    out["converged"] = ((), True)
    inside = max_inside(ok, ds["scan_phi"].values, i)
    return out.assign(s_reported=((), float(s[i])), lower_bound=((), True), phi_max_inside=((), inside))


def max_inside(ok, phi, i: int) -> bool:
    """Whether row ``i`` (the largest Φ among the rows ``ok``) has a row of ``ok`` on each side
    whose Φ is lower: Φ(s) then peaks between those two rows, where Σ = s² dΦ/ds changes sign.
    ``ok``, ``phi``: per scan row, ascending s."""
    rows = list(np.flatnonzero(np.asarray(ok, bool)))
    k = rows.index(i)
    if k == 0 or k == len(rows) - 1:
        return False
    phi = np.asarray(phi, float)
    return bool(phi[rows[k - 1]] < phi[i] and phi[rows[k + 1]] < phi[i])


def gap_closed(x: float, rs: float, erm: float, erm_se: float = np.nan, rs_se: float = np.nan) -> tuple[float, float]:
    """The fraction of the RS–ERM gap that the 1RSB value ``x`` closes, (x − rs)/(erm − rs), and
    the gap in standard errors, z = (erm − rs)/√(erm_se² + rs_se²) (the s.e. given; docs/theory.md §13).

    Args:
        x, rs, erm: the 1RSB, RS and ERM values of one quantity (objective or test error).
        erm_se, rs_se: their standard errors (NaN: unknown, left out of z).
    Returns:
        (fraction, z): fraction NaN where a value is missing, erm = rs, or |z| < ``MIN_GAP_Z`` (the
        gap is not resolved); z NaN where neither s.e. is known (the fraction is then unjudged).
    """
    if not all(np.isfinite(v) for v in (x, rs, erm)) or erm == rs:
        return np.nan, np.nan
    se = float(np.hypot(*(s if np.isfinite(s) else 0.0 for s in (erm_se, rs_se))))
    z = (erm - rs) / se if se > 0 else np.nan
    return (np.nan if abs(z) < MIN_GAP_Z else (x - rs) / (erm - rs)), z


def gap_closed_se(fraction: float, x_se: float, rs: float, erm: float, erm_se: float) -> float:
    """The standard error of the fraction f = (x − rs)/(erm − rs) of :func:`gap_closed`, from the
    1RSB value's s.e. ``x_se`` (batch means) and ERM's ``erm_se``: √(x_se² + f² erm_se²)/|erm − rs|.
    RS's own error is left out: RS is solved on the 1RSB state's samples, so the two errors are
    largely common and cancel in x − rs. NaN where f or x_se is missing (an unknown ERM s.e. counts
    as 0)."""
    if not all(np.isfinite(v) for v in (fraction, x_se, rs, erm)) or erm == rs:
        return np.nan
    e = erm_se if np.isfinite(erm_se) else 0.0
    return float(np.hypot(x_se, fraction * e) / abs(erm - rs))
