"""Zero-temperature 1RSB of ridge ERM (docs/theory.md §13): checks with known answers.

(a) δq = 0: the 1RSB map is the RS map (hard channel), so the RS fixed point is a 1RSB fixed point
    with Φ = the RS objective and Σ = 0;
(b) ridge regression (σ ≡ 1, L = 1) is convex: δq → 0 from δq > 0 at every s;
(c) the closed-form complexity Σ(s) equals s² dΦ/ds by a finite difference of the solved Φ in s;
(d) with an inner set per outer sample the inner sampling error is inside the reported s.e.; with one
    shared set it is not.
The rule that reads the ground state off the s scan: tests/test_rsb1_scan.py (the random energy model).
"""

import math

import numpy as np
import pytest

from slrpipe.setting import Setting
from slrpipe.theory.replica import rsb1
from slrpipe.theory.replica.channel import channel, paired_mean_se
from slrpipe.theory.replica.fields import draw_fields
from slrpipe.theory.replica.options import ReplicaTask
from slrpipe.theory.replica.solver import STATE, solve_replica

# RS fixed point (hard channel) of softmax, spiked ν = 1, L = 2, Δ = 0, λ = 0.1, α = 5 at
# N = 1024 (QMC seed 0): a start from which the RS solver converges in a few evaluations
RS_START = {"m_k": 0.83, "q_k": 1.80, "V_k": 2.77, "m_v": 1.057, "q_v": 1.190, "V_v": 0.4405}


def test_draw_inner_is_antithetic_and_validates():
    inner = rsb1.draw_inner(3, 16, seed=2)
    assert inner.xi_k.shape == (16, 3) and inner.xi_v.shape == (16, 3)
    np.testing.assert_array_equal(inner.xi_k[:8], -inner.xi_k[8:])
    a, b = inner.halves
    assert sorted(np.concatenate([a, b]).tolist()) == list(range(16))
    np.testing.assert_array_equal(inner.xi_v[a[:4]], -inner.xi_v[a[4:]])  # each half antithetic
    with pytest.raises(ValueError, match="n_inner"):
        rsb1.draw_inner(3, 6)


def test_independent_inner_sets_are_one_antithetic_set_per_outer_sample():
    inner = rsb1.draw_inner(2, 8, seed=3, n_outer=5)
    assert inner.independent and inner.n == 8 and inner.xi_k.shape == (5, 8, 2) == inner.xi_v.shape
    np.testing.assert_array_equal(inner.xi_k[:, :4], -inner.xi_k[:, 4:])
    assert not np.allclose(inner.xi_k[0], inner.xi_k[1])  # each outer sample its own set
    np.testing.assert_array_equal(inner.xi_v, rsb1.draw_inner(2, 8, seed=3, n_outer=5).xi_v)  # seeded
    assert not rsb1.draw_inner(2, 8, seed=3).independent
    mc = rsb1.draw_inner(2, 8, seed=3, n_outer=5, qmc=False)  # iid pairs instead of Sobol'
    assert mc.xi_k.shape == (5, 8, 2) and not np.allclose(mc.xi_k, inner.xi_k)
    np.testing.assert_array_equal(mc.xi_v[:, :4], -mc.xi_v[:, 4:])
    with pytest.raises(ValueError, match="n_outer"):
        rsb1.draw_inner(2, 8, n_outer=0)
    fields = draw_fields(Setting("spiked", 1.0, 2, 0.0), 8, 0, qmc=True)
    x = np.array([0.1, 0.3, 0.05, 8.0, 0.6, 0.8, 0.05, 5.6])
    with pytest.raises(ValueError, match="inner: drawn for 5 outer samples"):
        rsb1.rsb1_channel("softmax", (fields, inner), 1.0, 4.0, x)


def test_prior_rejects_a_nonpositive_a():
    conj = {
        "mhat_k": 1.0,
        "q0hat_k": 1.0,
        "dqhat_k": 1.0,
        "Vhat_k": 1.0,
        "mhat_v": 1.0,
        "q0hat_v": 1.0,
        "dqhat_v": 0.0,
        "Vhat_v": 1.0,
    }
    with pytest.raises(ValueError, match="A_k"):
        rsb1.rsb1_prior(0.1, 2.0, conj)  # λ + V̂ − sδq̂ = 1.1 − 2 < 0


