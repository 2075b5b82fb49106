"""L-BFGS with the starts of one training set as lanes (slrpipe.train.lanes): the lanes reach the
minima ``optax.lbfgs`` reaches from the same starts, each lane is the run it would be alone, a
stopped lane is frozen, and the workflow option ``lanes`` reaches the runs.

Tolerances: in float64 both solvers stop at |∇J|₂ < 1e-10; where J is strongly convex around the
minimum reached (Hessian eigenvalues ≥ μ ~ 1e-2 here), two such points lie within |∇J|/μ ~ 1e-8 of
each other, so parameters are compared to 1e-6 of their norm, a margin of 100.
"""

import jax
import numpy as np
import pytest

from slrpipe.data import SLRDataset, SLRTask
from slrpipe.setting import Setting
from slrpipe.train import ERMOptions, SolverOptions, minimize
from slrpipe.train.erm import place_data
from slrpipe.train.experiment import init_model, run_erm_batch
from slrpipe.train.lane_steps import _cubic_step
from slrpipe.train.lanes import minimize_lanes

LAM = 0.1
TIGHT = SolverOptions(max_iter=2000, tol=1e-10)


@pytest.fixture(scope="module")
def problem():
    """Spiked ν = 2, L = 3, D = 32, α = 5: the informed start and two random ones, in float64."""
    from flax import nnx

    ds = SLRDataset(SLRTask(Setting("spiked", 2.0, 3, 0.0), 32), 160, teacher_seed=0, data_seed=1)
    X, mask, y = (np.asarray(a) for a in ds.load()[:3])
    with jax.enable_x64(True):
        starts = []
        for init, seed in (("informed", 0), ("random", 1), ("random", 2)):
            model = init_model(ds, "softmax", init, seed, np.float64)
            starts.append({k: np.asarray(a) for k, a in nnx.to_pure_dict(nnx.split(model, nnx.Param)[1]).items()})
    return ds, X, mask, y, starts


def _close(a, b, rel=1e-6):
    for name in ("k", "v"):
        assert np.linalg.norm(a[name] - b[name]) <= rel * np.linalg.norm(b[name]), name


def test_lanes_reach_the_minima_optax_lbfgs_reaches_from_the_same_starts(problem):
    ds, X, mask, y, starts = problem
    with jax.enable_x64(True):
        data = place_data(X, mask, y, np.float64)
        lanes = minimize_lanes(starts, data, "softmax", LAM, TIGHT)
        alone = [minimize(p, X, mask, y, "softmax", LAM, TIGHT, data=data) for p in starts]
    for a, b in zip(lanes, alone):
        assert a.converged and b.converged and a.gnorm < 1e-10 and a.lanes == 3 and b.lanes == 0
        assert abs(a.loss - b.loss) <= 1e-12 * abs(b.loss) + 1e-14
        _close(a.params, b.params)
        assert a.trajectory["loss"][0] == pytest.approx(b.trajectory["loss"][0], rel=1e-14)


def test_each_lane_is_the_run_it_would_be_alone(problem):
    # the lanes share evaluations, not decisions: a start trained with others reaches the point
    # it reaches as the only lane, in as many iterations (up to one, from rounding in the products)
    ds, X, mask, y, starts = problem
    with jax.enable_x64(True):
        data = place_data(X, mask, y, np.float64)
        together = minimize_lanes(starts, data, "softmax", LAM, TIGHT)
        for i, p in enumerate(starts):
            (alone,) = minimize_lanes([p], data, "softmax", LAM, TIGHT)
            _close(together[i].params, alone.params, 1e-8)
            assert abs(together[i].iterations - alone.iterations) <= 1


def test_a_lane_at_its_minimum_stays_there_while_the_others_run(problem):
    ds, X, mask, y, starts = problem
    with jax.enable_x64(True):
        data = place_data(X, mask, y, np.float64)
        (done,) = minimize_lanes(starts[:1], data, "softmax", LAM, TIGHT)
        res = minimize_lanes([done.params, starts[1]], data, "softmax", LAM, TIGHT)
    assert res[0].iterations == 0 and res[0].reason == "tol"
    np.testing.assert_array_equal(res[0].params["k"], done.params["k"])
    assert res[1].converged and res[1].iterations > 0


