"""The finite-α length figure: one Fig. 3 panel per L on a shared error axis, with the n = ∞ limits
of each setting (population optimum per σ, Bayes risk) as horizontal lines."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

from slrpipe.figures import length_alpha

ALPHA = np.array([5.0, 10.0, 20.0])
# n = ∞ limits per L (bayes, softmax, linear): distinct values, so that each line is identified
LIMITS = {3: (0.0101, 0.0102, 0.31), 16: (0.0376, 0.0377, 0.4839)}


def _replica(L: int, erm: str | None) -> xr.Dataset:
    dims = ("sigma", "lam", "alpha")
    err = np.array([0.2, 0.1, 0.05])[None, None, :] * np.array([1.0, 8.0])[:, None, None] * L / 3
    rep = xr.Dataset(
        {"test_error": (dims, err), "converged": (dims, np.ones_like(err, bool))},
        coords={"sigma": ["softmax", "linear"], "lam": [0.1], "alpha": ALPHA, "nu": 16.0, "L": str(L)},
    )
    rep.attrs = {"model": json.dumps("spiked"), "erm": json.dumps(erm)}
    return rep


def _population(L: int) -> xr.Dataset:
    risk = np.array(LIMITS[L])[:, None]
    return xr.Dataset(
        {"risk": (("sigma", "nu"), risk)}, coords={"sigma": ["bayes", "softmax", "linear"], "nu": [16.0], "L": str(L)}
    )


@pytest.fixture
def saved(monkeypatch):
    """The figures passed to ``length_alpha.save`` (a list, appended)."""
    figs, real_save = [], length_alpha.save

    def save(fig, out):
        figs.append(fig)
        return real_save(fig, out)

    monkeypatch.setattr(length_alpha, "save", save)
    return figs


def _horizontal(ax) -> set[float]:
    """The y values of the horizontal lines spanning ``ax`` (axhline: x data (0, 1))."""
    return {float(l.get_ydata()[0]) for l in ax.get_lines() if tuple(l.get_xdata()) == (0, 1)}


def test_each_panel_draws_its_own_limits_on_a_shared_axis(tmp_path, saved):
    tree = xr.DataTree.from_dict(
        {
            "/replica/r3": _replica(3, "e3"),
            "/replica/r16": _replica(16, "e16"),
            "/population/at_e3": _population(3),
            "/population/at_e16": _population(16),
        }
    )
    paths = length_alpha.plot(tree, ["r3", "r16"], tmp_path / "length_alpha")
    assert [p.suffix for p in paths] == [".pdf", ".png"] and all(p.stat().st_size > 5_000 for p in paths)
    (fig,) = saved
    ax3, ax16 = fig.axes
    assert _horizontal(ax3) == set(LIMITS[3]) and _horizontal(ax16) == set(LIMITS[16])
    assert ax3.get_ylim() == ax16.get_ylim()
    assert ax3.get_ylim()[0] <= min(LIMITS[3]) and ax3.get_ylim()[1] >= 16 / 3 * 8 * 0.2
    labels = {t.get_text() for leg in fig.legends for t in leg.get_texts()}
    assert {"n = ∞: Bayes risk", "n = ∞: softmax", "n = ∞: linear"} <= labels


def test_no_limits_without_the_linked_population_point(tmp_path, saved):
    tree = xr.DataTree.from_dict({"/replica/r3": _replica(3, "e3"), "/replica/r16": _replica(16, None)})
    length_alpha.plot(tree, ["r3", "r16"], tmp_path / "length_alpha")
    assert all(_horizontal(ax) == set() for ax in saved[0].axes)