def test_prior_projects_negative_jackknifed_conjugates_to_zero():
    """q̂₀ = αE⟨f⟩² and δq̂ = αE Var f are ≥ 0; a jackknifed estimate below 0 maps to q₀ = m², δq = 0
    (a state the channel accepts) instead of q₀ < m²."""
    conj = {"mhat_k": 0.5, "q0hat_k": -0.2, "dqhat_k": -0.1, "Vhat_k": 1.0}
    conj |= {"mhat_v": 1.0, "q0hat_v": 0.3, "dqhat_v": 0.05, "Vhat_v": 2.0}
    x = rsb1.rsb1_prior(0.1, 2.0, conj)
    m_k, q0_k, dq_k, V_k = x[:4]
    assert V_k == pytest.approx(1 / 1.1) and m_k == pytest.approx(0.5 / 1.1)
    assert q0_k == pytest.approx(m_k**2) and dq_k == 0.0
    A_v = 0.1 + 2.0 - 2.0 * 0.05
    assert x[5] == pytest.approx((1.0 + 0.3) / A_v**2)  # the v column as before


def test_dq_zero_reproduces_the_rs_fixed_point():
    """(a) at a softmax point with competing minima: map, fixed point, Φ = objective, Σ = 0."""
    task = ReplicaTask("softmax", Setting("spiked", 1.0, 2, 0.0))
    fields = draw_fields(Setting("spiked", 1.0, 2, 0.0), 1024, 0, qmc=True)
    tol = 1e-6
    rs = solve_replica(task, 0.1, 5.0, fields=fields, softmin=None, tol=tol, init=RS_START)
    assert rs["converged"], rs["residual"]
    x = rsb1.rs_state(rs)
    inner = rsb1.draw_inner(2, 8)
    for s in (0.5, 4.0):
        ch = rsb1.rsb1_channel("softmax", (fields, inner), 5.0, s, x)
        ref = channel("softmax", fields, 5.0, [rs[k] for k in STATE], softmin=None)
        for a in ("k", "v"):  # the same map, to rounding
            assert ch[f"dqhat_{a}"] == pytest.approx(0.0, abs=1e-14)
            for k1, k0 in (("mhat", "mhat"), ("q0hat", "qhat"), ("Vhat", "Vhat")):
                assert ch[f"{k1}_{a}"] == pytest.approx(ref[f"{k0}_{a}"], rel=1e-10, abs=1e-12)
        fx = rsb1.rsb1_prior(0.1, s, ch)
        assert rsb1.state_residual(x, fx) < tol  # the RS fixed point is a 1RSB fixed point
        assert fx[2] < 1e-20 and fx[6] < 1e-20  # rounding of a variance of equal values
        th = rsb1.thermodynamics(0.1, 5.0, s, x, ch)
        assert th["sigma"] == pytest.approx(0.0, abs=1e-12)
        # Φ = the RS objective at the saddle (first order in the residual); e from both forms
        assert th["phi"] == pytest.approx(rs["objective"], rel=20 * tol)
        assert th["energy"] == pytest.approx(th["energy_direct"], rel=20 * tol)
    assert prox_has_competing_minima(fields, rs)


def prox_has_competing_minima(fields, rs):
    """The point is not trivially convex: some samples have several local minima."""
    ch = channel("softmax", fields, 5.0, [rs[k] for k in STATE], softmin=None)
    return ch["prox_multi"] > 0.01


@pytest.mark.parametrize("s", [0.5, 5.0])
def test_ridge_regression_has_no_rsb(s):
    """(b) σ ≡ 1 (softmax, L = 1) is ridge regression: from δq_v = 0.3 the iteration returns to δq = 0
    and to the closed-form RS point λV² + (λ + α − 1)V − 1 = 0 (docs/theory.md §2, §13)."""
    lam, alpha, delta = 0.1, 2.0, 0.5
    fields = draw_fields(Setting("spiked", 1.0, 1, delta), 2048, 0, qmc=True)
    inner = rsb1.draw_inner(1, 16)
    x0 = np.array([0.0, 0.0, 0.0, 1 / lam, 0.5, 0.6, 0.3, 0.5])
    r = rsb1.solve_rsb1(
        ReplicaTask("softmax", Setting("spiked", 1.0, 1, delta)),
        lam,
        alpha,
        s,
        samples=(fields, inner),
        init=x0,
        options=rsb1.Rsb1Options(tol=1e-9, damping=1.0, max_iter=150, patience=150),
    )
    assert r["converged"], r["residual"]
    assert r["dq_v"] < 1e-8 and r["dq_k"] == 0.0
    assert r["sigma"] == pytest.approx(0.0, abs=1e-8)
    V = (-(lam + alpha - 1) + math.sqrt((lam + alpha - 1) ** 2 + 4 * lam)) / (2 * lam)
    assert r["V_v"] == pytest.approx(V, rel=2e-2)
    assert r["m_v"] == pytest.approx(alpha * V / (1 + V), rel=2e-2)


