"""The 1RSB point against RS and ERM: the fraction of the RS–ERM gap it closes (docs/theory.md §13).

A ``slrpipe rsb1`` file holds the s scan and the state the zero-temperature rule reports
(slrpipe.theory.replica.rsb1.scan, written by slrpipe.commands.rsb1.dataset): at s* = argmax Φ
where a maximum of Φ(s) is bracketed (``bracketed``), else the converged row of largest Φ, whose
objective is then only a lower bound of e_gs (``lower_bound``). :func:`gap_closed` is the fraction
of the RS–ERM gap that state closes and :func:`gap_closed_se` its standard error.
"""

from __future__ import annotations

import numpy as np

#: an RS–ERM gap below this many standard errors is not resolved: no fraction of it is closed ("no gap")
MIN_GAP_Z = 2.0


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
