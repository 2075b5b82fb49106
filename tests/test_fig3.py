"""Fig. 3 draws the replica theory solid where the RS fixed point is stable and dashed on every α
interval touching an unstable point (docs/theory.md §11)."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from slrpipe.figures import fig3

ALPHA = np.array([0.5, 1.0, 2.0, 5.0, 10.0])


def _parts(ax):
    """(solid y-data, [dashed (x0, x1) intervals]) of the lines on ``ax``."""
    solid = [l for l in ax.get_lines() if l.get_linestyle() == "-"]
    dashed = [tuple(l.get_xdata()) for l in ax.get_lines() if l.get_linestyle() == "--"]
    return solid, dashed


def test_dashed_exactly_on_intervals_with_an_unstable_end():
    fig, ax = plt.subplots()
    err = np.array([0.9, 0.7, 0.5, 0.3, 0.2])
    stable = np.array([True, False, True, True, True])
    assert fig3.draw_theory(ax, ALPHA, err, stable, color="C0", lw=1.0, label="t")
    (solid,), dashed = _parts(ax)
    np.testing.assert_array_equal(np.isnan(solid.get_ydata()), ~stable)
    assert sorted(dashed) == [(0.5, 1.0), (1.0, 2.0)]
    plt.close(fig)
    # all stable (or not checked): one solid line, nothing dashed
    fig, ax = plt.subplots()
    assert not fig3.draw_theory(ax, ALPHA, err, None, color="C0", lw=1.0)
    assert _parts(ax)[1] == []
    plt.close(fig)


def test_a_missing_point_breaks_the_dashed_interval():
    fig, ax = plt.subplots()
    err = np.array([0.9, np.nan, 0.5, 0.3, 0.2])
    stable = np.array([True, True, False, True, True])
    fig3.draw_theory(ax, ALPHA, err, stable, color="C0", lw=1.0)
    assert sorted(_parts(ax)[1]) == [(2.0, 5.0)]  # (1, 2) has no theory at α = 1
    plt.close(fig)


def test_fig3_legend_names_the_unstable_stretches(tmp_path, fig3_legend):
    labels = fig3_legend
    dims = ("sigma", "lam", "alpha")
    err = np.linspace(1, 0.2, 5)[None, None, :] * np.ones((2, 1, 1))
    rs = np.ones_like(err)
    rs[0, 0, :2] = 0  # softmax unstable at the two smallest α
    rep = xr.Dataset(
        {"test_error": (dims, err), "converged": (dims, np.ones_like(err, bool)), "rs_stable": (dims, rs)},
        coords={"sigma": ["softmax", "linear"], "lam": [0.1], "alpha": ALPHA},
    )
    rep.attrs = {"model": json.dumps("spiked"), "L": json.dumps(3), "nu": json.dumps(1.0)}
    fig3.plot(xr.DataTree.from_dict({"/replica/r": rep}), ["r"], tmp_path / "fig3")
    assert "theory where RS is unstable (docs/theory.md §11)" in labels
    rep["rs_stable"][:] = 1
    labels.clear()
    fig3.plot(xr.DataTree.from_dict({"/replica/r": rep}), ["r"], tmp_path / "fig3b")
    assert labels and not any("RS is unstable" in t for t in labels)


def test_saved_figures_are_byte_identical_when_the_figure_is(tmp_path):
    """``style.save`` leaves the time out of the PDF (and the PNG): two runs that draw the same figure
    write the same bytes, so a rerun or another executor can be compared file by file."""
    import time

    from slrpipe.figures.style import save

    digests = []
    for i in range(2):
        fig, ax = plt.subplots()
        ax.plot([0.0, 1.0, 0.5])
        digests.append([p.read_bytes() for p in save(fig, tmp_path / f"f{i}")])
        time.sleep(1.1)  # PDF dates have a resolution of one second
    assert digests[0] == digests[1]