def test_sigma_per_outer_sample_is_the_closed_form_linearised_in_each_estimator():
    """Σ per outer sample (``sigma_samples``, the delta method behind Σ's paired s.e.) at a 1RSB state
    (softmax, spiked ν = 1, L = 2, λ = 0.1, α = 5, s = 2, δq = 0.3(q − m²) from RS, N₀ = 512): with one
    estimator of ``sigma_terms`` at a time varying, the mean of Σ_i over a subset of outer samples
    equals the closed form with that estimator's mean moved by δ to its subset mean: to 1e-12 where
    Σ is linear in it (q̂₀, KL); where it is not (δq̂, through log(1 − sVδq̂)), once the second-order
    term ½Σ″δ² is added, to 10 % of that term (the third order). The paired s.e. of Σ_i is then
    that of the delta method, covariances included."""
    fields = draw_fields(Setting("spiked", 1.0, 2, 0.0), 512, 0, qmc=True)
    x, s, lam, alpha = rsb1.rs_state(RS_START, 0.3), 2.0, 0.1, 5.0
    ch = rsb1.rsb1_channel("softmax", (fields, rsb1.draw_inner(2, 8)), alpha, s, x, debias=True)
    th = rsb1.thermodynamics(lam, alpha, s, x, ch)
    assert np.mean(th["sigma_samples"]) == pytest.approx(th["sigma"], abs=1e-12)
    assert th["sigma_se"] == pytest.approx(paired_mean_se(th["sigma_samples"])[1], rel=1e-12)
    terms = ch["sigma_terms"]
    for key, v in terms.items():
        alone = {k: (w if k == key else np.full_like(w, ch[k])) for k, w in terms.items()}
        sig_i = rsb1.thermodynamics(lam, alpha, s, x, {**ch, "sigma_terms": alone})["sigma_samples"]
        # Σ's curvature in δq̂_a: ½(sV_a)²/(1 − sV_aδq̂_a)² (0 in q̂₀ and KL)
        sv = s * x[3 if key.endswith("_k") else 7]
        curv = 0.5 * sv**2 / (1 - sv * ch[key]) ** 2 if key.startswith("dqhat") else 0.0
        for sub in (slice(0, 128), slice(128, 256), np.r_[0:64, 256:320]):
            delta = float(np.mean(v[sub])) - ch[key]
            exact = rsb1.thermodynamics(lam, alpha, s, x, {**ch, key: ch[key] + delta})["sigma"]
            assert abs(exact - th["sigma"]) > 1e-5  # the subset moves Σ: the check is not 0 = 0
            second = 0.5 * curv * delta**2
            assert np.mean(sig_i[sub]) + second == pytest.approx(exact, abs=1e-12 + 0.1 * second), (key, sub)


