"""The σ registry (slrpipe.sigmas, docs/extending.md): the vocabulary and the figures read it, each
declaration is consistent with its own scores, every dispatcher raises on a σ it does not know,
and a σ registered from outside (normalised ReLU attention) goes through the population theory and
ERM with its own numbers — not those of another σ.

The toy σ: σ_ℓ = relu(χ_ℓ) / Σ_ℓ' relu(χ_ℓ'), uniform 1/L where every field is ≤ 0. It is invariant
under χ → mχ (m > 0), so its m → ∞ limit is itself. Reference values:
* max-SLR, ν = ∞, L = 2 (ε* the larger field): in polar coordinates the ratio of two positive fields
  depends only on the angle, uniform on (0, π/2), so A = 3/4 + ln 2/(4π), B = 5/8 + 1/(2π) and the
  optimum over m_k > 0 (all m_k > 0 give the same risk; m_k = 0 gives 1/2) is 1 − A²/B = 0.1732745
  (softplus_norm's limit, the argmax for negative fields, gives 0.04835).
* spiked-SLR, ν = 2, L = 3, m_k = q_k = 1: Monte Carlo with 10⁸ samples (10 batches of 10⁷, numpy
  seed 12345), A = 0.651804 ± 4.0·10⁻⁵, B = 0.694321 ± 2.5·10⁻⁵ (standard errors of the batch means);
  softplus_norm at m_k = 1 gives (0.512, 0.442).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from slrpipe import scores, sigmas, vocabulary
from slrpipe.setting import Setting
from slrpipe.sigmas import Sigma
from slrpipe.sigmas.kernels import masked

# ---------------------------------------------------------------------------------------- toy σ
TOY = "relu_norm_toy"


def _relu_norm(chi, mask=None, xp=np):
    r = masked(xp.maximum(chi, 0.0), mask, xp)
    tot = r.sum(axis=-1, keepdims=True)
    valid = xp.ones_like(chi) if mask is None else xp.where(mask, 1.0, 0.0)
    return xp.where(tot > 0, r / xp.where(tot > 0, tot, 1.0), valid / valid.sum(axis=-1, keepdims=True))


TOY_SIGMA = Sigma(
    name=TOY,
    score=_relu_norm,
    normalised=True,
    odd=False,
    offset=False,
    limit=_relu_norm,  # scale-invariant: the limit is σ itself
    limit_up_to_scale=False,
    exact_length=None,
    replica=False,
    replica_note="kinked at 0: the prox's Newton iterations do not converge",
    label="ReLU (normalised)",
    colour="#9467bd",
    marker="v",
    length_law="log",
)

MAX_INF_A = 0.75 + math.log(2) / (4 * math.pi)
MAX_INF_B = 0.625 + 1 / (2 * math.pi)
SPIKED_AB, SPIKED_SE = (0.651804, 0.694321), (4.0e-5, 2.5e-5)


@pytest.fixture
def toy():
    with sigmas.registered(TOY_SIGMA) as s:
        yield s


# ------------------------------------------------------------------------------------ registry
def test_a_registered_sigma_is_accepted_by_the_config_schema(toy):
    """The schema's σ lists follow the registry (slrpipe.config.load_schema): a toy σ registered
    here is a valid σ of a population and an ERM experiment, not of a replica one (its declaration
    says the solver does not support it) — and invalid again once unregistered."""
    from slrpipe.config import ConfigError, validate

    def config(kind):
        exp = {"model": "spiked", "L": 2, "nu": [1.0] if kind == "population" else 1.0, "sigmas": [TOY]}
        if kind != "population":
            exp |= {"alphas": [1.0], "lams": [0.1]} | ({"seeds": [0], "D": 40} if kind == "erm" else {})
        return {kind: {"toy": exp}}

    assert validate(config("population"))["population"]["toy"]["sigmas"] == [TOY]
    assert validate(config("erm"))["erm"]["toy"]["sigmas"] == [TOY]
    with pytest.raises(ConfigError, match=rf"replica\.toy\.sigmas\[0\]: '{TOY}' is not one of"):
        validate(config("replica"))
    with sigmas.registered(Sigma(**{**TOY_SIGMA.__dict__, "name": TOY + "_replica", "replica": True})):
        validate({"replica": {"toy": {**config("replica")["replica"]["toy"], "sigmas": [TOY + "_replica"]}}})


def test_an_unregistered_toy_sigma_is_not_in_the_config_schema():
    from slrpipe.config import ConfigError, validate

    with pytest.raises(ConfigError, match=rf"'{TOY}' is not one of \['softmax'"):
        validate({"population": {"p": {"model": "spiked", "L": 2, "nu": [1.0], "sigmas": [TOY]}}})


def test_vocabulary_reads_the_registry():
    names = sigmas.names()
    assert vocabulary.SIGMAS == names and names[:4] == ("softmax", "linear", "erf", "softplus_norm")
    assert vocabulary.NORMALISED_SIGMAS == tuple(s for s in names if sigmas.get(s).normalised)
    assert vocabulary.ODD_SIGMAS == tuple(s for s in names if sigmas.get(s).odd)
    assert vocabulary.REPLICA_SIGMAS == tuple(s for s in names if sigmas.get(s).replica)
    # the paper's four, as docs/model.md §3 classifies them
    assert [s for s in names[:4] if sigmas.get(s).normalised] == ["softmax", "softplus_norm"]
    assert [s for s in names[:4] if sigmas.get(s).odd] == ["linear", "erf"]
    assert [s for s in names[:4] if not sigmas.get(s).replica] == ["erf"]
    for name in names:
        assert sigmas.get(name).name == name


def test_figures_read_the_registry():
    from slrpipe.figures.style import COLORS, LABELS, MARKERS

    for name in sigmas.names():
        s = sigmas.get(name)
        assert (COLORS[name], LABELS[name], MARKERS[name]) == (s.colour, s.label, s.marker)


def test_every_declared_exact_reduction_is_implemented():
    from slrpipe.theory import exact_length

    implemented = set(exact_length._NORMALISED_KINDS) | set(exact_length._TOKEN_REDUCTIONS)
    assert implemented == set(sigmas.EXACT_REDUCTIONS)


@pytest.mark.parametrize("name", [*sigmas.names(), TOY])
def test_declarations_match_the_scores(name):
    """normalised: rows sum to 1; odd: σ − 1 odd in χ; limit: σ(mχ*) at m = 10⁶ equals it up to a
    positive factor (exactly, unless limit_up_to_scale)."""
    s = TOY_SIGMA if name == TOY else sigmas.get(name)
    chi = np.random.default_rng(1).normal(size=(200, 4))
    out = s.score(chi)
    if s.normalised:
        np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-12)
    if s.odd:
        np.testing.assert_allclose(s.score(-chi) - 1.0, -(out - 1.0), rtol=1e-12, atol=1e-15)
    m = 1e6
    big = s.score(m * chi)
    lim = s.limit(chi)
    if s.limit_up_to_scale:  # each row scaled to unit ℓ¹ norm (a zero row stays zero)
        big, lim = (
            np.where(n > 0, a / np.where(n > 0, n, 1.0), 0.0)
            for a, n in ((a, np.abs(a).sum(-1, keepdims=True)) for a in (big, lim))
        )
    np.testing.assert_allclose(big, lim, atol=1e-5, equal_nan=False)


def test_a_declaration_is_checked():
    with pytest.raises(ValueError, match="exact_length"):
        Sigma(**{**TOY_SIGMA.__dict__, "exact_length": "normalised_relu"})
    with pytest.raises(ValueError, match="length_law"):
        Sigma(**{**TOY_SIGMA.__dict__, "length_law": "exp"})
    with pytest.raises(ValueError, match="already registered"):
        with sigmas.registered(sigmas.get("softmax")):
            pass


# -------------------------------------------------------------------------- unknown σ raises
def _dispatchers():
    from slrpipe.analysis.distance import weight_distance
    from slrpipe.figures.length import fit_laws
    from slrpipe.models import Attention
    from slrpipe.theory import exact_length, overlap_risk, population
    from slrpipe.theory.replica import prox

    w = (np.ones(3), np.ones(3))
    return {
        "scores.score": lambda s: scores.score(s, np.zeros((1, 3))),
        "vocabulary.check_sigma": vocabulary.check_sigma,
        "population.ab": lambda s: population.ab(s, Setting("spiked", 1.0, 2), 1.0, 1.0),
        "overlap_risk._sigma_limit": lambda s: overlap_risk._sigma_limit(s, np.zeros((1, 3))),
        "exact_length.supported": lambda s: exact_length.supported(s, "spiked", 1.0, 1.0),
        "exact_length.ab_exact": lambda s: exact_length.ab_exact(s, "spiked", 1.0, 3, 1.0),
        "exact_length._kind": lambda s: exact_length._kind(s, 1.0),
        "prox.check_sigma": prox.check_sigma,
        "Attention": lambda s: Attention(3, s, init="zeros"),
        "weight_distance": lambda s: weight_distance(s, w, w),
        "fit_laws": lambda s: fit_laws(np.arange(10.0, 13.0), {s: np.ones(3)}),
    }


@pytest.mark.parametrize("where", sorted(_dispatchers()))
def test_every_dispatcher_raises_on_an_unknown_sigma(where):
    with pytest.raises(ValueError, match="sigma"):
        _dispatchers()[where]("relu_norm_unregistered")


# ------------------------------------------------------------------------ toy σ: population
def test_toy_has_no_exact_reduction_and_is_not_computed_as_another(toy):
    """exact_length once treated every σ but softmax as softplus_norm; a σ declaring no reduction is
    now unsupported there (the population falls back to the field quadrature)."""
    from slrpipe.theory import exact_length

    assert not exact_length.supported(TOY, "spiked", 2.0, 1.0)
    assert exact_length.ab_exact(TOY, "spiked", 2.0, 3, 1.0) is None
    with pytest.raises(ValueError, match="no normalised exact-in-L reduction"):
        exact_length._kind(TOY, 1.0)


def test_toy_population_expectations_spiked(toy):
    """A, B at spiked ν = 2, L = 3, m_k = q_k = 1 against the Monte Carlo reference (module
    docstring): within 4 of its standard errors plus the quadrature's own error, which the change
    under one refinement bounds."""
    from slrpipe.theory import population
    from slrpipe.theory.quadrature import QuadSpec

    a, b = population.ab(TOY, Setting("spiked", 2.0, 3), 1.0, 1.0)
    a1, b1 = population.ab(TOY, Setting("spiked", 2.0, 3), 1.0, 1.0, quad=QuadSpec().refined(3))
    for got, fine, ref, se in ((a, a1, SPIKED_AB[0], SPIKED_SE[0]), (b, b1, SPIKED_AB[1], SPIKED_SE[1])):
        assert abs(got - ref) < 4 * se + abs(fine - got), (got, fine, ref)
    # and scale invariance: the same at m_k = q_k^{1/2} = 3, to the refinement change
    a3, b3 = population.ab(TOY, Setting("spiked", 2.0, 3), 3.0, 9.0)
    assert abs(a3 - a) <= abs(a1 - a) + 1e-12 and abs(b3 - b) <= abs(b1 - b) + 1e-12


def test_toy_population_optimum_uses_its_own_limit(toy):
    """max-SLR, ν = ∞, L = 2: the optimum is the closed form of the module docstring (the m_k = ∞
    limit once defaulted to softplus_norm's: 0.04835), within the reported quadrature error."""
    from slrpipe.theory import population

    exact = 1.0 - MAX_INF_A**2 / MAX_INF_B
    out = population.optimal_risk(TOY, Setting("max", math.inf, 2))
    assert abs(out["risk"] - exact) <= max(3 * out["risk_err"], 1e-9), (out, exact)
    assert abs(out["risk"] - 0.04835) > 0.1
    assert out["m_k"] > 0 and math.isfinite(out["m_v"])  # limit exact, not up to scale: m_v defined


def test_toy_replica_refused_with_its_reason(toy):
    from slrpipe.theory.replica import prox

    with pytest.raises(ValueError, match="kinked"):
        prox.check_sigma(TOY)


# ------------------------------------------------------------------------------ toy σ: ERM
def test_toy_erm_test_error_is_the_population_risk_at_its_overlaps(toy):
    """ERM trains the toy σ (spiked ν = 2, L = 3, D = 60, α = 10, λ = 0.1, informed start); for the
    learned (k, v) the fields are exactly Gaussian at any D, so the fresh-test error equals the
    population risk at the learned Gram matrix up to Monte Carlo (4 s.e. of 4·10⁴ test sequences)
    and quadrature error (≤ 1e-3, the QMC/tensor rule's at L = 3)."""
    from slrpipe.data import SLRDataset, SLRTask
    from slrpipe.train import ERMOptions, run_erm

    ds = SLRDataset(SLRTask(Setting("spiked", 2.0, 3, 0.0), 60), 600, teacher_seed=0, data_seed=1)
    model, r = run_erm(ds, ERMOptions.of(TOY, 0.1, n_test=40_000, max_iter=300, bayes=False))
    assert model.c is None  # no offset declared: no c parameter
    err, theory, se = float(r.test_error), float(r.test_error_theory), float(r.test_error_se)
    assert math.isfinite(err) and math.isfinite(theory)
    assert abs(err - theory) < 4 * se + 1e-3, (err, theory, se)
    # it learned something: below the m_k = 0 risk (σ uniform, 1 − 1/L at the best value scale)
    assert err + 4 * se < 1.0 - 1.0 / 3


def test_toy_scores_numpy_equals_jax(toy):
    chi = np.random.default_rng(2).normal(size=(30, 4))
    chi[::4] = -np.abs(chi[::4])  # rows with every field ≤ 0: uniform
    mask = np.ones_like(chi, bool)
    mask[::3, 3] = False
    a = scores.score(TOY, chi, mask)
    with jax.enable_x64(True):
        b = np.asarray(scores.score(TOY, jnp.asarray(chi), jnp.asarray(mask), xp=jnp))
    np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(a.sum(-1), 1.0, rtol=1e-12)
    assert (a[~mask] == 0).all()
