"""Estimators (model.md §3): the attention module against hand computations, masking, gradient
stability, and the Bayes oracle against the Bayes risk.

Monte Carlo tolerances: 4 standard errors of the mean squared error (s.e. = std(r²)/√n).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from slrpipe.data import SLRDataset, SLRTask
from slrpipe.models import Attention, attention_apply, bayes_predict
from slrpipe.setting import Setting
from slrpipe.train.metrics import streamed_error
from slrpipe.vocabulary import SIGMAS


def _hand(X, mask, k, v, sigma, c=0.0):
    """Reference f = σ(χ)ᵀz in plain numpy float64 with an explicit 1/√D and per-sample loops; σ
    from the plain formulas of tests/test_scores.py (``reference``)."""
    from test_scores import reference

    D = X.shape[-1]
    out = []
    for Xi, mi in zip(X.astype(float), mask):
        Xi = Xi[mi]
        chi, z = Xi @ k / math.sqrt(D), Xi @ v / math.sqrt(D)
        out.append(reference(sigma, chi, c) @ z)
    return np.array(out)


@pytest.fixture(scope="module")
def batch():
    rng = np.random.default_rng(0)
    D = 16  # 1/√D = 1/4: dropping √D changes every χ by a factor 4
    X = rng.standard_normal((6, 3, D)).astype(np.float32)
    mask = np.array([[1, 1, 1], [1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 1, 0], [1, 0, 0]], bool)
    X[~mask] = 0.0
    k = (1.5 * rng.standard_normal(D)).astype(np.float32)
    v = rng.standard_normal(D).astype(np.float32)
    return X, mask, k, v


@pytest.mark.parametrize("sigma", SIGMAS)
def test_module_matches_hand_computation(batch, sigma):
    X, mask, k, v = batch
    m = Attention(X.shape[-1], sigma, init=(k, v))
    c = 0.3 if m.c is not None else 0.0
    if m.c is not None:
        m.c[...] = jnp.asarray(c, jnp.float32)
    f = np.asarray(m(jnp.asarray(X), jnp.asarray(mask)))
    np.testing.assert_allclose(f, _hand(X, mask, k, v, sigma, c), rtol=2e-5, atol=2e-6)  # float32 rounding


@pytest.mark.parametrize("sigma", SIGMAS)
def test_padded_tokens_never_leak(batch, sigma):
    X, mask, k, v = batch
    params = {"k": jnp.asarray(k), "v": jnp.asarray(v), "c": jnp.asarray(0.1)}
    Xbad = X.copy()
    Xbad[~mask] = 1e6  # χ, z ~ 1e6 on padded tokens: would dominate any leaking softmax or sum
    f0 = attention_apply(params, jnp.asarray(X), jnp.asarray(mask), sigma)
    f1 = attention_apply(params, jnp.asarray(Xbad), jnp.asarray(mask), sigma)
    np.testing.assert_array_equal(np.asarray(f0), np.asarray(f1))
    g = jax.grad(lambda p: jnp.sum(attention_apply(p, jnp.asarray(Xbad), jnp.asarray(mask), sigma) ** 2))(params)
    g0 = jax.grad(lambda p: jnp.sum(attention_apply(p, jnp.asarray(X), jnp.asarray(mask), sigma) ** 2))(params)
    for name in g:
        assert np.all(np.isfinite(np.asarray(g[name])))
        np.testing.assert_allclose(np.asarray(g[name]), np.asarray(g0[name]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("scale", [30.0, 300.0])
@pytest.mark.parametrize("sigma", SIGMAS)
def test_gradients_finite_at_large_chi(batch, sigma, scale):
    # scale 30: |χ| ~ 50 (beyond the informed init at ν = inf, c = 10); scale 300: |χ| ~ 500.
    X, mask, k, v = batch
    params = {"k": jnp.asarray(scale * k), "v": jnp.asarray(v), "c": jnp.asarray(0.0)}
    f, g = jax.value_and_grad(lambda p: jnp.sum(attention_apply(p, jnp.asarray(X), jnp.asarray(mask), sigma)))(params)
    assert np.isfinite(float(f))
    assert all(np.all(np.isfinite(np.asarray(a))) for a in g.values())


def test_module_init_and_params():
    m = Attention(20, "erf", nnx.Rngs(3), init="random")
    p = m.params()
    assert set(p) == {"k", "v", "c"} and p["k"].shape == (20,) and float(p["c"]) == 0.0
    m2 = Attention(20, "erf", nnx.Rngs(3), init="random")
    np.testing.assert_array_equal(np.asarray(m2.k[...]), np.asarray(p["k"]))
    assert abs(float(jnp.mean(p["k"] ** 2)) - 1) < 0.7  # N(0,1) entries, 20 of them
    small = Attention(20, "softmax", nnx.Rngs(3), init="small", scale=1e-2)
    assert small.c is None and float(jnp.max(jnp.abs(small.k[...]))) < 0.1
    m.set_params({"k": jnp.ones(20), "v": jnp.zeros(20), "c": jnp.asarray(2.0)})
    assert float(m.c[...]) == 2.0
    with pytest.raises(ValueError, match="sigma"):
        Attention(5, "relu", nnx.Rngs(0))
    with pytest.raises(ValueError, match="init"):
        Attention(5, "linear", nnx.Rngs(0), init="ones")
    with pytest.raises(ValueError, match="init"):
        Attention(5, "linear", init=(np.zeros(4), np.zeros(5)))


def test_bayes_oracle_spiked_matches_anchor_and_theory():
    # model.md §4 anchor: spiked, L = 2, ν = 1, Δ = 0: Bayes risk 0.32494. The oracle uses the exact
    # teacher, so its risk has no finite-D error: only Monte Carlo (4 s.e.).
    task = SLRTask(Setting("spiked", 1.0, 2, 0.0), 50)
    ds = SLRDataset(task, 100_000, teacher_seed=2, data_seed=5)
    k, v = ds.teacher
    mse, se, n = streamed_error(lambda X, m: bayes_predict(X, m, k, v, "spiked", 1.0), ds.chunks())
    assert abs(mse - 0.32494) < 4 * se, (mse, se)
    population = pytest.importorskip("slrpipe.theory.population")
    assert abs(mse - population.bayes_risk(Setting("spiked", 1.0, 2, 0.0))) < 4 * se


def test_bayes_oracle_max_inf_is_exact_up_to_noise():
    # max-SLR at ν = inf: the argmax oracle recovers z*_{ε*} exactly, so y − f = Δξ.
    task = SLRTask(Setting("max", math.inf, {1: 0.3, 3: 0.7}, 0.3), 40)
    ds = SLRDataset(task, 5000, teacher_seed=1, data_seed=1)
    k, v = ds.teacher
    ch = ds.load()
    f = bayes_predict(ch.X, ch.mask, k, v, "max", math.inf)
    resid = ch.y - f
    # the residual is the label noise itself: std of Δξ over n = 5000 is 0.3 ± 4·0.3/√(2n) = 0.3 ± 0.012
    assert abs(np.std(resid) - 0.3) < 0.012
    assert abs(np.mean(resid)) < 4 * 0.3 / math.sqrt(5000)
    # jax backend agrees with numpy
    fj = bayes_predict(jnp.asarray(ch.X), jnp.asarray(ch.mask), k, v, "max", math.inf, xp=jnp)
    np.testing.assert_allclose(np.asarray(fj), f, rtol=1e-4, atol=1e-5)


def test_bayes_oracle_max_finite_nu_matches_theory():
    task = SLRTask(Setting("max", 2.0, 2, 0.0), 40)
    ds = SLRDataset(task, 100_000, teacher_seed=3, data_seed=3)
    k, v = ds.teacher
    mse, se, _ = streamed_error(lambda X, m: bayes_predict(X, m, k, v, "max", 2.0), ds.chunks())
    population = pytest.importorskip("slrpipe.theory.population")
    assert abs(mse - population.bayes_risk(Setting("max", 2.0, 2, 0.0))) < 4 * se, (mse, se)
