"""Length experiments: the sweep over (L, ν), the target ν, the variable-length optimum, the CLI
command, the config section and its plan (docs/theory.md §12)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml
from conftest import REPO, assert_self_describing

from slrpipe.config import ConfigError, validate
from slrpipe.setting import Setting
from slrpipe.theory import population as pop
from slrpipe.theory.length_sweep import LengthOptions, length_sweep, nu_for_risk
from slrpipe.workflow import plan

U1000 = {k: 1 / 1000 for k in range(1, 1001)}


def test_softmax_attains_bayes_variable_length():
    # Cor. 4.4: with shared (k, v) softmax still reaches the Bayes risk when L ~ Unif{1..1000}
    res = pop.optimal_risk("softmax", Setting("spiked", 4.0, U1000))
    bayes = pop.bayes_risk(Setting("spiked", 4.0, U1000))
    assert bayes - 1e-9 <= res["risk"] < bayes + 1e-6


def test_nu_for_risk_linear_inverts_closed_form():
    # R = L(L−1)/((L−1)ν + L²) = r  ⇔  ν = (L(L−1)/r − L²)/(L−1); Brent to 1e-9 relative in log ν
    for L in (4, 100, 10_000):
        exact = (L * (L - 1) / 0.1 - L * L) / (L - 1)
        assert nu_for_risk("linear", "spiked", L, 0.1) == pytest.approx(exact, rel=1e-6)
    assert nu_for_risk("bayes", "spiked", 1, 0.1) == 0.0  # L = 1: the location is known


def test_length_sweep_dataset():
    opts = LengthOptions(target_risk=0.2, var_L_max=5, var_nus=[2.0])
    ds = length_sweep("bayes", "spiked", [2, 64], [1.0, 4.0], options=opts)
    assert ds.risk.dims == ("L", "nu") and ds.risk.shape == (2, 2)
    assert ds.risk.sel(L=64, nu=4.0) == pytest.approx(pop.bayes_risk(Setting("spiked", 4.0, 64)), abs=1e-14)
    assert np.all(np.diff(ds.risk.values, axis=0) > 0) and np.all(np.diff(ds.risk.values, axis=1) < 0)
    nt = ds.nu_target.sel(L=64).item()
    assert pop.bayes_risk(Setting("spiked", nt, 64)) == pytest.approx(0.2, abs=1e-8)
    law = {k: 0.2 for k in range(1, 6)}
    assert ds.risk_var.item() == pytest.approx(pop.bayes_risk(Setting("spiked", 2.0, law)), abs=1e-14)
    with pytest.raises(ValueError, match="target"):
        nu_for_risk("linear", "spiked", 10, 1.5)
    with pytest.raises(ValueError, match="target_risk"):
        LengthOptions(target_risk=1.5)
    with pytest.raises(ValueError, match="var_L_max"):
        LengthOptions(var_L_max=0)


def test_cli_length(tmp_path):
    import xarray as xr

    from slrpipe.cli import main

    out = tmp_path / "l.nc"
    assert (
        main(
            [
                "length",
                "--sigma",
                "linear",
                "--model",
                "spiked",
                "--L-grid",
                "3,30",
                "--nu-grid",
                "2",
                "--target-risk",
                "0.1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    ds = xr.open_dataset(out)
    assert list(ds.L.values) == [3, 30] and str(ds.sigma.values) == "linear" and ds.attrs["command"] == "length"
    assert_self_describing(ds, "length")
    assert ds.attrs["history"].endswith(
        f"slrpipe length --sigma linear --model spiked --L-grid 3,30 --nu-grid 2 --target-risk 0.1 --out {out}"
    )
    assert ds.risk.sel(L=30, nu=2.0) == pytest.approx(pop.linear_risk_spiked(Setting("spiked", 2.0, 30)), abs=1e-9)
    assert (
        main(
            [
                "length",
                "--sigma",
                "linear",
                "--model",
                "spiked",
                "--L-grid",
                "0",
                "--nu-grid",
                "2",
                "--out",
                str(tmp_path / "x.nc"),
            ]
        )
        == 2
    )
    assert (
        main(
            [
                "length",
                "--sigma",
                "linear",
                "--model",
                "spiked",
                "--L-grid",
                "3",
                "--nu-grid",
                "2",
                "--var-L-max",
                "5",
                "--out",
                str(tmp_path / "x.nc"),
            ]
        )
        == 2
    )


def _config():
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def test_plan_length_jobs():
    cfg = validate(_config())
    p = plan(cfg, results="R")
    jobs = {k: v for k, v in p.length.items()}
    assert set(jobs) == {f"R/length/spiked_length/{s}.nc" for s in cfg["length"]["spiked_length"]["sigmas"]}
    soft = jobs["R/length/spiked_length/softplus_norm.nc"]
    assert soft.target_risk is None and soft.var_L_max is None  # not in target_sigmas / var_sigmas
    assert jobs["R/length/spiked_length/bayes.nc"].var_L_max == 1000
    assert p.members[("length", "spiked_length")] == list(jobs)


@pytest.mark.parametrize(
    "mutate,field",
    [
        (lambda e: e.update(lengths=[0, 5]), "length.spiked_length.lengths[0]"),
        (lambda e: e.update(target_sigmas=["softmax"]), "length.spiked_length.target_sigmas"),
        (lambda e: e.update(target_risk=None), "length.spiked_length.target_risk"),
        (lambda e: e.update(var_L_max=None), "length.spiked_length.var_sigmas"),
        (lambda e: e.update(target_risk=1.5), "length.spiked_length.target_risk"),
    ],
)
def test_length_config_errors(mutate, field):
    cfg = copy.deepcopy(_config())
    mutate(cfg["length"]["spiked_length"])
    with pytest.raises(ConfigError, match=field.replace("[", r"\[").replace("]", r"\]")):
        validate(cfg)
