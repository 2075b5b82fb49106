"""The overlap panel of the complexity figure (slrpipe.figures.complexity): the ratios drawn are
1RSB's and RS's overlaps over ERM's ground state's, read from the comparison's rows, and an
overlap whose ERM value is within 2 s.e. of 0 is left out and named."""

from __future__ import annotations

import dataclasses

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from slrpipe.analysis.rows import Row
from slrpipe.figures.complexity import OVERLAPS, draw_overlaps, find_row


def _row(**rsb1) -> Row:
    core = {f.name: np.nan for f in dataclasses.fields(Row) if "group" not in f.metadata}
    core.update(experiment="e", sigma="softmax", lam=0.01, alpha=5.01, D=1024, n_seeds=5, erm_quantity="test_error")
    core.update(ground_starts="", rsb1_s_star=1.0, erm_overlaps_ref="ground D→∞")
    return Row(**(core | rsb1))


def _rep(m_k=2.0, m_v=3.0, q_k=40.0, q_v=9.0):
    coords = {"sigma": ["softmax"], "lam": [0.01], "alpha": [5.0]}
    shape = (1, 1, 1)
    return xr.Dataset(
        {k: (tuple(coords), np.full(shape, v)) for k, v in dict(m_k=m_k, m_v=m_v, q_k=q_k, q_v=q_v).items()},
        coords=coords,
    )


def test_overlap_ratios_are_drawn_over_ergs_ground_state():
    row = _row(
        rsb1_m_k=1.5, rsb1_m_k_batch_se=0.1, erm_m_k=1.0, erm_m_k_se=0.05,
        rsb1_m_v=2.0, rsb1_m_v_batch_se=0.1, erm_m_v=4.0, erm_m_v_se=0.1,
        rsb1_q1_k=60.0, rsb1_q1_k_batch_se=2.0, erm_q_k=30.0, erm_q_k_se=1.0,
        rsb1_q1_v=8.0, rsb1_q1_v_batch_se=0.5, erm_q_v=0.1, erm_q_v_se=0.2,
    )  # fmt: skip
    fig, ax = plt.subplots()
    draw_overlaps(ax, _rep(), "softmax", 0.01, 5.0, row)
    stars = [line for line in ax.lines if line.get_marker() == "*"]
    squares = [line for line in ax.lines if line.get_marker() == "D"]
    # q₁_v is left out: ERM's q_v = 0.1 ± 0.2 is within 2 s.e. of 0
    np.testing.assert_allclose([s.get_ydata()[0] for s in stars], [1.5, 0.5, 2.0])
    np.testing.assert_allclose([s.get_ydata()[0] for s in squares], [2.0, 0.75, 40.0 / 30.0])
    notes = [t.get_text() for t in ax.texts]
    assert notes == [f"left out (ERM ≈ 0): {OVERLAPS[3][2]}"]
    plt.close(fig)


def test_find_row_matches_the_point_and_nothing_else():
    row = _row()
    assert find_row([row], "e", "softmax", 0.01, 5.0) is row
    assert find_row([row], "e", "softmax", 0.01, 5.2) is None
    assert find_row([row], "e", "linear", 0.01, 5.0) is None
    assert find_row([row], "f", "softmax", 0.01, 5.0) is None
    assert find_row([dataclasses.replace(row, rsb1_s_star=None)], "e", "softmax", 0.01, 5.0) is None


def test_a_state_that_did_not_converge_is_named_not_drawn():
    nan = float("nan")
    row = _row(
        rsb1_m_k=nan, rsb1_m_k_batch_se=nan, erm_m_k=1.0, erm_m_k_se=0.05,
        rsb1_m_v=nan, rsb1_m_v_batch_se=nan, erm_m_v=4.0, erm_m_v_se=0.1,
        rsb1_q1_k=nan, rsb1_q1_k_batch_se=nan, erm_q_k=30.0, erm_q_k_se=1.0,
        rsb1_q1_v=nan, rsb1_q1_v_batch_se=nan, erm_q_v=9.0, erm_q_v_se=0.2,
    )  # fmt: skip
    fig, ax = plt.subplots()
    draw_overlaps(ax, _rep(), "softmax", 0.01, 5.0, row)
    assert not [line for line in ax.lines if line.get_marker() == "*"]
    assert len([line for line in ax.lines if line.get_marker() == "D"]) == 4  # RS is still drawn
    assert [t.get_text() for t in ax.texts] == [
        "1RSB state not converged: " + ", ".join(label for *_, label in OVERLAPS)
    ]
    plt.close(fig)