def test_complexity_is_s_squared_dphi_ds():
    """(c) Σ(s) (closed form, docs/theory.md §13) against s² (Φ(s + h) − Φ(s − h))/(2h) of the solved
    potential, at a softmax point where RS is unstable (δq > 0), within 3 Monte Carlo s.e.; and the
    explicit ∂Φ/∂s at the saddle (conjugates and state held, the tilt re-weighted) to 1e-6."""
    task, lam, alpha = ReplicaTask("softmax", Setting("spiked", 1.0, 2, 0.0)), 0.1, 1.0
    fields = draw_fields(Setting("spiked", 1.0, 2, 0.0), 512, 0, qmc=True)
    inner = rsb1.draw_inner(2, 8)
    rs = solve_replica(task, lam, alpha, fields=fields, softmin=None, tol=1e-5)
    s, h = 4.0, 1.0
    # the solves use the jackknifed estimators (Rsb1Options' default), and so do the passes below
    kw = {"samples": (fields, inner), "options": rsb1.Rsb1Options(tol=1e-5, max_iter=120, patience=40)}
    mid = rsb1.solve_rsb1(task, lam, alpha, s, init=rsb1.rs_state(rs, 0.3), **kw)
    assert mid["converged"], mid["residual"]
    assert mid["dq_k"] + mid["dq_v"] > 1e-2  # a genuine 1RSB point
    x, warm = np.array([mid[k] for k in rsb1.STATE1]), mid["prox_warm"]
    # explicit derivative: Φ(x, x̂, s ± ε) with Φ_out re-weighted at s ± ε on the same prox solutions
    ch = rsb1.rsb1_channel("softmax", (fields, inner), 1.0, s, x, warm=warm, debias=True)
    eps, phis = 1e-4, []
    for t in (s - eps, s + eps):
        cht = rsb1.rsb1_channel("softmax", (fields, inner), 1.0, t, x, warm=warm, debias=True)
        phis.append(rsb1.thermodynamics(0.1, 1.0, t, x, {**cht, **{k: ch[k] for k in rsb1.CONJ1}})["phi"])
    th = rsb1.thermodynamics(0.1, 1.0, s, x, ch)
    assert s * s * (phis[1] - phis[0]) / (2 * eps) == pytest.approx(th["sigma"], abs=1e-6 + 1e-3 * abs(th["sigma"]))
    # total derivative along the solved saddle (envelope theorem)
    lo = rsb1.solve_rsb1(task, lam, alpha, s - h, init=x, warm=warm, **kw)
    hi = rsb1.solve_rsb1(task, lam, alpha, s + h, init=x, warm=warm, **kw)
    assert lo["converged"] and hi["converged"]
    fd = s * s * (hi["phi"] - lo["phi"]) / (2 * h)
    assert abs(fd - mid["sigma"]) < 3 * mid["sigma_se"], (fd, mid["sigma"], mid["sigma_se"])
    assert abs(mid["sigma"]) > 3 * mid["sigma_se"]  # the check is not trivially 0 = 0
    # and e = Φ + Σ/s equals the energy of a typical state, α E⟨loss⟩ + (λ/2) tr q₁
    assert mid["energy"] == pytest.approx(mid["energy_direct"], abs=3 * mid["energy_direct_se"])


def test_anderson_and_damped_iterations_reach_the_same_saddle():
    """Anderson acceleration (``Rsb1Options.method``, the default) is a faster route to the same fixed
    point as the damped iteration: at the point of (c) (softmax, L = 2, λ = 0.1, α = 1, s = 4, N₀ =
    512, N₁ = 8), from the RS state with δq = 0.3(q − m²), both converge (tol 10⁻⁵) to states within
    10 tol of each other in the residual's norm, with fewer channel passes (measured: 15 against 31,
    1.5 tol apart). The bound: the damped map contracts at ρ ≈ 0.7 per pass here (residual 0.3 →
    10⁻⁵ in 31 passes), so a point of residual < tol lies within tol/(1 − ρ) ≈ 3.5 tol of the fixed
    point."""
    task, lam, alpha = ReplicaTask("softmax", Setting("spiked", 1.0, 2, 0.0)), 0.1, 1.0
    fields = draw_fields(Setting("spiked", 1.0, 2, 0.0), 512, 0, qmc=True)
    inner = rsb1.draw_inner(2, 8)
    rs = solve_replica(task, lam, alpha, fields=fields, softmin=None, tol=1e-5)
    out = {}
    for method in ("anderson", "damped"):
        o = rsb1.Rsb1Options(tol=1e-5, max_iter=120, patience=40, method=method)
        out[method] = rsb1.solve_rsb1(
            task, lam, alpha, 4.0, samples=(fields, inner), init=rsb1.rs_state(rs, 0.3), options=o
        )
        assert out[method]["converged"], (method, out[method]["residual"])
    xa, xd = (np.array([out[m][k] for k in rsb1.STATE1]) for m in ("anderson", "damped"))
    assert np.max(np.abs(xa - xd) / (1 + np.abs(xd))) < 10 * 1e-5
    assert out["anderson"]["iterations"] < out["damped"]["iterations"]
    with pytest.raises(ValueError, match="method"):
        rsb1.Rsb1Options(method="newton")