def test_the_cubic_step_is_exact_on_a_quadratic():
    # φ(t) = (t − 0.3)²: φ(0) = 0.09, φ'(0) = −0.6, φ(1) = 0.49, φ'(1) = 1.4; the minimiser 0.3
    # lies inside the safeguarded interval [0.1, 0.9] (exact up to float32 rounding, 6e-8); an
    # outside one falls back to bisection
    t = _cubic_step(np.float64(0.0), 0.09, -0.6, np.float64(1.0), 0.49, 1.4)
    assert float(t) == pytest.approx(0.3, abs=1e-6)
    t = _cubic_step(np.float64(0.0), 0.0025, -0.1, np.float64(1.0), 0.9025, 1.9)  # minimiser 0.05
    assert float(t) == 0.5


def test_batched_lane_runs_are_written_with_their_lane_count_and_options_are_checked():
    ds = SLRDataset(SLRTask(Setting("spiked", 1.0, 3, 0.0), 32), 160, teacher_seed=0, data_seed=1)
    opts = [
        ERMOptions.of("softmax", LAM, init=init, init_seed=i, n_test=200, max_iter=60, theory=False, lanes=True)
        for init, i in (("informed", 0), ("random", 1), ("random", 2))
    ] + [ERMOptions.of("linear", LAM, init="random", init_seed=3, n_test=200, max_iter=60, theory=False)]
    out = [ds_ for _, ds_ in run_erm_batch(ds, opts)]
    assert [int(d.attrs["lanes"]) for d in out] == [3, 3, 3, 0]
    assert all(np.isfinite(d.train_loss.item()) for d in out)
    with pytest.raises(ValueError, match="lanes"):
        SolverOptions(optimizer="gd", lanes=True)
    with pytest.raises(ValueError, match="params0"):
        minimize_lanes([], place_data(*(np.asarray(a) for a in ds.load()[:3]), np.float32), "softmax", LAM)


#: representative points of the default config (spiked ν = 1, λ = 0.1, α = 2) and of
#: config/validation_cpu.yaml (max-SLR ν = ∞, λ = 0.01 and 0.1, α = 5), at D = 256, L = 3
MIXED_POINTS = [("spiked", 1.0, 2.0, (0.1,)), ("max", float("inf"), 5.0, (0.01, 0.1))]


@pytest.mark.parametrize("model,nu,alpha,lams", MIXED_POINTS)
def test_every_model_of_a_training_set_as_lanes_gets_its_numbers_alone(model, nu, alpha, lams):
    # both σ, every λ and two starts in one solve (one product X·W), against each model as the
    # only lane of its solve. In float64 to |∇J|₂ < tol = 1e-9 (``stalled`` at the rounding floor
    # also allowed, |∇J|₂ < 1e-8): J's Hessian is at least the penalty's μ = λ/n there (the data
    # term is convex near a minimum), so two such points of one minimum lie within 2·1e-8/μ in |θ|;
    # overlaps (quadratic in θ, /D) and the test error (smooth in θ) then agree to twice that
    # relative to |θ| (3e-4 at λ = 0.01, n = 1280; measured ≤ 1e-7), and J, stationary there, to
    # (1e-8)²/μ relative to J (< 1e-10).
    from slrpipe.train.metrics import OVERLAPS

    ds = SLRDataset(SLRTask(Setting(model, nu, 3, 0.0), 256), int(alpha * 256), teacher_seed=0, data_seed=1)
    opts = [
        ERMOptions.of(
            sigma,
            lam,
            init=init,
            init_seed=seed,
            n_test=1000,
            max_iter=3000,
            tol=1e-9,
            dtype="float64",
            theory=False,
            bayes=False,
            lanes=True,
        )
        for sigma in ("softmax", "linear")
        for lam in lams
        for init, seed in ((("informed", 0), ("random", 1)) if len(lams) == 1 else (("informed", 0),))
    ]
    together = [d for _, d in run_erm_batch(ds, opts)]
    assert [int(d.attrs["lanes"]) for d in together] == [len(opts)] * len(opts)
    for o, a in zip(opts, together):
        ((_, b),) = run_erm_batch(ds, [o])
        assert int(b.attrs["lanes"]) == 1 and (a.sigma.item(), a.lam.item()) == (o.sigma, o.lam)
        for d in (a, b):
            assert d.attrs["stop_reason"] in ("tol", "stalled") and d.gnorm.item() < 1e-8, (o, d.attrs["stop_reason"])
        mu, theta = o.lam / ds.n, np.hypot(np.linalg.norm(b.k), np.linalg.norm(b.v))
        rel = 2 * (2 * 1e-8 / mu) / theta
        assert a.train_loss.item() == pytest.approx(b.train_loss.item(), rel=1e-10), o
        for name in (*OVERLAPS, "test_error", "train_mse"):
            scale = max(abs(b[name].item()), 1e-2)  # the cross overlaps are ~0: compare to 1e-2
            assert abs(a[name].item() - b[name].item()) <= rel * scale, (o, name, rel)


