"""Gradient-based training and initialisation: GD on a convex case against its closed
form, reproducible random starts, the population risk along a trajectory, the store's ground state.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
import xarray as xr

from slrpipe.analysis.aggregate import erm_node
from slrpipe.analysis.ground import add_ground_state, reached, reference
from slrpipe.analysis.trajectory import add_trajectory_risk, risk_along
from slrpipe.data import SLRTask
from slrpipe.setting import Setting
from slrpipe.theory.learned import risk_at_gram
from slrpipe.threads import map_threads
from slrpipe.train import SolverOptions, minimize
from slrpipe.train.metrics import gram
from slrpipe.vocabulary import init_seed


def test_gd_reaches_the_ridge_minimiser_at_L1():
    """L = 1: a normalised score gives the one token weight 1 (softmax), so f = x·v/√D and
    J = (1/n)[½|y − Av|² + (λ/2)(|k|² + |v|²)] with A = X/√D: ridge in v, convex, minimiser
    v̂ = (AᵀA + λI)⁻¹Aᵀy, k̂ = 0. GD steps v by lr·D·∇_v J (slrpipe.train.erm), a linear map with
    contraction ρ = max_i |1 − lr·μ_i| over the eigenvalues μ_i of D(AᵀA + λI)/n, so
    |v_T − v̂| ≤ ρ^T |v_0 − v̂| exactly, and k_T = (1 − lr·Dλ/n)^T k_0."""
    rng = np.random.default_rng(0)
    D, n, lam, lr, T = 20, 80, 0.5, 0.5, 300
    X = rng.standard_normal((n, 1, D))
    y = X[:, 0, :] @ rng.standard_normal(D) / math.sqrt(D) + 0.3 * rng.standard_normal(n)
    A = X[:, 0, :] / math.sqrt(D)
    v_hat = np.linalg.solve(A.T @ A + lam * np.eye(D), A.T @ y)
    mu = np.linalg.eigvalsh(D * (A.T @ A + lam * np.eye(D)) / n)
    rho = np.max(np.abs(1 - lr * mu))
    assert rho < 0.99  # the bound below is a real contraction
    k0, v0 = rng.standard_normal(D), rng.standard_normal(D)
    with jax.enable_x64(True):
        r = minimize(
            {"k": k0, "v": v0},
            X,
            np.ones((n, 1), bool),
            y,
            "softmax",
            lam,
            SolverOptions(optimizer="gd", lr=lr, max_iter=T, tol=1e-300, record_every=T),
        )
    assert r.iterations == T and r.params["v"].dtype == np.float64
    err = np.linalg.norm(r.params["v"] - v_hat)
    assert err <= rho**T * np.linalg.norm(v0 - v_hat) + 1e-10, (err, rho**T)
    assert err < 1e-6  # and the bound is small: GD really is at the minimiser
    np.testing.assert_allclose(r.params["k"], (1 - lr * D * lam / n) ** T * k0, rtol=1e-9, atol=1e-12)


def _train(tmp_path, name, *args):
    from slrpipe.cli import main

    out = tmp_path / f"{name}.nc"
    base = [
        "train",
        "--model",
        "spiked",
        "--nu",
        "1.0",
        "--L",
        "3",
        "--D",
        "30",
        "--alpha",
        "4",
        "--teacher-seed",
        "0",
        "--data-seed",
        "10000",
        "--sigma",
        "softmax",
        "--lam",
        "0.1",
        "--n-test",
        "500",
        "--dtype",
        "float64",
        "--no-theory",
        "--out",
        str(out),
    ]
    assert main(base + list(args)) == 0
    with xr.open_dataset(out) as ds:
        return ds.load(), out


def test_same_seed_and_restart_give_identical_trajectories(tmp_path):
    """A random start is a function of (seed, restart) only: two runs agree bit for bit; another
    restart is another start."""
    runs = [
        _train(
            tmp_path,
            f"r{i}",
            "--init",
            "random",
            "--restart",
            str(r),
            "--init-seed",
            str(init_seed(0, r)),
            "--optimizer",
            "gd",
            "--lr",
            "0.5",
            "--max-iter",
            "40",
            "--record-every",
            "10",
        )[0]
        for i, r in enumerate((1, 1, 2))
    ]
    a, b, c = runs
    assert int(a["restart"]) == 1 and float(a["lr"]) == 0.5 and list(a["step"].values) == [0, 10, 20, 30, 40]
    for v in ("traj_loss", "traj_m_k", "traj_q_k", "traj_m_v", "traj_q_v", "k", "v"):
        np.testing.assert_array_equal(a[v].values, b[v].values)
    assert not np.allclose(a["traj_m_v"].values, c["traj_m_v"].values)
    assert abs(float(a["traj_q_k"][0]) - float(c["traj_q_k"][0])) > 1e-3  # different N(0, I) starts


def test_trajectory_risk_is_the_population_formula_at_that_step(tmp_path):
    """The risk the store puts on each step of a GD trajectory equals the population formula
    (docs/model.md §4) at the Gram matrix of the weights GD holds at that step — obtained
    independently by training for exactly that many steps (GD is deterministic) — to the precision
    of the recorded overlaps (float64)."""
    from slrpipe.data.teacher import make_teacher

    common = ["--init", "random", "--init-seed", str(init_seed(0, 0)), "--optimizer", "gd", "--lr", "0.5"]
    full, path = _train(tmp_path, "full", *common, "--max-iter", "30", "--record-every", "10")
    node = erm_node([path])
    task = SLRTask(Setting("spiked", 1.0, 3, 0.0), 2)
    node = add_trajectory_risk(node, task)
    traj = node["traj_test_error_pop"].squeeze()
    assert traj.dims == ("step",) and list(traj["step"].values) == [0, 10, 20, 30]
    k_star, v_star = make_teacher(30, 0)
    for t in (10, 20):
        part, _ = _train(tmp_path, f"t{t}", *common, "--max-iter", str(t), "--record-every", "10")
        exact = risk_at_gram("softmax", task.setting, gram(k_star, v_star, part["k"].values, part["v"].values))
        np.testing.assert_allclose(float(traj.sel(step=t)), exact, rtol=1e-9)
    # the risk moves along the trajectory (not a constant), and the last step is the run's own end
    end = risk_at_gram("softmax", task.setting, gram(k_star, v_star, full["k"].values, full["v"].values))
    np.testing.assert_allclose(float(traj.sel(step=30)), end, rtol=1e-9)
    assert abs(float(traj.sel(step=0)) - end) > 0.01
    with pytest.raises(ValueError, match="erf"):
        risk_along("erf", task, {})


def _fake_node():
    """Two seeds × starts (informed r0; random r0, r1) × one optimiser, hand-set objectives."""
    loss = np.array(
        [
            [[1.0, np.nan], [1.2, 0.9]],  # seed 0: random r1 is lowest
            [[0.5, np.nan], [0.5005, 0.8]],
        ]
    )  # seed 1: informed lowest, random r0 within 0.1 %
    te = loss + 10.0
    dims = ("seed", "init", "restart")
    ds = xr.Dataset(
        {"train_loss": (dims, loss), "test_error": (dims, te), "m_k": (dims, -loss)},
        coords={"seed": [0, 1], "init": ["informed", "random"], "restart": [0, 1]},
    )
    return ds.expand_dims(optimizer=["lbfgs"], sigma=["softmax"]).transpose(
        "sigma", "seed", "init", "restart", "optimizer"
    )


def test_ground_state_and_reference():
    node = add_ground_state(_fake_node())
    g = node.sel(sigma="softmax")
    np.testing.assert_array_equal(g["train_loss_ground"].values, [0.9, 0.5])
    np.testing.assert_array_equal(g["test_error_ground"].values, [10.9, 10.5])
    np.testing.assert_array_equal(g["m_k_ground"].values, [-0.9, -0.5])
    assert list(g["ground_init"].values) == ["random", "informed"] and list(g["ground_restart"].values) == [1, 0]
    ref = reference(node)
    assert "init" not in ref.dims and list(ref["train_loss"].sel(sigma="softmax").values) == [1.0, 0.5]
    hit = reached(node, 1e-3).sel(sigma="softmax", optimizer="lbfgs")
    assert hit.sel(seed=0).values.tolist() == [[True, False], [False, True]]
    assert hit.sel(seed=1).values.tolist() == [[True, False], [True, False]]


def test_map_threads_returns_the_serial_results_in_order():
    """The aggregation's thread pool (``--workers``) changes nothing but the wall time: the same
    values, bit for bit, in the items' order, for any number of workers."""
    rng = np.random.default_rng(0)
    items = [rng.standard_normal(20_000) for _ in range(7)]
    f = lambda x: float(np.sum(np.exp(-x * x)))  # numpy-bound, as the population risk is
    serial = [f(x) for x in items]
    for workers in (1, 2, 3, 16):
        assert map_threads(f, items, workers) == serial
    assert map_threads(f, [], 4) == []