def test_cheap_passes_between_full_searches_reach_the_full_search_saddle(monkeypatch):
    """The solver's cheap passes (the centre and the previous minima only) between full multi-start
    searches change the route, not the fixed point: at the point of (c) (softmax, L = 2, λ = 0.1,
    α = 1, s = 4, N₀ = 512, N₁ = 8) the default (a full search every 16th pass and to confirm a
    cheap pass within tol) and every pass a full search (``full_every`` = 1) converge (tol 10⁻⁵) to states
    within 10 tol of each other (the contraction bound of the Anderson/damped test above); the
    default's converged pass is a full search, and it runs cheap passes on the way."""
    task, lam, alpha = ReplicaTask("softmax", Setting("spiked", 1.0, 2, 0.0)), 0.1, 1.0
    fields = draw_fields(Setting("spiked", 1.0, 2, 0.0), 512, 0, qmc=True)
    inner = rsb1.draw_inner(2, 8)
    rs = solve_replica(task, lam, alpha, fields=fields, softmin=None, tol=1e-5)
    passes = []
    channel_pass = rsb1.rsb1_channel

    def recorded(*args, **kw):
        passes.append(kw["multistart"])
        return channel_pass(*args, **kw)

    monkeypatch.setattr(rsb1.solve, "rsb1_channel", recorded)  # the module that iterates
    out, default = {}, rsb1.Rsb1Options().full_every
    for every in (default, 1):
        passes.clear()
        o = rsb1.Rsb1Options(tol=1e-5, max_iter=120, patience=40, full_every=every)
        out[every] = rsb1.solve_rsb1(
            task, lam, alpha, 4.0, samples=(fields, inner), init=rsb1.rs_state(rs, 0.3), options=o
        )
        assert out[every]["converged"], (every, out[every]["residual"])
        assert passes[-1] is True and len(passes) == out[every]["iterations"]
        if every == default:
            assert passes.count(False) > 0
    xd, x1 = (np.array([out[e][k] for k in rsb1.STATE1]) for e in (default, 1))
    assert np.max(np.abs(xd - x1) / (1 + np.abs(x1))) < 10 * 1e-5


def test_independent_inner_sets_carry_the_inner_error_in_the_standard_error():
    """(d) At a state with competing prox minima (the point of (c): softmax, L = 2, λ = 0.1, α = 1,
    s = 4, N₀ = 512, N₁ = 8; near its RS state with δq = 0.3(q − m²)), one channel pass per inner
    seed 1–8. One shared inner set: δq̂ moves between seeds by several times the s.e. its outer
    samples report (its sampling error is common to all of them and not in that s.e.). One set per
    outer sample: the spread over seeds is below the reported s.e. (which holds the outer-sample
    error as well). (Both estimate the same expectation; the shared sets' δq̂_v is skewed — mostly
    low, now and then 3× higher — so a mean of 8 of them is no sharp check of that.)"""
    fields = draw_fields(Setting("spiked", 1.0, 2, 0.0), 512, 0, qmc=True)
    m_k, q_k, V_k, m_v, q_v, V_v = 0.1422, 0.2826, 8.277, 0.6080, 0.8536, 5.613
    dq_k, dq_v = 0.3 * (q_k - m_k**2), 0.3 * (q_v - m_v**2)
    x = np.array([m_k, q_k - dq_k, dq_k, V_k, m_v, q_v - dq_v, dq_v, V_v])
    spread, se = {}, {}
    for independent in (False, True):
        chs = [
            rsb1.rsb1_channel(
                "softmax", (fields, rsb1.draw_inner(2, 8, seed, 512 if independent else None)), 1.0, 4.0, x, bias=False
            )
            for seed in range(1, 9)
        ]
        for c in ("k", "v"):
            v = np.array([ch[f"dqhat_{c}"] for ch in chs])
            spread[independent, c] = v.std(ddof=1)
            se[independent, c] = np.mean([ch[f"dqhat_{c}_se"] for ch in chs])
    assert spread[False, "v"] > 3 * se[False, "v"], (spread, se)
    for c in ("k", "v"):
        assert spread[True, c] < se[True, c], (c, spread, se)


