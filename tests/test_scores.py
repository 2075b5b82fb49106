"""Score functions: definitions of model.md §3, masking, numerical stability, numpy = jax."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import erf as sp_erf

from slrpipe import scores
from slrpipe.vocabulary import SIGMAS

RNG = np.random.default_rng(0)
CHI = RNG.normal(size=(50, 4)) * 3
MASK = np.ones((50, 4), bool)
MASK[::3, 3] = False
MASK[::5, 2:] = False


def _softplus_norm(chi):
    s = np.log1p(np.exp(chi))
    return s / s.sum()


#: plain formulas of model.md §3, one unmasked row each (a new σ adds its own: docs/extending.md)
REFERENCES = {
    "softmax": lambda chi, c: np.exp(chi) / np.exp(chi).sum(),
    "linear": lambda chi, c: 1 + chi,
    "erf": lambda chi, c: 1 + sp_erf(c + chi),
    "softplus_norm": lambda chi, c: _softplus_norm(chi),
}


def reference(name, chi, c=0.0):
    """The plain formula of σ ``name`` for one unmasked row (KeyError for a σ without one)."""
    return REFERENCES[name](np.asarray(chi, float), c)


def test_every_sigma_has_a_reference():
    assert set(REFERENCES) == set(SIGMAS)


@pytest.mark.parametrize("name", SIGMAS)
def test_definitions_and_mask(name):
    out = scores.score(name, CHI, MASK, c=0.3)
    for row, m, o in zip(CHI, MASK, out):
        np.testing.assert_allclose(o[m], reference(name, row[m], c=0.3), rtol=1e-12)
        assert (o[~m] == 0).all()  # padded tokens get no weight


@pytest.mark.parametrize("name", SIGMAS)
def test_numpy_equals_jax_and_padding_values_irrelevant(name):
    poisoned = np.where(MASK, CHI, 1e4)  # huge values in padded slots must not leak
    a = scores.score(name, CHI, MASK, c=0.3)
    with jax.enable_x64(True):
        b = np.asarray(scores.score(name, jnp.asarray(poisoned), jnp.asarray(MASK), xp=jnp, c=0.3))
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("name", ["softmax", "softplus_norm"])
def test_normalised_scores_stable_far_out(name):
    chi = np.array([[-3000.0, -3001.0, 800.0], [900.0, 899.0, -5.0]])
    out = scores.score(name, chi, np.array([[1, 1, 0], [1, 1, 1]], bool))
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-12)
    grad = jax.grad(lambda x: scores.score(name, x, xp=jnp)[0, 0])(jnp.asarray(chi))
    assert np.isfinite(np.asarray(grad)).all()


def test_unknown_sigma():
    with pytest.raises(ValueError, match=f"sigma: must be one of {', '.join(SIGMAS)}, got 'relu'"):
        scores.score("relu", CHI)
