"""ERM (model.md §5): L-BFGS convergence, softmax vs linear at finite α, learning curve, first-order
optimisers with trajectories, float64, the objective's normalisation and the ``train`` CLI.

Setting: spiked-SLR, ν = 2, L = 3, Δ = 0, λ = 0.1, D = 100 (small so that it is fast). The finite-D
fluctuations of the learned overlaps are O(1/√D) ≈ 0.1 relative, so the comparisons below use
margins the population/replica values clear by far: at α = 20 softmax ≈ 0.43 vs linear ≈ 0.52
(two teacher seeds measured), at α = 2 softmax ≈ 0.76–0.97. The Monte Carlo part of every
comparison is bounded by 4 standard errors of the 5·10⁴-sample test errors (s.e. ≈ 0.004).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr

from slrpipe.data import SLRDataset, SLRTask
from slrpipe.models import attention_apply
from slrpipe.setting import Setting
from slrpipe.train import ERMOptions, SolverOptions, minimize, objective, run_erm
from slrpipe.train.erm import place_data, transposed
from slrpipe.train.experiment import run_erm_batch

TASK = SLRTask(Setting("spiked", 2.0, 3, 0.0), 100)
LAM = 0.1


@pytest.fixture(scope="module")
def erm20():
    ds = SLRDataset(TASK, 20 * TASK.D, teacher_seed=0, data_seed=1)
    return {
        s: run_erm(ds, ERMOptions.of(s, LAM, n_test=50_000, max_iter=500, bayes=s == "softmax"))[1]
        for s in ("softmax", "linear")
    }


def _gap(a, b):
    return 4 * math.hypot(float(a.test_error_se), float(b.test_error_se))


def test_lbfgs_converges_and_softmax_beats_linear(erm20):
    sm, lin = erm20["softmax"], erm20["linear"]
    for r in (sm, lin):
        assert bool(r.converged) and float(r.gnorm) < 1e-5 and 0 < int(r.iterations) < 500
        assert r.attrs["stop_reason"] == "tol"
    assert float(sm.test_error) + _gap(sm, lin) < float(lin.test_error)
    # and neither beats the Bayes oracle measured on the same test set
    assert float(sm.test_error_bayes) < float(sm.test_error)


def test_test_error_equals_population_risk_at_learned_overlaps(erm20):
    # For fixed (k, v) the per-token fields are exactly Gaussian with the empirical Gram matrix at any
    # D, so the fresh-test error equals risk_gram up to Monte Carlo (4 s.e.) + QMC error (~1e-5).
    pytest.importorskip("slrpipe.theory.population")
    for r in erm20.values():
        assert abs(float(r.test_error) - float(r.test_error_theory)) < 4 * float(r.test_error_se) + 1e-4


def test_test_error_falls_with_alpha(erm20):
    ds = SLRDataset(TASK, 2 * TASK.D, teacher_seed=0, data_seed=1)
    r2 = run_erm(ds, ERMOptions.of("softmax", LAM, n_test=50_000, max_iter=500, bayes=False))[1]
    r20 = erm20["softmax"]
    assert bool(r2.converged)
    assert float(r20.test_error) + _gap(r2, r20) < float(r2.test_error)
    # overfitting: the training error is below the test error at α = 2
    assert float(r2.train_mse) < float(r2.test_error)


def test_result_dataset_fields(erm20):
    r = erm20["softmax"]
    for name in (
        "model",
        "nu",
        "L",
        "delta",
        "sigma",
        "lam",
        "alpha",
        "D",
        "n",
        "teacher_seed",
        "data_seed",
        "test_seed",
        "init_seed",
        "init",
        "optimizer",
        "dtype",
    ):
        assert name in r.coords and r.coords[name].ndim == 0, name
    assert r.L.item() == "3" and r.alpha.item() == 20.0 and r.n.item() == 2000
    for name in (
        "train_loss",
        "train_mse",
        "test_error",
        "test_error_theory",
        "m_k",
        "q_k",
        "m_v",
        "q_v",
        "k_vstar",
        "v_kstar",
        "k_v",
        "iterations",
        "converged",
        "gnorm",
        "wall_time",
    ):
        assert name in r.data_vars, name
    assert r.attrs["device"] in ("cpu", "gpu", "cuda", "rocm", "tpu")
    assert r.traj_loss.dims == ("step",) and r.traj_loss.values[-1] <= r.traj_loss.values[0]
    # the overlaps are the Gram entries of the stored k, v
    assert abs(float(r.q_k) - float((r.k**2).sum()) / 100) < 1e-9


def test_objective_normalisation():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((7, 3, 5)).astype(np.float32)
    mask = np.ones((7, 3), bool)
    y = rng.standard_normal(7).astype(np.float32)
    p = {
        "k": jnp.asarray(rng.standard_normal(5), jnp.float32),
        "v": jnp.asarray(rng.standard_normal(5), jnp.float32),
        "c": jnp.asarray(2.0),
    }
    f = np.asarray(attention_apply(p, X, mask, "erf"))
    hand = (
        0.5 * np.sum((y - f) ** 2) + 0.5 * 0.3 * (np.sum(np.asarray(p["k"]) ** 2) + np.sum(np.asarray(p["v"]) ** 2))
    ) / 7
    assert abs(float(objective(p, X, mask, y, "erf", 0.3)) - hand) < 1e-5 * hand  # c is not penalised
    # the transposed-copy gradient path gives the same value and gradient (float32 rounding)
    mask[2, 1:] = False
    X[2, 1:] = 0.0
    g0 = jax.value_and_grad(objective)(p, X, mask, y, "erf", 0.3)
    g1 = jax.value_and_grad(objective)(p, X, mask, y, "erf", 0.3, transposed(X))
    assert abs(float(g0[0]) - float(g1[0])) < 1e-6
    for name in p:
        np.testing.assert_allclose(np.asarray(g1[1][name]), np.asarray(g0[1][name]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opt", ["gd", "adam", "sgd"])
def test_first_order_optimisers_record_trajectories(opt):
    ds = SLRDataset(SLRTask(Setting("max", math.inf, {2: 0.5, 3: 0.5}, 0.1), 50), 500, 0, 2)
    opts = ERMOptions.of(
        "softmax", LAM, optimizer=opt, init="small", init_seed=1, n_test=2000, max_iter=60, record_every=20, bayes=False
    )
    model, r = run_erm(ds, opts)
    # the returned Flax module holds the learned parameters (its nnx.Param state was trained)
    np.testing.assert_array_equal(np.asarray(model.k[...], np.float64), r.k.values)
    assert list(r.step.values) == [0, 20, 40, 60] and int(r.iterations) == 60
    assert r.traj_m_k.dims == ("step",) and np.all(np.isfinite(r.traj_m_k))
    assert r.traj_loss.values[-1] < r.traj_loss.values[0]  # it learns
    assert r.traj_m_v.values[-1] > r.traj_m_v.values[0] + 0.1
    if opt == "sgd":  # reproducible from its seed
        again = run_erm(ds, opts)[1]
        np.testing.assert_array_equal(r.k.values, again.k.values)


def test_float64_converges_to_tight_tolerance():
    ds = SLRDataset(SLRTask(Setting("spiked", 1.0, 2, 0.2), 40), 400, 0, 1)
    r = run_erm(ds, ERMOptions.of("erf", LAM, n_test=1000, max_iter=500, dtype="float64", bayes=False))[1]
    assert r.dtype.item() == "float64" and r.k.dtype == np.float64
    assert bool(r.converged) and float(r.gnorm) < 1e-8


def test_batch_places_the_training_set_once_and_each_run_is_its_lone_run():
    # run_erm_batch puts X (and its transpose) on the device once per dtype and hands it to every
    # run; each run must still be bit-for-bit the run run_erm makes alone (which places its own)
    ds = SLRDataset(SLRTask(Setting("spiked", 1.0, 3, 0.0), 32), 160, teacher_seed=0, data_seed=1)
    opts = [
        ERMOptions.of(sigma, LAM, init=init, init_seed=i, n_test=200, max_iter=60, dtype=dtype, theory=False)
        for sigma, init, i, dtype in (
            ("softmax", "informed", 0, "float32"),
            ("softmax", "random", 1, "float32"),
            ("linear", "random", 2, "float64"),
        )
    ]
    for (_, batch), o in zip(run_erm_batch(ds, opts), opts):
        alone = run_erm(ds, o)[1]
        for name in ("k", "v", "train_loss", "test_error", "iterations"):
            np.testing.assert_array_equal(batch[name].values, alone[name].values)
    # placed data of another dtype than the run's: refused, naming the argument
    X, mask, y = (np.asarray(a) for a in ds.load()[:3])
    placed = place_data(X, mask, y, np.float32)
    with jax.enable_x64(True), pytest.raises(ValueError, match="data"):
        minimize({"k": np.zeros(32), "v": np.zeros(32)}, X, mask, y, "linear", LAM, data=placed)


def test_minimize_rejects_bad_arguments():
    p = {"k": jnp.zeros(3), "v": jnp.zeros(3)}
    X, mask, y = np.zeros((2, 1, 3), np.float32), np.ones((2, 1), bool), np.zeros(2, np.float32)
    with pytest.raises(ValueError, match="optimizer"):
        SolverOptions(optimizer="newton")
    for field, bad in (("max_iter", 0), ("tol", 0.0), ("lr", -1.0), ("record_every", 0)):
        with pytest.raises(ValueError, match=field):
            SolverOptions(**{field: bad})
    with pytest.raises(ValueError, match="lam"):
        minimize(p, X, mask, y, "softmax", -1.0)
    with pytest.raises(ValueError, match="batch_size"):
        minimize(p, X, mask, y, "softmax", 0.1, SolverOptions(optimizer="sgd", batch_size=5))
    for field, kwargs in (
        ("sigma", {"sigma": "relu"}),
        ("lam", {"lam": float("nan")}),
        ("init", {"init": "zero"}),
        ("dtype", {"dtype": "float16"}),
        ("n_test", {"n_test": 0}),
    ):
        with pytest.raises(ValueError, match=field):
            ERMOptions.of(**{"sigma": "softmax", "lam": 0.1, **kwargs})
    ds = SLRDataset(SLRTask(Setting("spiked", 1.0, 2, 0.0), 3), 2, 0, 1)
    with pytest.raises(ValueError, match="test_seed"):
        run_erm(ds, ERMOptions.of("softmax", 0.1, test_seed=1))


def test_cli_generate_then_train(tmp_path):
    from slrpipe.cli import main

    store, out = tmp_path / "d.zarr", tmp_path / "r.nc"
    assert (
        main(
            [
                "generate",
                "--model",
                "max",
                "--nu",
                "inf",
                "--L",
                "uniform:1,2,3",
                "--delta",
                "0.1",
                "--D",
                "30",
                "--n",
                "300",
                "--teacher-seed",
                "4",
                "--data-seed",
                "5",
                "--out",
                str(store),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "train",
                "--data",
                str(store),
                "--sigma",
                "softmax",
                "--lam",
                "0.1",
                "--n-test",
                "3000",
                "--max-iter",
                "200",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    r = xr.open_dataset(out)
    assert r.model.item() == "max" and math.isinf(r.nu.item()) and r.D.item() == 30 and r.n.item() == 300
    assert r.data_seed.item() == 5 and r.teacher_seed.item() == 4 and r.attrs["data_source"] == str(store)
    # the same data regenerated from the seeds give the same training result
    out2 = tmp_path / "r2.nc"
    assert (
        main(
            [
                "train",
                "--model",
                "max",
                "--nu",
                "inf",
                "--L",
                "uniform:1,2,3",
                "--delta",
                "0.1",
                "--D",
                "30",
                "--alpha",
                "10",
                "--teacher-seed",
                "4",
                "--data-seed",
                "5",
                "--sigma",
                "softmax",
                "--lam",
                "0.1",
                "--n-test",
                "3000",
                "--max-iter",
                "200",
                "--out",
                str(out2),
            ]
        )
        == 0
    )
    np.testing.assert_array_equal(xr.open_dataset(out2).k.values, r.k.values)
    assert main(["train", "--sigma", "softmax", "--lam", "0.1", "--out", str(out2)]) == 2  # no data: one-line error


def test_compilation_cache_cold_and_warm_give_identical_results(tmp_path):
    """The workflow's persistent compilation cache (workflow/rules/common.smk): a run that compiles and
    fills the cache and a run that loads every program from it write the same numbers, bit for bit."""
    from conftest import assert_identical_but_wall_time, cold_and_warm_runs

    cold, warm = cold_and_warm_runs(
        tmp_path,
        [
            "train",
            "--model",
            "spiked",
            "--nu",
            "1",
            "--L",
            "3",
            "--D",
            "40",
            "--n",
            "200",
            "--teacher-seed",
            "3",
            "--data-seed",
            "4",
            "--sigma",
            "softmax",
            "--lam",
            "0.1",
            "--n-test",
            "2000",
            "--max-iter",
            "300",
            "--no-theory",
        ],
    )
    assert int(cold.iterations) > 1
    assert_identical_but_wall_time(cold, warm)


def test_risk_at_overlaps_rebuilds_the_recorded_gram(erm20):
    # the store's route (slrpipe.theory.learned): the Gram rebuilt from the recorded overlaps is the
    # recorded one (orthonormal teacher, |k*|² = |v*|² = D, up to float64 rounding), so the risk is the same
    from slrpipe.theory.learned import OVERLAPS, gram_from_overlaps, risk_at_overlaps

    for sigma, r in erm20.items():
        ov = {k: float(r[k]) for k in OVERLAPS}
        np.testing.assert_allclose(gram_from_overlaps(ov), r.gram.values, rtol=0, atol=1e-12)
        assert abs(risk_at_overlaps(sigma, TASK.setting, ov) - float(r.test_error_theory)) < 1e-9
        assert math.isnan(risk_at_overlaps(sigma, TASK.setting, dict(ov, m_k=math.nan)))


def test_device_sampler_trains_and_measures_on_the_device():
    # the jax sampler draws another data set of the same law on the device, and the test error is
    # measured there: the same checks as erm20's, with their own statistical tolerances
    from slrpipe.data import Chunk
    from slrpipe.models import bayes_predict
    from slrpipe.train.metrics import streamed_errors

    ds = SLRDataset(TASK, 20 * TASK.D, teacher_seed=0, data_seed=1, sampler="jax")
    r = run_erm(ds, ERMOptions.of("softmax", LAM, n_test=50_000, max_iter=500))[1]
    assert bool(r.converged) and r.attrs["sampler"] == "jax" and "PRNGKey" in r.attrs["rng"]
    assert abs(float(r.test_error) - float(r.test_error_theory)) < 4 * float(r.test_error_se) + 1e-4
    assert float(r.test_error_bayes) < float(r.test_error)
    # the device evaluation equals numpy's on the same test chunks brought to the host, up to the
    # float32 rounding of the predictions (relative 1e-6 per sample; 1e-5 on the mean is ample)
    params = {"k": r.k.values.astype(np.float32), "v": r.v.values.astype(np.float32)}
    k_star, v_star = ds.teacher
    test = SLRDataset(TASK, 50_000, 0, int(r.test_seed), sampler="jax")
    host = streamed_errors(
        {
            "f": lambda X, mask: attention_apply(params, X, mask, "softmax", xp=np),
            "bayes": lambda X, mask: bayes_predict(X, mask, k_star, v_star, TASK.model, TASK.nu),
        },
        (Chunk(*(np.asarray(a) for a in ch)) for ch in test.chunks()),
    )
    assert host["f"][0] == pytest.approx(float(r.test_error), rel=1e-5)
    assert host["bayes"][0] == pytest.approx(float(r.test_error_bayes), rel=1e-5)
    assert host["f"][1] == pytest.approx(float(r.test_error_se), rel=1e-3)


def test_cli_device_sampler_stored_or_regenerated_trains_alike(tmp_path):
    from slrpipe.cli import main

    law = ["--model", "spiked", "--nu", "1", "--L", "2", "--D", "20", "--teacher-seed", "1", "--data-seed", "2"]
    run = ["--sigma", "softmax", "--lam", "0.1", "--n-test", "2000", "--max-iter", "100"]
    store, a, b = tmp_path / "d.zarr", tmp_path / "a.nc", tmp_path / "b.nc"
    assert main(["generate", *law, "--sampler", "jax", "--n", "200", "--out", str(store)]) == 0
    assert main(["train", "--data", str(store), *run, "--out", str(a)]) == 0
    assert main(["train", *law, "--sampler", "jax", "--n", "200", *run, "--out", str(b)]) == 0
    ra, rb = xr.open_dataset(a), xr.open_dataset(b)
    assert ra.attrs["sampler"] == rb.attrs["sampler"] == "jax"
    np.testing.assert_array_equal(ra.k.values, rb.k.values)
    assert float(ra.test_error) == float(rb.test_error)
    # the stored set is a jax draw: asking for the numpy one contradicts it (one-line error)
    assert main(["train", "--data", str(store), "--sampler", "numpy", *run, "--out", str(a)]) == 2
