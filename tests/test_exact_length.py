"""Exact-in-L population expectations (slrpipe.theory.exact_length, docs/theory.md §12).

Tolerances: the reductions converge to ≤ 2e-12 under 1.5× refinement of every node count
(measured over σ × model × ν × L ≤ 10⁴ × m ≤ 999, see benchmarks/bench_population.py --part length); the field
quadrature they are compared with is accurate to ~1e-14 at L = 2 and, once refined, ~1e-12 at
L = 3 (its default L = 3 rule is only good to ~2e-7 on B, so the L = 3 check uses the refined
rule). Monte Carlo comparisons use 4 standard errors of the sample mean.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import erf

from slrpipe.scores import score
from slrpipe.setting import Setting
from slrpipe.theory import overlap_risk
from slrpipe.theory import population as pop
from slrpipe.theory.exact_length import _erf_mean, _erf_sq_mean, ab_exact
from slrpipe.theory.quadrature import QuadSpec

INF = math.inf
ORDERED = QuadSpec(method="ordered")
EXACT = QuadSpec(method="exact")

CASES = [  # (σ, model, ν, m, c): each has an exact reduction
    ("softmax", "spiked", 1.0, 1.0, 0.0),
    ("softmax", "spiked", 5.0, 2.5, 0.0),
    ("softmax", "spiked", 2.0, INF, 0.0),
    ("softplus_norm", "spiked", 2.0, 1.5, 0.0),
    ("softplus_norm", "spiked", 2.0, INF, 0.0),
    ("linear", "spiked", 5.0, 1.0, 0.0),
    ("erf", "spiked", 1.0, 0.7, -0.2),
    ("erf", "max", 2.0, 0.7, -0.2),
    ("erf", "max", INF, 0.7, 0.3),
    ("linear", "max", 2.0, 1.0, 0.0),
    ("linear", "max", INF, 0.8, 0.0),
    ("softmax", "max", 2.0, 2.0, 0.0),
    ("softplus_norm", "max", 0.0, 1.0, 0.0),
    ("softmax", "max", 0.0, 3.0, 0.0),
]


@pytest.mark.parametrize("sigma,model,nu,m,c", CASES)
@pytest.mark.parametrize("L", [2, 3])
def test_equals_field_quadrature(sigma, model, nu, m, c, L):
    spec = ORDERED if L == 2 else ORDERED.refined(3)
    q = overlap_risk.ab_law(sigma, Setting(model, nu, {L: 1.0}), m, m * m, c, spec).mean(1)
    e = ab_exact(sigma, model, nu, L, m, c)
    assert abs(e[0] - q[0]) < 1e-8 and abs(e[1] - q[1]) < 1e-8 * max(1.0, q[1])


def test_erf_moments_vs_quad():
    # E σ and E σ², σ = 1 + erf(c + m x), x ~ N(μ, 1): closed forms (erfc, Owen's T) against quad
    for mu, m, c in [(0.0, 0.0, 0.3), (1.0, 0.7, -1.2), (0.0, 5.0, 2.0), (2.0, 40.0, 0.1)]:
        f = lambda x, k: (1 + erf(c + m * x)) ** k * math.exp(-((x - mu) ** 2) / 2) / math.sqrt(2 * math.pi)
        pts = [-c / m] if m > 0 and abs(c / m - mu) < 12 else None
        e1 = quad(f, mu - 12, mu + 12, args=(1,), points=pts, epsabs=1e-13, limit=200)[0]
        e2 = quad(f, mu - 12, mu + 12, args=(2,), points=pts, epsabs=1e-13, limit=200)[0]
        assert _erf_mean(mu, m, c) == pytest.approx(e1, abs=1e-11)
        assert _erf_sq_mean(mu, m, c) == pytest.approx(e2, abs=1e-11)


def test_erf_moments_far_tail_relative():
    # σ = 1 + erf(c + m x) at c ≪ 0: 1 + 2E erf + E erf² cancels to garbage (a variable-length optimum
    # once reached risk −348 through it); the rule keeps full relative precision
    from scipy.special import erfc

    for mu, m, c in [(0.0, 0.035, -5.6), (1.0, 0.5, -3.0), (0.0, 2.0, -8.0), (1.0, 0.3, -6.0)]:
        f = lambda x: erfc(-(c + m * x)) ** 2 * math.exp(-((x - mu) ** 2) / 2) / math.sqrt(2 * math.pi)
        ref = quad(f, -40, 40, epsabs=0, epsrel=1e-12, limit=500, points=[-c / m])[0]
        assert _erf_sq_mean(mu, m, c) == pytest.approx(ref, rel=1e-10)


# ------------------------------------------------------------------ brute-force Monte Carlo
def _mc_ab(sigma, model, nu, L, m, c, n, rng, chunk=2000):
    """Sample means and standard errors of σ(χ)_{ε*} (as E[Σ_ℓ P(ε* = ℓ | χ*) σ_ℓ]) and |σ|²."""
    a_vals, b_vals = [], []
    for i in range(0, n, chunk):
        k = min(chunk, n - i)
        x = rng.standard_normal((k, L))
        if model == "spiked":
            x[:, 0] += math.sqrt(nu)
            p = np.zeros((k, L))
            p[:, 0] = 1.0
        else:
            p = np.eye(L)[x.argmax(1)] if math.isinf(nu) else score("softmax", nu * x)
        sig = score(sigma, m * x, c=c)
        a_vals.append((p * sig).sum(1))
        b_vals.append((sig * sig).sum(1))
    a, b = np.concatenate(a_vals), np.concatenate(b_vals)
    return a.mean(), a.std() / math.sqrt(n), b.mean(), b.std() / math.sqrt(n)


@pytest.mark.parametrize(
    "sigma,model,nu,m,c",
    [
        ("softmax", "spiked", 9.0, 2.0, 0.0),
        ("softplus_norm", "spiked", 9.0, 5.0, 0.0),
        ("softmax", "max", 3.0, 3.0, 0.0),
        ("erf", "max", 2.0, 0.8, -1.0),
        ("linear", "max", INF, 0.5, 0.0),
        ("erf", "spiked", 4.0, 1.0, -2.0),
        ("erf", "max", 2.0, 40.0, 0.5),
    ],
)
@pytest.mark.parametrize("L,n", [(64, 40_000), (1024, 6_000)])
def test_monte_carlo(sigma, model, nu, m, c, L, n):
    rng = np.random.default_rng(1000 + L)
    a, sa, b, sb = _mc_ab(sigma, model, nu, L, m, c, n, rng)
    e = ab_exact(sigma, model, nu, L, m, c)
    assert abs(e[0] - a) < 4 * sa and abs(e[1] - b) < 4 * sb


def test_length_law_is_weighted_sum():
    law = {1: 0.2, 3: 0.3, 17: 0.4, 4096: 0.1}
    for sigma, model, nu, m, c in CASES:
        mixed = np.array(ab_exact(sigma, model, nu, law, m, c))
        parts = sum(p * np.array(ab_exact(sigma, model, nu, L, m, c)) for L, p in law.items())
        assert np.allclose(mixed, parts, rtol=1e-13, atol=1e-14)


# ------------------------------------------------------------------ Prop. 4.2 and closed forms
@pytest.mark.parametrize("L", [2, 3, 8, 64, 1024, 10_000])
@pytest.mark.parametrize("nu", [0.5, 2.0, 9.0])
def test_softmax_attains_bayes_any_L(L, nu):
    res = pop.optimal_risk("softmax", Setting("spiked", nu, L))
    bayes = pop.bayes_risk(Setting("spiked", nu, L))
    assert res["risk"] >= bayes - 1e-9
    assert res["risk"] - bayes < 1e-6


def test_issue_L8_below_bayes_fixed():
    # the field quadrature (QMC at L = 8) put the softmax optimum 2e-4 below Bayes
    res = pop.optimal_risk("softmax", Setting("spiked", 2.0, 8))
    assert abs(res["risk"] - pop.bayes_risk(Setting("spiked", 2.0, 8))) < 1e-9 and res["risk_err"] < 1e-10


def test_bayes_max_any_L():
    # max-SLR Bayes via B at m = ν; at ν = 0 it is 1 − 1/L, at ν = ∞ zero
    for L in (5, 300):
        assert pop.bayes_risk(Setting("max", 0.0, L)) == pytest.approx(1 - 1 / L, abs=1e-12)
        assert pop.bayes_risk(Setting("max", INF, L)) == 0.0
    r = pop.bayes_risk(Setting("max", 2.0, 64))
    assert r == pytest.approx(pop.bayes_risk(Setting("max", 2.0, 64), quad=QuadSpec(method="quadrature")), abs=1e-3)


@pytest.mark.parametrize("L", [2, 3, 10, 100, 10_000])
@pytest.mark.parametrize("nu", [0.0, 1.0, 30.0, 1e4])
def test_linear_closed_form_any_L(L, nu):
    res = pop.optimal_risk("linear", Setting("spiked", nu, L), quad=EXACT)
    assert abs(res["risk"] - pop.linear_risk_spiked(Setting("spiked", nu, L))) < 1e-9
    if nu <= 30:  # default spec (tensor rule at L = 2; at ν = 1e4 it is off by 5e-6, its risk_err)
        assert (
            abs(
                pop.optimal_risk("linear", Setting("spiked", nu, L))["risk"]
                - pop.linear_risk_spiked(Setting("spiked", nu, L))
            )
            < 1e-8
        )


def test_exact_method_refuses_missing_reduction():
    with pytest.raises(ValueError, match="exact"):
        pop.ab("softmax", Setting("max", 2.0, 64), 1.0, 1.0, quad=EXACT)
    # 'auto' falls back to the field quadrature there (QMC at L = 64)
    a, b = pop.ab("softmax", Setting("max", 2.0, 64), 1.0, 1.0)
    # against brute force: χ* iid N(0, 1), p = softmax(νχ*), σ = softmax(χ*) (m_k = 1);
    # A = E Σ p σ, B = E Σ σ², 4 standard errors of the Monte Carlo (the QMC error is far smaller)
    chi = np.random.default_rng(7).standard_normal((100_000, 64))
    p, s = score("softmax", 2.0 * chi), score("softmax", chi)
    for val, samples in ((a, (p * s).sum(1)), (b, (s * s).sum(1))):
        assert abs(val - samples.mean()) < 4 * samples.std() / np.sqrt(samples.size)
