"""Population theory (slrpipe.theory.population, model.md §4).

Tolerances: the ordered tensor rules are accurate to ≤ 1e-9 (L = 2) and ≤ 1e-7 (L = 3) on the
risk (measured against rules with ~2× more nodes per dimension), the QMC
rule carries its own standard error from 8 independent scramblings; Monte Carlo comparisons use
4 standard errors of the MC mean (plus the quadrature error, negligible next to it).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from slrpipe.scores import score
from slrpipe.setting import Setting
from slrpipe.theory import overlap_risk
from slrpipe.theory import population as pop
from slrpipe.theory.quadrature import QuadSpec, field_rule

INF = math.inf
UNIF123 = {1: 1 / 3, 2: 1 / 3, 3: 1 / 3}


# ------------------------------------------------------------------ anchors of model.md §4
# Anchors are printed with 5 decimals (rounding ≤ 5e-6); our quadrature error ≤ 1e-9 at L = 2.
ANCHORS = [
    ("bayes", "spiked", 1.0, 0.32494),
    ("softmax", "spiked", 1.0, 0.32494),
    ("linear", "spiked", 1.0, 0.40000),
    ("erf", "spiked", 1.0, 0.39800),
    ("softplus_norm", "spiked", 1.0, 0.32906),
    ("bayes", "spiked", 5.0, 0.08440),
    ("softmax", "spiked", 5.0, 0.08440),
    ("linear", "spiked", 5.0, 0.22222),
    ("softmax", "max", INF, 0.0),
    ("linear", "max", INF, 0.34085),
    ("erf", "max", INF, 0.33333),
    ("softplus_norm", "max", INF, 0.04835),
]


@pytest.mark.parametrize("sigma,model,nu,expected", ANCHORS)
def test_anchor_L2(sigma, model, nu, expected):
    # The spiked anchors also pin the tilt: with ν in place of √ν as the mean of χ*_{ε*}, the
    # ν = 5 values move by O(0.05) (Bayes 0.0844 → ≈0.003), far outside 1e-4.
    if sigma == "bayes":
        r = pop.bayes_risk(Setting(model, nu, 2))
    else:
        res = pop.optimal_risk(sigma, Setting(model, nu, 2))
        r = res["risk"]
        assert res["risk_err"] < 1e-8
    assert abs(r - expected) < 1e-4


def test_max_inf_closed_forms():
    # linear, max-SLR, ν = ∞: R = 1 − (1 + E[max]²)/L (optimum m_k = E[max]); L = 2: E max = 1/√π
    assert pop.optimal_risk("linear", Setting("max", INF, 2))["risk"] == pytest.approx(0.5 - 0.5 / math.pi, abs=1e-9)
    r = pop.optimal_risk("softmax", Setting("max", INF, 2))
    assert math.isinf(r["m_k"]) and abs(r["risk"]) < 1e-12 and r["m_v"] == pytest.approx(1.0)


# ------------------------------------------------------------------ rules
@pytest.mark.parametrize("model,nu,L", [("spiked", 3.0, 2), ("max", 2.0, 3), ("max", INF, 3)])
def test_rule_moments(model, nu, L):
    r = field_rule(model, nu, L)
    w = r.weight
    assert w.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.allclose(r.eps_prob.sum(1), 1.0)
    # E|χ*|² = L + ν (spiked) / L (max); quadrature error ≤ 1e-7 at L = 3
    assert (w * (r.chi_star**2).sum(1)).sum() == pytest.approx(L + (nu if model == "spiked" else 0), abs=1e-6)
    if model == "max" and math.isinf(nu):  # E[max of 3 N(0,1)] = 3/(2√π)
        assert (w * (r.eps_prob * r.chi_star).sum(1)).sum() == pytest.approx(1.5 / math.sqrt(math.pi), abs=1e-7)


def test_gh_vs_ordered_smooth_point():
    # smooth integrand: plain tensor GH (60²) and the ordered rule agree to 1e-9
    a1 = pop.ab("softmax", Setting("spiked", 1.0, 2), 1.0, 1.0, quad=QuadSpec(method="gh"))
    a2 = pop.ab("softmax", Setting("spiked", 1.0, 2), 1.0, 1.0)
    assert np.allclose(a1, a2, atol=1e-9)


def test_ordered_vs_qmc_L3():
    law = {3: 1.0}
    for sigma, model, nu, m, c in [
        ("softmax", "max", INF, 3.0, 0.0),
        ("erf", "max", 2.0, 0.7, -0.2),
        ("softplus_norm", "spiked", 2.0, 1.5, 0.0),
    ]:
        a_o, b_o = overlap_risk.ab_law(sigma, Setting(model, nu, law), m, m * m, c, QuadSpec()).mean(1)
        ab_q = overlap_risk.ab_law(sigma, Setting(model, nu, law), m, m * m, c, QuadSpec(method="qmc"))
        g_q = ab_q[0] ** 2 / ab_q[1]
        se = g_q.std(ddof=1) / math.sqrt(g_q.size)
        assert 0 < se < 1e-4
        assert abs(g_q.mean() - a_o**2 / b_o) < 4 * se + 1e-7


# ------------------------------------------------------------------ Monte Carlo of the fields
def _mc_fields(model, nu, L, n, rng):
    """Plain sampling of χ* (n, L) and ε* (n,) from the tilted law (model.md §2)."""
    chi = rng.standard_normal((n, L))
    if model == "spiked":
        eps = rng.integers(L, size=n)
        chi[np.arange(n), eps] += math.sqrt(nu)  # √ν, not ν
    elif math.isinf(nu):
        eps = chi.argmax(1)
    else:
        p = score("softmax", nu * chi)
        eps = (p.cumsum(1) < rng.random((n, 1))).sum(1)
    return chi, eps


@pytest.mark.parametrize(
    "sigma,model,nu,L,m_k,q_k,c",
    [
        ("softmax", "spiked", 4.0, 3, 1.3, 1.3**2, 0.0),
        ("erf", "max", 2.0, 2, 0.6, 0.5, -0.3),
        ("softplus_norm", "max", INF, 3, 2.0, 4.0, 0.0),
    ],
)
def test_risk_vs_monte_carlo(sigma, model, nu, L, m_k, q_k, c):
    rng = np.random.default_rng(12345)
    n = 200_000
    m_v, q_v, delta = 0.8, 0.9, 0.3
    chi_s, eps = _mc_fields(model, nu, L, n, rng)
    chi = m_k * chi_s + math.sqrt(q_k - m_k**2) * rng.standard_normal((n, L))
    zs = rng.standard_normal((n, L))
    z = m_v * zs + math.sqrt(q_v - m_v**2) * rng.standard_normal((n, L))
    y = zs[np.arange(n), eps] + delta * rng.standard_normal(n)
    loss = (y - (score(sigma, chi, c=c) * z).sum(1)) ** 2
    r = pop.risk(sigma, Setting(model, nu, L, delta), (m_k, q_k, m_v, q_v), c)
    assert abs(r - loss.mean()) < 4 * loss.std() / math.sqrt(n)


# ------------------------------------------------------------------ Prop. 4.2, closed forms
@pytest.mark.parametrize(
    "model,nu,L,delta",
    [
        ("spiked", 1.0, 2, 0.0),
        ("spiked", 3.0, 3, 0.0),
        ("spiked", 2.0, 2, 0.5),
        ("max", 1.0, 2, 0.0),
        ("max", 2.5, 3, 0.0),
        ("max", INF, 3, 0.3),
        ("max", 1.5, UNIF123, 0.0),
    ],
)
def test_softmax_attains_bayes(model, nu, L, delta):
    res = pop.optimal_risk("softmax", Setting(model, nu, L, delta))
    bayes = pop.bayes_risk(Setting(model, nu, L, delta))
    assert abs(res["risk"] - bayes) < 1e-6
    assert bayes == pytest.approx(delta**2 + pop.bayes_risk(Setting(model, nu, L)), abs=1e-14)  # Δ adds Δ²
    if math.isfinite(nu):  # optimum at the Bayes key scale c_ν (flat minimum: loose location check)
        assert res["m_k"] == pytest.approx(Setting(model, nu, L).c_nu, rel=1e-3)


@pytest.mark.parametrize("L,nu", [(1, 2.0), (2, 0.0), (2, 0.5), (3, 3.0)])
def test_linear_closed_form(L, nu):
    res = pop.optimal_risk("linear", Setting("spiked", nu, L))
    assert abs(res["risk"] - pop.linear_risk_spiked(Setting("spiked", nu, L))) < 1e-7


def test_large_L_qmc():
    # L = 64 runs by QMC; softmax reaches Bayes within its error; linear (max-SLR, ν = ∞) against
    # the closed form 1 − (1 + E[max]²)/L with E[max] from 1-D quadrature of the max density.
    from scipy.integrate import quad
    from scipy.stats import norm

    qmc = QuadSpec(method="quadrature")  # the field quadrature (QMC at L = 64), not exact_length
    soft = pop.optimal_risk("softmax", Setting("max", 2.0, 64), quad=qmc)
    assert abs(soft["risk"] - pop.bayes_risk(Setting("max", 2.0, 64), quad=qmc)) < 4 * soft["risk_err"] + 1e-9
    e_max = quad(lambda t: t * 64 * norm.pdf(t) * norm.cdf(t) ** 63, -10, 10, epsabs=1e-13)[0]
    lin = pop.optimal_risk("linear", Setting("max", INF, 64), quad=qmc)
    assert 0 < lin["risk_err"] < 1e-4
    assert abs(lin["risk"] - (1 - (1 + e_max**2) / 64)) < 4 * lin["risk_err"]
    # default (exact in L): the same closed form to quadrature accuracy
    assert pop.optimal_risk("linear", Setting("max", INF, 64))["risk"] == pytest.approx(
        1 - (1 + e_max**2) / 64, abs=1e-9
    )
    lin8 = pop.optimal_risk("linear", Setting("max", INF, 8))["risk"]
    # computed: 0.3408 (L = 2) < 0.6217 (L = 8) < 0.8985 (L = 64) → 1
    assert pop.optimal_risk("linear", Setting("max", INF, 2))["risk"] < lin8 < lin["risk"] and lin["risk"] > 0.85


# ------------------------------------------------------------------ q_k = m_k², off-manifold
@pytest.mark.parametrize(
    "sigma,model,nu,c",
    [
        ("softmax", "max", 1.0, 0.0),
        ("erf", "spiked", 1.0, -0.2),
        ("softplus_norm", "max", 2.0, 0.0),
        ("linear", "max", 2.0, 0.0),
    ],
)
def test_qk_equal_mk2_is_optimal(sigma, model, nu, c):
    best = pop.optimal_risk(sigma, Setting(model, nu, 2))
    for m in (0.3, 1.0, 2.0):
        for extra in (0.05, 0.5, 2.0):
            a, b = pop.ab(sigma, Setting(model, nu, 2), m, m * m + extra, c)
            assert best["risk"] - 1e-9 <= 1 - a * a / b


def test_risk_gram_on_manifold():
    # spiked q_k > m_k² goes through the ν-folding in `ab`, risk_gram through η quadrature:
    # independent paths that must agree to quadrature accuracy.
    for sigma, model, nu, m_k, q_k in [
        ("softmax", "spiked", 2.0, 0.8, 1.1),
        ("erf", "max", 1.0, 0.5, 0.5),
        ("softplus_norm", "max", INF, 1.2, 1.44),
    ]:
        m_v, q_v, delta = 0.7, 0.6, 0.2
        G = np.array([[1, 0, m_k, 0], [0, 1, 0, m_v], [m_k, 0, q_k, 0], [0, m_v, 0, q_v]], float)
        r1 = pop.risk(sigma, Setting(model, nu, 2, delta), (m_k, q_k, m_v, q_v), 0.1)
        r2 = pop.risk_gram(sigma, Setting(model, nu, 2, delta), G, 0.1)
        assert abs(r1 - r2) < 1e-8


@pytest.mark.parametrize("model,nu", [("spiked", 1.0), ("max", 2.0)])
def test_risk_gram_off_manifold_vs_monte_carlo(model, nu):
    # W = [k*, v*, k, v] with nonzero k·v*/D, v·k*/D, k·v/D
    W = np.array([[1, 0, 0.9, 0.3], [0, 1, 0.25, 0.6], [0, 0, 0.5, 0.2], [0, 0, 0, 0.4]], float)
    G = W.T @ W
    delta, L, n = 0.1, 2, 200_000
    rng = np.random.default_rng(7)
    f = rng.standard_normal((n, L, 4)) @ W  # per-token (χ*, z*, χ, z) ~ N(0, G)
    if model == "spiked":
        eps = rng.integers(L, size=n)
        f[np.arange(n), eps] += math.sqrt(nu) * G[0]  # tilt exp(√ν χ*_ε): mean shift √ν G[:, 0]
    else:
        p = score("softmax", nu * f[..., 0])
        eps = (p.cumsum(1) < rng.random((n, 1))).sum(1)
    y = f[np.arange(n), eps, 1] + delta * rng.standard_normal(n)
    loss = (y - (score("softmax", f[..., 2]) * f[..., 3]).sum(1)) ** 2
    r = pop.risk_gram("softmax", Setting(model, nu, L, delta), G)
    assert abs(r - loss.mean()) < 4 * loss.std() / math.sqrt(n)
    assert r >= pop.optimal_risk("softmax", Setting(model, nu, L, delta))["risk"]


# ------------------------------------------------------------------ variable length (Cor. 4.4)
def test_variable_length_max_inf():
    # Shared (k, v) over L ~ Unif{1,2,3}: the gap to the average of the fixed-L optima measures the
    # loss from not adapting to L. Computed: softmax 0 (= Bayes), softplus_norm 4.7e-4, linear
    # 0.133, erf 0.139; risks softmax 0 < softplus_norm 0.0538 < erf 0.3837 < linear 0.3895.
    var = {
        s: pop.optimal_risk(s, Setting("max", INF, UNIF123))["risk"]
        for s in ("softmax", "softplus_norm", "linear", "erf")
    }
    gap = {s: var[s] - np.mean([pop.optimal_risk(s, Setting("max", INF, L))["risk"] for L in (1, 2, 3)]) for s in var}
    assert abs(var["softmax"] - pop.bayes_risk(Setting("max", INF, UNIF123))) < 1e-9
    assert var["softmax"] < var["softplus_norm"] < var["erf"] < var["linear"]
    assert abs(gap["softmax"]) < 1e-9 and 0 <= gap["softplus_norm"] < 1e-3
    assert gap["linear"] > 0.1 and gap["erf"] > 0.1


# ------------------------------------------------------------------ API, sweep, CLI
def test_bad_arguments():
    with pytest.raises(ValueError, match="nu"):
        pop.optimal_risk("softmax", Setting("spiked", INF, 2))
    with pytest.raises(ValueError, match="sigma"):
        pop.ab("relu", Setting("max", 1.0, 2), 1.0, 1.0)
    with pytest.raises(ValueError, match="q_k"):
        pop.ab("softmax", Setting("max", 1.0, 2), 1.0, 0.5)
    with pytest.raises(ValueError, match="L"):
        pop.ab("softmax", Setting("max", 1.0, {1: 0.5, 2: 0.4}), 1.0, 1.0)
    with pytest.raises(ValueError, match="gram"):
        pop.risk_gram("softmax", Setting("max", 1.0, 2, 0.0), np.eye(3))
    with pytest.raises(ValueError, match="model"):
        pop.bayes_risk(Setting("min", 1.0, 2))


def test_format_L():
    assert pop.format_L(3) == "3"
    assert pop.format_L(UNIF123) == "uniform:1,2,3"
    from slrpipe.lengths import parse_L

    law = {1: 0.25, 4: 0.75}
    assert parse_L(pop.format_L(law)) == law


def test_cli_population(tmp_path):
    import xarray as xr

    from slrpipe.cli import main

    out = tmp_path / "pop.nc"
    assert (
        main(
            [
                "population",
                "--sigma",
                "bayes",
                "--model",
                "max",
                "--L",
                "uniform:1,2",
                "--nu-grid",
                "0,1,inf",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    ds = xr.open_dataset(out)
    assert list(ds.nu.values[:2]) == [0.0, 1.0] and math.isinf(ds.nu.values[2])
    assert set(ds.data_vars) >= {"risk", "m_k", "q_k", "m_v", "q_v", "c"}
    assert str(ds.L.values) == "uniform:1,2" and str(ds.sigma.values) == "bayes"
    assert ds.attrs["command"] == "population" and "slrpipe_version" in ds.attrs
    # ν = 0: p uniform over the valid tokens, E|p|² = E[1/L] = 3/4 → Bayes 1/4; ν = ∞: 0
    assert ds.risk.values[0] == pytest.approx(0.25, abs=1e-12) and abs(ds.risk.values[2]) < 1e-12
    assert (
        main(
            [
                "population",
                "--sigma",
                "softmax",
                "--model",
                "spiked",
                "--L",
                "2",
                "--nu-grid",
                "inf",
                "--out",
                str(tmp_path / "x.nc"),
            ]
        )
        == 2
    )


def test_cli_population_batch_writes_what_each_sweep_writes_alone(tmp_path):
    """``population-batch`` (the workflow's job: an experiment's σ in one process) writes per member
    the file ``population`` writes for it alone: every value and attribute the same but where, when
    and by which command line it was written (provenance.VOLATILE)."""
    import xarray as xr

    from slrpipe.cli import main
    from slrpipe.job_args import argv
    from slrpipe.jobs import PopulationBatchJob, PopulationJob
    from slrpipe.provenance import VOLATILE

    law = dict(model="max", L={1: 0.5, 2: 0.5}, delta=0.0, nu_grid=(0.0, 1.0, math.inf))
    jobs = [PopulationJob(sigma=s, **law, out=str(tmp_path / f"{s}.nc")) for s in ("bayes", "linear")]
    assert main(["population-batch", *argv(PopulationBatchJob(members=jobs))]) == 0
    alone = tmp_path / "alone.nc"
    assert main(["population", *argv(jobs[1]), "--out", str(alone)]) == 0
    a, b = xr.load_dataset(jobs[1].out), xr.load_dataset(alone)
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())
    drop = lambda attrs: {k: v for k, v in attrs.items() if k not in VOLATILE}
    assert drop(a.attrs) == drop(b.attrs)
    assert str(xr.load_dataset(jobs[0].out).sigma.values) == "bayes"
    # a member without its file is refused in one line
    bad = json.dumps(
        [{k: v for k, v in json.loads(argv(PopulationBatchJob(members=jobs))[1])[0].items() if k != "out"}]
    )
    assert main(["population-batch", "--members", bad]) == 2
