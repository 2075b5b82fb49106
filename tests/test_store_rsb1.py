"""The 1RSB state a point reports (slrpipe.analysis.rsb1.reported): s* on the physical part of the s
scan, else the converged physical row of largest Φ (a lower bound of the ground-state energy), else
not solved."""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from slrpipe.analysis.rsb1 import reported

S = [0.3, 1.0, 2.0, 4.0]
PHI = [0.30, 0.32, 0.31, 0.50]


def _point(s_star, physical, converged, star_phi=0.9):
    """A ``slrpipe rsb1`` result on the grid S: scan rows i carry Φ = PHI[i], test error 1 + i,
    δq = (i + 1, 0.1(i + 1)), m, q₁ distinct per row; the point variables those of a solve at s*."""
    i = np.arange(len(S), dtype=float)
    scan = {
        "scan_phi": PHI,
        "scan_energy_se": 0.01 * (i + 1),
        "scan_test_error": 1 + i,
        "scan_dq_k": i + 1,
        "scan_dq_v": 0.1 * (i + 1),
        "scan_m_k": 10 + i,
        "scan_m_v": 20 + i,
        "scan_q1_k": 30 + i,
        "scan_q1_v": 40 + i,
        "scan_physical": np.array(physical, bool),
        "scan_converged": np.array(converged, bool),
    }
    data = {k: ("s", np.asarray(v)) for k, v in scan.items()}
    at = dict(objective=star_phi, objective_se=0.5, test_error=0.7, dq_k=5.0, dq_v=0.5, m_k=1.0, m_v=2.0)
    at.update(q1_k=3.0, q1_v=4.0, distance=11.0)
    data.update({k: ((), v) for k, v in at.items()})
    data.update(s_star=((), s_star), converged=((), math.isfinite(s_star)))
    return xr.Dataset(data, coords={"s": S})


def test_s_star_on_the_physical_part_is_kept():
    out = reported(_point(1.5, [1, 1, 1, 0], [1, 1, 1, 1]))
    assert float(out.s_star) == 1.5 and float(out.s_reported) == 1.5 and not bool(out.lower_bound)
    assert float(out.objective) == 0.9 and float(out.test_error) == 0.7 and float(out.distance) == 11.0


def test_s_star_beyond_the_physical_part_falls_back_to_the_largest_phi_there():
    # crossing at s* = 3 between rows 2 and 3, but the physical part ends at row 1 (s = 1)
    out = reported(_point(3.0, [1, 1, 0, 0], [1, 1, 1, 1]))
    assert math.isnan(float(out.s_star))
    assert float(out.s_reported) == 1.0 and bool(out.lower_bound) and bool(out.converged)
    assert float(out.objective) == 0.32 and float(out.objective_se) == 0.02
    assert float(out.test_error) == 2.0
    assert (float(out.dq_k), float(out.dq_v), float(out.distance)) == (2.0, 0.2, 4.4)
    assert (float(out.m_k), float(out.m_v), float(out.q1_k), float(out.q1_v)) == (11.0, 21.0, 31.0, 41.0)


def test_no_crossing_takes_the_largest_phi_among_converged_physical_rows():
    # row 2 has the largest Φ among physical rows (0.31 < 0.32 of row 1), but row 1 did not converge
    out = reported(_point(math.nan, [1, 1, 1, 0], [1, 0, 1, 1]))
    assert float(out.s_reported) == 2.0 and float(out.objective) == 0.31 and float(out.test_error) == 3.0


def test_nothing_converged_and_physical_is_not_solved():
    out = reported(_point(math.nan, [0, 0, 0, 0], [1, 1, 1, 1]))
    assert math.isnan(float(out.s_reported)) and not bool(out.converged) and not bool(out.lower_bound)
    for name in ("objective", "objective_se", "test_error", "dq_k", "distance", "m_k", "q1_v"):
        assert math.isnan(float(out[name])), name


def test_s_star_before_the_physical_part_falls_back_to_the_largest_phi_there():
    # the scan starts on the convex branch: physical rows 2, 3 only; a crossing at s* = 0.5 (rows 0–1)
    # lies off that part, so the largest Φ on it (row 3, s = 4) is reported
    out = reported(_point(0.5, [0, 0, 1, 1], [1, 1, 1, 1]))
    assert math.isnan(float(out.s_star)) and float(out.s_reported) == 4.0 and bool(out.lower_bound)
    assert float(out.objective) == 0.50


def test_a_largest_phi_between_lower_physical_rows_brackets_s_star():
    """``phi_max_inside``: the largest Φ of the physical part with a converged physical row of lower
    Φ on each side (Φ peaks between them, Σ = s² dΦ/ds changes sign there); not at the part's ends,
    not beside a row that did not converge (its neighbour in s is then the next converged row), and
    false at s*."""
    out = reported(_point(math.nan, [1, 1, 1, 0], [1, 1, 1, 1]))  # Φ 0.30, 0.32, 0.31 on rows 0–2
    assert float(out.s_reported) == 1.0 and bool(out.lower_bound) and bool(out.phi_max_inside)
    assert not bool(reported(_point(math.nan, [1, 1, 0, 0], [1, 1, 1, 1])).phi_max_inside)  # last row
    assert not bool(reported(_point(math.nan, [0, 0, 1, 1], [1, 1, 1, 1])).phi_max_inside)  # Φ still rising
    assert not bool(reported(_point(math.nan, [1, 1, 1, 0], [1, 1, 0, 1])).phi_max_inside)  # row 2 not converged
    assert not bool(reported(_point(1.5, [1, 1, 1, 0], [1, 1, 1, 1])).phi_max_inside)  # s* itself
    assert not bool(reported(_point(math.nan, [0, 0, 0, 0], [1, 1, 1, 1])).phi_max_inside)  # not solved
