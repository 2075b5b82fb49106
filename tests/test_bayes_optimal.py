"""Bayes-optimal state evolution (slrpipe.theory.replica.bayes_optimal; docs/theory.md §8).

Tolerances are Monte Carlo: the solver's own antithetic-pair standard errors, or the spread they
imply for the fixed point, times 4 (a false alarm rate of ~1e-4 per assertion)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from slrpipe.setting import Setting
from slrpipe.theory import population
from slrpipe.theory.replica.bayes_optimal import _channel, bayes_optimal_sweep, bo_channel, solve_bayes_optimal
from slrpipe.theory.replica.fields import draw_fields


@pytest.mark.parametrize("alpha", [0.5, 2.0])
def test_one_token_is_gaussian_linear_regression(alpha):
    """L = 1: y = z* + Δξ, so the v column is Bayes-optimal linear regression with a N(0, 1)
    prior: m̂ = α/(1 − m + Δ²), m = m̂/(1 + m̂) ⇒ m² − (1 + α + Δ²) m + α = 0, e = 1 + Δ² − m.
    For L = 1 the token posterior is trivial, so m̂_k = αν exactly."""
    delta, nu = 0.5, 1.0
    r = solve_bayes_optimal(Setting("spiked", nu, 1, delta), alpha, n_samples=200000, seed=3)
    b = 1 + alpha + delta**2
    m = (b - math.sqrt(b * b - 4 * alpha)) / 2
    # m̂_v's relative s.e. is ≈ √(2/N) = 0.0032; through m = m̂/(1 + m̂) and the fixed point's
    # amplification 1/(1 − F'(m)) ≤ 1.6 here this is ≤ 7e-4 on m: 4 s.e. ≈ 3e-3
    assert r["converged"]
    assert abs(r["m_v"] - m) < 3e-3
    assert abs(r["test_error"] - (1 + delta**2 - m)) < 3e-3
    assert r["m_k"] == pytest.approx(alpha * nu / (1 + alpha * nu), abs=1e-9)


def test_exact_recovery_phase_reduces_to_population_bayes_risk():
    """Spiked-SLR, Δ = 0, α beyond the recovery threshold of v: m_v = 1, the token posterior is a
    point mass, so m̂_k = αν and m_k = αν/(1 + αν) exactly; the error is then the population Bayes
    risk at the effective signal strength ν m_k (ω_χ/√m_k is spiked with ν m_k)."""
    nu, L = 1.0, 3
    ds = bayes_optimal_sweep(Setting("spiked", nu, L, 0.0), [2.0, 5.0], n_samples=100000, seed=1)
    for alpha in (2.0, 5.0):
        p = ds.sel(alpha=alpha)
        m_k = alpha * nu / (1 + alpha * nu)
        assert bool(p.converged) and 1 - float(p.m_v) < 1e-6
        assert float(p.m_k) == pytest.approx(m_k, abs=1e-6)
        ref = population.bayes_risk(Setting("spiked", nu * m_k, L))
        assert abs(float(p.test_error) - ref) < 4 * float(p.test_error_se) + 1e-6


@pytest.mark.parametrize("model,nu", [("spiked", 2.0), ("max", math.inf)])
def test_large_alpha_reaches_bayes_risk(model, nu):
    """α → ∞: m → 1 and the error → the population Bayes risk (model.md §4); at α = 1e4 the gap is
    O(1 − m_k) = O(1e-4), below the 4 s.e. tolerance."""
    r = solve_bayes_optimal(Setting(model, nu, 3, 0.0), 1e4, n_samples=40000 if model == "spiked" else 6000, seed=0)
    ref = population.bayes_risk(Setting(model, nu, 3))
    assert r["converged"] and r["m_k"] > 0.999
    assert abs(r["test_error"] - ref) < 4 * r["test_error_se"] + 2e-4


def test_nishimori_identity_dpsi_dm_equals_half_mhat():
    """∂/∂m_a E log Z_out = m̂_a/(2α) under the Nishimori law (both sides by Monte Carlo on the same
    fields; reparametrised central differences). Fails if Z_out is not the likelihood of the law
    sampled (e.g. a wrong tilt normaliser −ν m_k/2)."""
    f = draw_fields(Setting("spiked", 1.5, 3, 0.3), 200000, 7)
    m_k, m_v, h = 0.4, 0.5, 1e-4

    def per_sample(mk, mv):
        wk = mk * f.chi_star + math.sqrt(mk - mk**2) * f.xi_k
        wv = mv * f.z_star + math.sqrt(mv - mv**2) * f.xi_v
        with jax.enable_x64(True):
            return [
                np.asarray(a)
                for a in _channel(jnp.asarray(wk), jnp.asarray(wv), jnp.asarray(f.y), (mk, mv), f.delta, "spiked", 1.5)
            ]

    base = per_sample(m_k, m_v)
    for a, (dk, dv) in enumerate(((h, 0), (0, h))):
        up, dn = per_sample(m_k + dk, m_v + dv)[0], per_sample(m_k - dk, m_v - dv)[0]
        diff = (up - dn) / (2 * h) - 0.5 * base[1 + a]
        pair = 0.5 * (diff[: len(diff) // 2] + diff[len(diff) // 2 :])
        assert abs(pair.mean()) < 4 * pair.std(ddof=1) / math.sqrt(pair.size)
        # and the identity is not trivially satisfied: both sides are well away from zero
        assert 0.5 * base[1 + a].mean() > 20 * pair.std(ddof=1) / math.sqrt(pair.size)


def test_sweep_monotone_and_bounded():
    """More data never hurts the Bayes-optimal error: e decreases with α, from ≤ 1 + Δ² down to
    ≥ the population Bayes risk; both starts converge and the output carries its parameters."""
    ds = bayes_optimal_sweep(Setting("spiked", 1.0, 3, 0.0), [0.25, 0.5, 1.0, 1.5, 3.0], n_samples=40000, seed=0)
    e = ds.test_error.values
    assert np.all(np.diff(e) < 0)
    assert e[0] < 1 and e[-1] > population.bayes_risk(Setting("spiked", 1.0, 3))
    assert bool(ds.converged.all())
    assert ds.attrs["n_samples"] == 40000 and ds.attrs["seed"] == 0 and float(ds.nu) == 1.0


def test_rao_blackwell_error_equals_direct_error():
    """e_BO = 1 + Δ² − m_v E Σπ̄² (docs/theory.md §8) against the plain estimator E(y − ŷ)², ŷ = π̄·ω_z,
    on the same max-SLR (ν = ∞) samples, and the Nishimori identity E π̄_ε* = E Σπ̄² it rests on;
    tolerances 4 s.e. The second fails if the Gauss–Hermite argmax probabilities are wrong (tested
    by mutation: halving (ω_ε − ω_ℓ)/√V)."""
    from slrpipe.theory.replica.bayes_optimal import _log_c

    m_k, m_v = 0.3, 0.4
    f = draw_fields(Setting("max", math.inf, 3, 0.0), 20000, 0)
    c = bo_channel(f, 1.0, m_k, m_v)
    assert c["mhat_k"] > 10 * c["mhat_k_se"] and c["mhat_v"] > 10 * c["mhat_v_se"]
    wk = m_k * f.chi_star + math.sqrt(m_k - m_k**2) * f.xi_k
    wv = m_v * f.z_star + math.sqrt(m_v - m_v**2) * f.xi_v
    with jax.enable_x64(True):
        pi = np.asarray(jax.nn.softmax(jax.vmap(lambda w: _log_c("max", math.inf, 3, w, m_k))(jnp.asarray(wk))))
    sq = (f.y - (pi * wv).sum(1)) ** 2
    pair = 0.5 * (sq[: sq.size // 2] + sq[sq.size // 2 :])
    se = pair.std(ddof=1) / math.sqrt(pair.size)
    assert abs(pair.mean() - c["test_error"]) < 4 * se
    # the identity behind it: π̄ is the posterior of ε given ω_χ, so E π̄_ε* = E Σ_ε π̄_ε² (Nishimori)
    d = np.take_along_axis(pi, f.eps[:, None], 1)[:, 0] - (pi**2).sum(1)
    d = 0.5 * (d[: d.size // 2] + d[d.size // 2 :])
    assert abs(d.mean()) < 4 * d.std(ddof=1) / math.sqrt(d.size)


@pytest.mark.parametrize(
    "kw,field",
    [
        (dict(model="max", nu=2.0), "nu"),
        (dict(model="spiked", nu=-1.0), "nu"),
        (dict(model="spiked", nu=1.0, alpha=0.0), "alpha"),
    ],
)
def test_bad_arguments(kw, field):
    args = dict(model="spiked", nu=1.0, L=3, delta=0.0, alpha=1.0) | kw
    with pytest.raises(ValueError, match=rf"^{field}:"):
        solve_bayes_optimal(
            Setting(args.pop("model"), args.pop("nu"), args.pop("L"), args.pop("delta")),
            args.pop("alpha"),
            n_samples=100,
        )