def test_the_wide_and_the_plain_product_forms_give_the_same_values_and_gradients(problem, monkeypatch):
    # ``lane_fields`` picks its product form by the number of columns (``WIDE_COLUMNS``): both
    # forms compute the same sums in another order, so in float64 J and ∇J agree to rounding
    # (~1e-16 per term over D = 32 terms; 1e-12 relative leaves a margin of > 100)
    from slrpipe.train import lane_steps

    ds, X, mask, y, starts = problem
    segments = (("linear", 1), ("softmax", 2))
    with jax.enable_x64(True):
        data = place_data(X, mask, y, np.float64, True)
        P = jax.tree.map(lambda *a: np.stack(a), *starts)
        lam = np.array([0.01, 0.1, 1.0])
        out = {}
        for wide in (0, 10**9):
            monkeypatch.setattr(lane_steps, "WIDE_COLUMNS", wide)
            out[wide] = lane_steps._values_and_grads(P, data, segments, lam)
    (v0, g0), (v1, g1) = out[0], out[10**9]
    np.testing.assert_allclose(v0, v1, rtol=1e-12)
    for name in ("k", "v"):
        np.testing.assert_allclose(g0[name], g1[name], rtol=1e-12, atol=1e-12 * np.abs(g1[name]).max())


def test_stopped_lanes_drop_out_of_the_passes_and_each_lane_keeps_its_run(problem, caplog):
    # six lanes (twelve columns: the wide product form) of three λ stop at different iterations
    # (both σ with dropped lanes: the D = 256 test above); with stopped lanes dropped from the
    # products (the default) every lane reaches the point it reaches when all are evaluated to the
    # end, and alone, to the float64 criterion of the tests above (1e-8 of |θ|, iterations ±1 from
    # rounding in the products), while the products hold fewer lanes than six per pass
    import logging
    import re

    from flax import nnx

    ds, X, mask, y, starts = problem
    with jax.enable_x64(True):
        more = []
        for seed in (3, 4, 5):
            model = init_model(ds, "softmax", "random", seed, np.float64)
            more.append({k: np.asarray(a) for k, a in nnx.to_pure_dict(nnx.split(model, nnx.Param)[1]).items()})
        six = starts + more
        sigmas = ["softmax"] * 6
        lams = [0.1, 1.0, 0.3, 0.1, 1.0, 0.3]
        data = place_data(X, mask, y, np.float64)
        with caplog.at_level(logging.INFO, logger="slrpipe.train.lanes"):
            dropped = minimize_lanes(six, data, sigmas, lams, TIGHT)
            full = minimize_lanes(six, data, sigmas, lams, TIGHT, compact=False)
        alone = {i: minimize_lanes([six[i]], data, sigmas[i], lams[i], TIGHT)[0] for i in (0, 1)}
    counts = [tuple(map(int, m)) for m in re.findall(r"(\d+) passes over X for (\d+) lane-evaluations", caplog.text)]
    (passes, work), (passes_full, work_full) = counts[:2]
    assert work_full == 6 * passes_full and work < 6 * passes
    assert len({r.iterations for r in full}) > 1  # the lanes do stop at different iterations
    for a, b in zip(dropped, full):
        assert a.converged and b.converged, (a.reason, b.reason)
        _close(a.params, b.params, 1e-8)
        assert abs(a.iterations - b.iterations) <= 1
    for i, b in alone.items():
        _close(dropped[i].params, b.params, 1e-8)
        assert abs(dropped[i].iterations - b.iterations) <= 1