def test_cli_point_without_an_rs_fixed_point_writes_nan_not_a_failure(tmp_path):
    # an RS sweep that did not converge at (λ, α) leaves NaN order parameters: the 1RSB job records
    # "not solved" (NaN, converged false) so that the workflow's other points go on
    import xarray as xr

    from slrpipe.cli import main
    from slrpipe.theory.replica.solver import STATE

    lam, alpha = np.array([0.01]), np.array([2.0, 5.0])
    state = {k: (("lam", "alpha"), np.array([[0.5, np.nan]])) for k in STATE}
    xr.Dataset(state, coords={"lam": lam, "alpha": alpha}).to_netcdf(tmp_path / "rs.nc")
    out = tmp_path / "p.nc"
    args = ["rsb1", "--sigma", "softmax", "--model", "spiked", "--nu", "1", "--L", "3", "--lam", "0.01"]
    args += ["--n-outer", "64", "--n-inner", "4", "--s-grid", "1,2", "--s-extend", "2", "--s-max-rows", "4"]
    args += ["--rs", str(tmp_path / "rs.nc")]
    assert main([*args, "--alpha", "5", "--out", str(out)]) == 0
    r = xr.open_dataset(out)
    assert np.isnan(float(r.objective)) and np.isnan(float(r.s_star)) and not bool(r.converged)
    assert np.isnan(r.scan_complexity.values).all() and not r.scan_converged.values.any()
    assert r.sizes["s"] == 2 and "RS fixed point" in r.attrs["unsolved"]
    # tol and max_iter not given: the defaults, declared once (slrpipe.vocabulary.DEFAULTS), the solver's too
    assert r.attrs["tol"] == rsb1.Rsb1Options.tol and r.attrs["max_iter"] == rsb1.Rsb1Options.max_iter
    # its batch-means error (slrpipe rsb1-error): no state reported, so NaN and no batch solved
    err = tmp_path / "e.nc"
    assert main(["rsb1-error", "--rsb1", str(out), "--batches", "4", "--out", str(err)]) == 0
    e = xr.open_dataset(err)
    assert np.isnan(float(e.test_error_batch_se)) and np.isnan(float(e.objective_batch_se))
    assert int(e.batches_converged) == 0 and e.sizes["batch"] == 4 and "no 1RSB state" in e.attrs["unsolved"]
    # batches that split an antithetic pair: one line, exit 2, nothing written
    assert main(["rsb1-error", "--rsb1", str(out), "--batches", "3", "--out", str(tmp_path / "x.nc")]) == 2
    assert not (tmp_path / "x.nc").exists()


def test_ground_state_scans_by_the_zero_temperature_rule_and_writes_its_record(monkeypatch, tmp_path):
    """``rsb1_ground_state`` on a stand-in for ``solve_rsb1`` whose Φ(s), Σ(s), e(s) are the random
    energy model's (tests/test_rsb1_scan.py): each s starts from the nearest solved state (the first,
    and any after a collapse to RS, from the RS state), the grid is extended until the maximum of Φ
    is bracketed, s* is refined, and ``slrpipe rsb1``'s dataset records the rule's outcome."""
    from slrpipe.commands.rsb1 import dataset, record
    from slrpipe.jobs import Rsb1Job
    from slrpipe.theory.replica.rsb1 import ground

    ln2 = math.log(2.0)
    starts = []

    def fake(task, lam, alpha, s, *, samples, init, warm=None, options=None):
        starts.append((s, float(init[2]), warm))
        collapsed = s < 0.3  # δq = 0 below s = 0.3: the next start is the RS one again
        out = dict.fromkeys(ground.SUMMARY, 0.01) | dict(zip(rsb1.STATE1, [0.1, 0.5, 0.0 if collapsed else s, 1.0] * 2))
        out |= {"s": s, "phi": -s / 4 - ln2 / s, "phi_se": 1e-3, "sigma": ln2 - s * s / 4, "sigma_se": 1e-2}
        out |= {"energy_direct": -s / 2, "test_error": 0.5 + s, "converged": True, "prox_warm": s}
        return out | {"q1_k": out["q0_k"] + out["dq_k"], "q1_v": out["q0_v"] + out["dq_v"]}

    monkeypatch.setattr(ground, "solve_rsb1", fake)
    rs = {f"{k}_{c}": v for c in ("k", "v") for k, v in (("m", 0.1), ("q", 0.6), ("V", 1.0))}
    rs |= dict.fromkeys(("objective", "test_error", "train_loss", "train_loss_se", "residual"), 0.1) | {
        "converged": True
    }
    task = ReplicaTask("softmax", Setting("spiked", 1.0, 2, 0.0))
    draw = rsb1.Rsb1Draw(n_outer=8, n_inner=4)
    res = rsb1.rsb1_ground_state(
        task, 0.1, 1.0, draw=draw, s_grid=(0.25, 0.5), rs=rs, scan=rsb1.ScanOptions(max_rows=6)
    )
    frac = 0.05 * (0.6 - 0.01)
    assert [s for s, _, _ in starts[:5]] == [0.25, 0.5, 1.0, 2.0, 4.0]
    assert starts[0][1:] == (pytest.approx(frac), None)  # the RS start, no warm starts
    assert starts[1][1:] == (pytest.approx(frac), 0.25)  # after the collapse at 0.25: RS state, its warm starts
    assert starts[2][1:] == (0.5, 0.5)  # from the nearest solve, s = 0.5
    assert res.scan.bracketed and abs(res.scan.s_star - 2 * math.sqrt(ln2)) < 0.02 and res.scan.check.ok
    assert all("prox_warm" not in r for r in res.scan.rows)
    job = Rsb1Job(
        model="spiked",
        nu=1.0,
        L=2,
        delta=0.0,
        sigma="softmax",
        lam=0.1,
        alpha=1.0,
        n_outer=8,
        n_inner=4,
        seed=0,
        inner_seed=1,
        s_grid=(0.25, 0.5),
        s_extend=2.0,
        s_max_rows=6,
        frac=0.05,
        tol=2e-4,
        max_iter=80,
        rs="rs.nc",
    )
    ds = dataset(job, record(res))
    assert bool(ds.bracketed) and not bool(ds.lower_bound) and bool(ds.checked)
    assert float(ds.s_reported) == float(ds.s_star) == res.scan.s_star
    assert float(ds.objective) == pytest.approx(-math.sqrt(ln2), abs=1e-4)
    assert int(ds.scan_refined.sum()) >= 1 and ds.sizes["s"] == 5 + int(ds.scan_refined.sum())
    assert ds.scan_on_curve.values.tolist() == (ds.s.values <= 2 * math.sqrt(ln2)).tolist()
    # the two estimators of Σ are one potential here (e linear in s): every interval z = 0, S = 1
    z = ds.scan_sigma_chord_z.values
    assert np.isfinite(z[:-1]).all() and np.isnan(z[-1]) and np.abs(z[:-1]).max() < 1e-9
    assert int(ds.sigma_dof) == ds.sizes["s"] - 1 and float(ds.sigma_scale) == 1.0
    ds.to_netcdf(tmp_path / "p.nc")  # every variable and attribute writable


