"""λ tuned per α (slrpipe.analysis.tuning): the grid search picks the λ of lowest validation error and
reports another quantity there; Fig. 3 draws the tuned curves from a store with a λ grid."""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from slrpipe.analysis.tuning import at_best_lam, best_lam


def _erm(seed=0):
    rng = np.random.default_rng(seed)
    lam, alpha = [0.01, 0.1, 1.0], [1.0, 4.0]
    # validation error minimal at λ = 0.1 for α = 1 and at λ = 0.01 for α = 4 (both σ)
    base = np.array([[0.9, 0.5], [0.6, 0.55], [0.8, 0.7]])  # (lam, alpha)
    test = base[None, :, :, None] + 0.01 * rng.standard_normal((2, 3, 2, 3))
    pop = test - 0.02
    dims = ("sigma", "lam", "alpha", "seed")
    coords = {"sigma": ["softmax", "linear"], "lam": lam, "alpha": alpha, "seed": [0, 1, 2]}
    return xr.Dataset({"test_error": (dims, test), "test_error_pop": (dims, pop)}, coords=coords)


def test_best_lam_is_the_grid_minimum_of_the_seed_mean():
    erm = _erm()
    lam = best_lam(erm)
    assert lam.dims == ("sigma", "alpha")
    np.testing.assert_array_equal(lam.values, [[0.1, 0.01], [0.1, 0.01]])
    rep = at_best_lam(erm)
    np.testing.assert_array_equal(
        rep.sel(sigma="softmax", alpha=1.0).values,
        erm["test_error_pop"].sel(sigma="softmax", alpha=1.0, lam=0.1).values,
    )
    np.testing.assert_array_equal(rep["lam"].values, lam.values)


def test_a_point_without_runs_has_no_best_lam():
    erm = _erm()
    erm["test_error"].loc[dict(sigma="linear", alpha=4.0)] = np.nan
    assert np.isnan(best_lam(erm).sel(sigma="linear", alpha=4.0))
    assert at_best_lam(erm).sel(sigma="linear", alpha=4.0).isnull().all()


def test_fig3_draws_the_tuned_curves(tmp_path, fig3_legend):
    from slrpipe.figures import fig3

    labels = fig3_legend

    erm = _erm()
    dims = ("sigma", "lam", "alpha")
    err = erm["test_error_pop"].mean("seed").transpose(*dims).values + 0.01
    rep = xr.Dataset(
        {"test_error": (dims, err), "converged": (dims, np.ones_like(err, bool))},
        coords={k: erm[k].values for k in dims},
    )
    rep["test_error_opt_lam"] = rep["test_error"].min("lam")
    rep.attrs = {"erm": json.dumps("e"), "model": json.dumps("spiked"), "L": json.dumps(3), "nu": json.dumps(1.0)}
    tree = xr.DataTree.from_dict({"/replica/r": rep, "/erm/e": erm})
    paths = fig3.plot(tree, ["r"], tmp_path / "fig3")
    assert [p.suffix for p in paths] == [".pdf", ".png"] and all(p.stat().st_size > 1000 for p in paths)
    for s in ("softmax", "linear"):
        assert f"theory {s}, best λ per α" in labels
        assert f"ERM {s}, best λ (validation error)" in labels
