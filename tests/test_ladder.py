"""ERM over a D ladder: the plan runs every α at every D (sharing the rungs an experiment of fixed
D already runs) and the store gets a D dim for ladder experiments only."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import xarray as xr
import yaml
from conftest import REPO

from slrpipe.analysis.ladder import largest_D, point_ladder
from slrpipe.config import validate
from slrpipe.workflow import plan, size, sizes

SMOKE = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())


def _config(**ladder):
    cfg = copy.deepcopy(SMOKE)
    fixed = cfg["erm"]["spiked_L2"]  # D = 40, α ∈ {2, 8}, seeds 0, 1
    cfg["erm"] = {"spiked_L2": fixed, "ladder_L2": {**copy.deepcopy(fixed), "D": [20, 40, 80], **ladder}}
    cfg["figures"].pop("optimization")
    return validate(cfg)


def test_plan_runs_every_alpha_at_every_D_and_shares_the_fixed_D_jobs():
    cfg = _config()
    p = plan(cfg)
    fixed, lad = p.members[("erm", "spiked_L2")], p.members[("erm", "ladder_L2")]
    # 3 D × 2 α × 2 seeds × 2 σ × 1 λ, each (D, α) with n = αD exactly
    assert len(lad) == 3 * 2 * 2 * 2
    for D in (20, 40, 80):
        for a in (2, 8):
            assert sum(f"/alpha{a}/D{D}_n{a * D}_seed" in k for k in lad) == 4
    # the D = 40 rung is the fixed-D experiment's jobs (same paths, same parameters): nothing rerun
    assert set(fixed) < set(lad) and len(p.erm) == len(lad)
    assert {k for k in lad if "/D40_" in k} == set(fixed)
    assert all(p.erm[k].D == 40 for k in fixed)
    assert sizes(cfg["erm"]["ladder_L2"], 2.0) == [(20, 40), (40, 80), (80, 160)]
    assert sizes(cfg["erm"]["spiked_L2"], 2.0) == [size(cfg["erm"]["spiked_L2"], 2.0)] == [(40, 80)]
    with pytest.raises(ValueError, match="ladder"):
        size(cfg["erm"]["ladder_L2"], 2.0)


def test_ladder_order_does_not_matter():
    a, b = plan(_config()), plan(_config(D=[80, 20, 40]))
    assert a.erm == b.erm


def _run_jobs(p, names):
    """Train every ERM job of ``names`` through the CLI, with the command line the workflow generates."""
    from slrpipe.cli import main
    from slrpipe.job_args import argv

    for name in names:
        for path in p.members[("erm", name)]:
            assert main(["train", *argv(p.erm[path]), "--no-theory", "--out", path]) == 0, path


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory):
    """A ladder D ∈ {10, 20} × α = 2 × 2 seeds, softmax only, beside the fixed-D experiment at D = 20."""
    from slrpipe.analysis.aggregate import build_store, open_store

    cfg = copy.deepcopy(SMOKE)
    base = dict(
        model="spiked",
        L=2,
        nu=2.0,
        sigmas=["softmax"],
        alphas=[2.0],
        lams=[0.1],
        seeds=[0, 1],
        max_iter=30,
        n_test=200,
        store_data=False,
    )
    cfg["erm"] = {"fixed": dict(base, D=20), "ladder": dict(base, D=[10, 20])}
    cfg["population"], cfg["replica"], cfg["figures"] = {}, {}, {}
    cfg = validate(cfg)
    tmp = tmp_path_factory.mktemp("ladder")
    p = plan(cfg, results=str(tmp))
    _run_jobs(p, ["ladder"])  # includes every job of "fixed"
    members = {k: v for k, v in p.members.items() if k[0] == "erm"}
    build_store(members, cfg, tmp / "slr.zarr")
    return open_store(tmp / "slr.zarr")


def test_tiny_ladder_aggregates_with_a_D_dim(tiny_store):
    lad, fixed = tiny_store["erm/ladder"].to_dataset(), tiny_store["erm/fixed"].to_dataset()
    assert lad["test_error"].dims == ("sigma", "lam", "alpha", "D", "seed", "init", "restart", "optimizer")
    assert list(lad["D"].values) == [10, 20] and list(lad["alpha"].values) == [2.0]
    assert "D" not in fixed.dims and int(fixed["D"].max()) == 20  # the fixed-D layout: D a variable
    assert (lad["n"].values == 2 * lad["D"].values[:, None, None, None, None]).all()
    # the shared D = 20 rung is the fixed experiment's runs, value for value
    for v in ("test_error", "train_loss", "test_error_pop", "test_error_ground"):
        np.testing.assert_array_equal(largest_D(lad)[v].values, fixed[v].values)
    assert not lad["test_error_pop"].isnull().any()


def test_point_ladder_per_D_means_and_fit():
    """Per-D means are the seed means; with 3 rungs the fit has one dof; a rung with < 2 finite
    seeds is left out."""
    D = [100, 200, 400]
    vals = np.array([[1.10, 1.14, 1.12], [1.05, 1.07, 1.06], [1.02, 1.04, 1.03]])
    pl = point_ladder(xr.DataArray(vals, dims=("D", "seed"), coords={"D": D}))
    np.testing.assert_allclose(pl.mean, vals.mean(1))
    assert pl.fit is not None and pl.fit.fits["1/D"].dof == 1
    vals[2, 1:] = np.nan
    pl = point_ladder(xr.DataArray(vals, dims=("D", "seed"), coords={"D": D}))
    assert list(pl.D) == [100, 200] and pl.fit.fits["1/D"].dof == 0
    with pytest.raises(ValueError, match="dims"):
        point_ladder(xr.DataArray(vals[0], dims=("seed",)))


def test_a_validated_ladder_config_validates_again():
    """Each command validates the config it is given (already filled in, sqrt_nD's default
    included): the ladder must pass a second time unchanged."""
    import json

    cfg = _config()
    assert validate(json.loads(json.dumps(cfg))) == cfg