def test_n0_check_solves_rs_and_the_reported_state_again_on_twice_the_outer_samples(monkeypatch):
    """``slrpipe rsb1 --n0-check`` (commands.rsb1.doubled): RS from the sweep's start and the 1RSB
    state at the reported s from the reported state, each on 2N₀ outer samples (stand-ins for the
    solvers record what they are given)."""
    from slrpipe.commands.rsb1 import N0X2, doubled
    from slrpipe.jobs import Rsb1Job

    seen = {}

    def rs(task, lam, alpha, fields, init):
        seen["rs"] = fields.n
        return None, {"objective": 1.1, "test_error": 0.4}

    def solve(task, lam, alpha, s, *, samples, init, options):
        seen["rsb1"] = (samples[0].n, samples[1].xi_k.shape[0], s, float(init[2]))
        return {"phi": 1.2, "test_error": 0.45, "converged": True}

    monkeypatch.setattr(rsb1, "rs_on_samples", rs)
    monkeypatch.setattr(rsb1, "solve_rsb1", solve)
    job = Rsb1Job(
        model="spiked",
        nu=1.0,
        L=2,
        delta=0.0,
        sigma="softmax",
        lam=0.1,
        alpha=1.0,
        n_outer=8,
        n_inner=4,
        seed=0,
        inner_seed=1,
        s_grid=(1.0,),
        s_extend=2.0,
        s_max_rows=2,
        frac=0.05,
        tol=2e-4,
        max_iter=5,
        rs="rs.nc",
        n0_check=True,
    )
    task = ReplicaTask("softmax", Setting("spiked", 1.0, 2, 0.0))
    reported = dict(zip(rsb1.STATE1, [0.1, 0.5, 0.2, 1.0] * 2)) | {"s": 1.7}
    out = doubled(task, job, {}, reported, rsb1.Rsb1Options())
    assert set(out) == set(N0X2) and seen == {"rs": 16, "rsb1": (16, 16, 1.7, 0.2)}
    assert out["objective"] == 1.2 and out["rs_test_error"] == 0.4 and out["converged"]
    nothing = doubled(task, job, {}, None, rsb1.Rsb1Options())  # no state reported: RS only
    assert math.isnan(nothing["objective"]) and nothing["rs_objective"] == 1.1
