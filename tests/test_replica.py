"""Tests of the finite-α replica theory (slrpipe.theory.replica); docs/theory.md.

Runtime budget ≈ 2 min on one (shared) core. Tolerances are stated next to each assertion.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from slrpipe.setting import Setting
from slrpipe.theory.population import optimal_risk
from slrpipe.theory.replica import Draw, ReplicaTask, solve_replica
from slrpipe.theory.replica.channel import channel
from slrpipe.theory.replica.fields import draw_fields
from slrpipe.theory.replica.newton import psi
from slrpipe.theory.replica.prox import prox


def _ridge_closed_form(alpha, lam, delta):
    """Classical ridge learning curve (y = x·v*/√D + Δξ, |v*|² = D, Gaussian x): V from
    λV² + (λ + α − 1)V − 1 = 0, m = αV/(1+V), q from the linear equation
    q = V²(m̂² + α(1 + Δ² − 2m + q)/(1+V)²); e_test = 1 + Δ² − 2m + q."""
    V = (-(lam + alpha - 1) + math.sqrt((lam + alpha - 1) ** 2 + 4 * lam)) / (2 * lam)
    m = alpha * V / (1 + V)
    mhat = alpha / (1 + V)
    c = V**2 * alpha / (1 + V) ** 2
    q = (V**2 * mhat**2 + c * (1 + delta**2 - 2 * m)) / (1 - c)
    return V, m, q, 1 + delta**2 - 2 * m + q


@pytest.mark.parametrize("alpha", [0.5, 3.0])
def test_L1_softmax_is_ridge_regression(alpha):
    # L = 1: softmax ≡ 1, f = z: ridge regression of y on one Gaussian feature map. The channel
    # is Monte Carlo (4000 samples): relative MC error of q̂ ~ √(2/4000) ≈ 2 %, so 4 % on e_test.
    lam, delta = 0.3, 0.5
    V, m, q, e = _ridge_closed_form(alpha, lam, delta)
    r = solve_replica(
        ReplicaTask("softmax", Setting("spiked", 1.0, 1, delta)),
        lam,
        alpha,
        fields=Draw(n_samples=4000, seed=1),
        tol=1e-7,
    )
    assert r["converged"]
    assert r["m_k"] == pytest.approx(0.0, abs=1e-8) and r["q_k"] == pytest.approx(0.0, abs=1e-8)
    assert r["V_v"] == pytest.approx(V, rel=0.03)
    assert r["m_v"] == pytest.approx(m, rel=0.03)
    assert r["q_v"] == pytest.approx(q, rel=0.05)
    assert r["test_error"] == pytest.approx(e, rel=0.04)


def test_ridge_closed_form_matches_finite_D_ridge():
    # Independent check of the closed form itself: explicit ridge at D = 400, 4 seeds. Finite-D
    # fluctuations of e_test are O(1/√D) ≈ 5 %, averaged over 4 seeds ≈ 2.5 %; tolerance 8 %.
    alpha, lam, delta, D = 3.0, 0.3, 0.5, 400
    errs = []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        n = int(alpha * D)
        vs = rng.standard_normal(D)
        vs *= math.sqrt(D) / np.linalg.norm(vs)
        X = rng.standard_normal((n, D)) / math.sqrt(D)
        y = X @ vs + delta * rng.standard_normal(n)
        v = np.linalg.solve(X.T @ X + lam * np.eye(D), X.T @ y)
        m, q = v @ vs / D, v @ v / D
        errs.append(1 + delta**2 - 2 * m + q)
    assert np.mean(errs) == pytest.approx(_ridge_closed_form(alpha, lam, delta)[3], rel=0.08)


@pytest.mark.parametrize("sigma", ["softmax", "linear"])
def test_implicit_jacobian_matches_finite_differences(sigma):
    rng = np.random.default_rng(3)
    N, L, Vk, Vv = 200, 2, 0.7, 0.5
    wk, wv, y = rng.standard_normal((N, L)), rng.standard_normal((N, L)), 1.5 * rng.standard_normal(N)
    p = prox(sigma, wk, wv, y, Vk, Vv, n_steps=40)
    h = 1e-5
    fd_k = np.zeros((N, L))
    for ell in range(L):
        e = np.zeros(L)
        e[ell] = h
        pp = prox(sigma, wk + e, wv, y, Vk, Vv, warm=p["chi"], n_steps=40)["chi"][:, ell]
        pm = prox(sigma, wk - e, wv, y, Vk, Vv, warm=p["chi"], n_steps=40)["chi"][:, ell]
        fd_k[:, ell] = (pp - pm) / (2 * h)
    dyp = prox(sigma, wk, wv, y + h, Vk, Vv, warm=p["chi"], n_steps=40)["z"]
    dym = prox(sigma, wk, wv, y - h, Vk, Vv, warm=p["chi"], n_steps=40)["z"]
    fd_y = (dyp - dym) / (2 * h)
    # ∂χ_ℓ/∂ω_χℓ = (H⁻¹)_{ℓℓ}/V_k; samples where the global prox jumps inside ±h are excluded
    # (< 2 % of them: a jump shows as a finite difference of order 1/h).
    jac = p["hinv_diag"][:, :L] / Vk
    ok = np.all(np.abs(fd_k) < 1e3, axis=1) & np.all(np.abs(fd_y) < 1e3, axis=1)
    assert ok.mean() > 0.98
    # central differences at h = 1e-5 with Newton converged to |∇ψ| ~ 1e-12: error ≲ 1e-6
    np.testing.assert_allclose(jac[ok], fd_k[ok], atol=2e-5)
    np.testing.assert_allclose(p["dz_dy"][ok], fd_y[ok], atol=2e-5)


@pytest.mark.parametrize("sigma", ["softmax", "linear"])
def test_prox_is_global_minimum_against_dense_grid(sigma):
    # Strongly non-convex regime (V_k = 8, large |y|): our minimum must not exceed the minimum of
    # ψ over a dense 2-D grid (L = 2, radius R around ω_χ, where every minimiser lies).
    rng = np.random.default_rng(5)
    N, L, Vk, Vv = 60, 2, 8.0, 5.0
    wk, wv, y = rng.standard_normal((N, L)), rng.standard_normal((N, L)), 2 * rng.standard_normal(N)
    p = prox(sigma, wk, wv, y, Vk, Vv)
    import jax
    import jax.numpy as jnp

    g = np.linspace(-1, 1, 301)
    G = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    with jax.enable_x64(True):
        for i in range(N):
            R = math.sqrt(2 * Vk * float(psi(jnp.asarray(wk[i]), wk[i], wv[i], y[i], Vk, Vv, sigma)))
            pts = jnp.asarray(wk[i] + R * G)
            vals = jax.vmap(lambda c: psi(c, wk[i], wv[i], y[i], Vk, Vv, sigma))(pts)
            # grid minimum is an upper bound of the global minimum; 1e-10: float rounding
            assert p["psi"][i] <= float(vals.min()) + 1e-10


def test_stein_vhat_makes_mhat_estimators_consistent():
    # Non-convex point (spiked L=2, ν=1, λ=0.1, α=1, ~20 % of samples with two local minima).
    # The tilt form α√ν E f_ε and the general form α E Σ f h* + V̂ m of m̂_k are equal iff V̂ is
    # the exact (distributional) derivative: with Stein they agree within 4 s.e.; the pointwise
    # Jacobian V̂ differs from Stein by ≫ 4 s.e. (docs/theory.md §4). iid fields: the s.e. are
    # the iid formula.
    f = draw_fields(Setting("spiked", 1.0, 2, 0.0), 8000, seed=0)
    st = (0.14, 0.289, 8.73, 0.603, 0.842, 5.53)
    c = channel("softmax", f, 1.0, st, vhat="stein")
    assert c["prox_multi"] > 0.05
    se = math.hypot(c["mhat_k_general_se"], c["mhat_k_tilt_se"])
    assert abs(c["mhat_k_general"] - c["mhat_k_tilt"]) < 4 * se
    assert abs(c["Vhat_k_jac"] - c["Vhat_k_stein"]) > 4 * math.hypot(c["Vhat_k_jac_se"], c["Vhat_k_stein_se"])
    # Rao–Blackwell m̂_v (docs/theory.md §9): same expectation as the general form (4 s.e.),
    # smaller per-sample spread; the default m̂_k is the tilt form (its RB version, spiked)
    se_v = math.hypot(c["mhat_v_general_se"], c["mhat_v_rb_se"])
    assert abs(c["mhat_v_general"] - c["mhat_v_rb"]) < 4 * se_v
    assert c["mhat_v_rb_se"] < c["mhat_v_general_se"] and c["mhat_k_tilt_se"] < c["mhat_k_general_se"]
    assert c["mhat_k"] == c["mhat_k_tilt"] and c["mhat_v"] == c["mhat_v_rb"]
    # soft-min over local minima (β = 100): the channel moves by far less than its MC error
    # (measured ≤ 0.2 s.e. at 32000 samples on this and two L = 3 states; bound 1 s.e.)
    c_soft = channel("softmax", f, 1.0, st, softmin=100.0)
    for k in ("mhat_k", "qhat_k", "Vhat_k", "mhat_v", "qhat_v", "Vhat_v"):
        assert abs(c_soft[k] - c[k]) < c[k + "_se"]


@pytest.mark.parametrize(
    "sigma,model,nu,init",
    [
        ("softmax", "spiked", 1.0, dict(m_k=1.09, q_k=1.29, V_k=0.02, m_v=1.01, q_v=1.03, V_v=0.01)),
        ("linear", "max", math.inf, dict(m_k=0.58, q_k=0.35, V_k=0.02, m_v=0.51, q_v=0.27, V_v=0.01)),
    ],
)
def test_large_alpha_reaches_population_optimum(sigma, model, nu, init):
    # e_test(α) = e_pop + a/α + O(1/α²): Richardson extrapolation from α = 100, 200 removes the
    # 1/α term. Remainder: the 1/α² term seen between α = 50, 100, 200 is ≲ 1e-3. MC error of
    # the extrapolation (common random numbers): measured |error| 6e-5 (softmax, seed 0) and
    # 5e-4 (linear) at 4000 samples, but 8e-3 at 2000 samples (softmax, seed 2), i.e. an s.d.
    # of up to ~5e-3 at 4000 samples. Tolerance 5e-3 (the 1/α term at α = 200 is ≈ 7e-3).
    L, lam = 2, 0.1
    pop = optimal_risk(sigma, Setting(model, nu, L))["risk"]
    e = {}
    for a in (100.0, 200.0):
        r = solve_replica(
            ReplicaTask(sigma, Setting(model, nu, L, 0.0)),
            lam,
            a,
            fields=Draw(n_samples=4000, seed=2),
            init=init,
            n_steps=12,
        )
        assert r["converged"]
        init = {k: r[k] for k in ("m_k", "q_k", "V_k", "m_v", "q_v", "V_v")}
        e[a] = r["test_error"]
    assert e[100.0] > e[200.0] > pop  # finite α is worse than the population optimum
    assert 2 * e[200.0] - e[100.0] == pytest.approx(pop, abs=5e-3)


def test_non_convergence_is_flagged():
    r = solve_replica(
        ReplicaTask("softmax", Setting("spiked", 1.0, 1, 0.5)),
        0.3,
        3.0,
        fields=Draw(n_samples=4000, seed=1),
        max_iter=2,
        polish=False,
    )
    assert r["converged"] is False
    assert r["residual"] > 1e-5 and r["iterations"] == 2
    assert np.isfinite(r["test_error"])  # a number is returned, but flagged


def test_polish_finishes_a_near_miss_at_the_same_fixed_point():
    # Stopped after 4 evaluations (residual 8e-4 > tol), the solve is finished by the hybr polish:
    # converged, at the fixed point the full iteration reaches (same map, same common random
    # numbers: |Δx| ≲ |(I − J)⁻¹| tol ≈ 1e-6, bound 1e-5 relative), which is the ridge closed form
    # within its Monte Carlo error (4 %, test above). Without the polish the same solve is flagged.
    kw = dict(fields=Draw(n_samples=4000, seed=1), tol=1e-7)
    args = (ReplicaTask("softmax", Setting("spiked", 1.0, 1, 0.5)), 0.3, 3.0)
    full = solve_replica(*args, **kw)
    cut = solve_replica(*args, max_iter=4, polish=False, **kw)
    pol = solve_replica(*args, max_iter=4, **kw)
    assert full["converged"] and not full["polished"]
    assert not cut["converged"] and 1e-7 < cut["residual"] < 1e-2
    assert pol["converged"] and pol["polished"] and pol["residual"] < 1e-7
    for k in ("m_v", "q_v", "V_v", "V_k"):
        assert pol[k] == pytest.approx(full[k], rel=1e-5)
    assert pol["test_error"] == pytest.approx(_ridge_closed_form(3.0, 0.3, 0.5)[3], rel=0.04)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(lam=0.0), "lam"),
        (dict(alpha=-1.0), "alpha"),
        (dict(sigma="erf"), "sigma"),
        (dict(model="spiked", nu=math.inf), "nu"),
        (dict(L=0), "L"),
        (dict(delta=-0.1), "delta"),
    ],
)
def test_bad_arguments_raise(kw, match):
    args = dict(sigma="softmax", model="spiked", nu=1.0, L=2, delta=0.0, lam=0.1, alpha=1.0)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        task = ReplicaTask(
            args.pop("sigma"), Setting(args.pop("model"), args.pop("nu"), args.pop("L"), args.pop("delta"))
        )
        solve_replica(task, args.pop("lam"), args.pop("alpha"), fields=Draw(n_samples=100))


def test_cli_writes_sweep(tmp_path):
    import xarray as xr

    from slrpipe.cli import main

    out = tmp_path / "r.nc"
    rc = main(
        [
            "replica",
            "--sigma",
            "softmax",
            "--model",
            "spiked",
            "--nu",
            "1",
            "--L",
            "1",
            "--delta",
            "0.5",
            "--lam-grid",
            "0.3,1",
            "--alpha-grid",
            "0.5,3",
            "--n-samples",
            "4000",
            "--seed",
            "1",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    ds = xr.open_dataset(out)
    assert ds.test_error.dims == ("lam", "alpha") and ds.test_error_opt_lam.dims == ("alpha",)
    assert bool(ds.converged.all()) and int(ds.attrs["seed"]) == 1 and "slrpipe_version" in ds.attrs
    # L = 1 is ridge regression: the closed form at (λ = 0.3, α = 3), 4 % as in the test above
    assert float(ds.test_error.sel(lam=0.3, alpha=3.0)) == pytest.approx(_ridge_closed_form(3.0, 0.3, 0.5)[3], rel=0.04)
    assert float(ds.test_error_opt_lam.sel(alpha=3.0)) <= float(ds.test_error.sel(alpha=3.0).min()) + 1e-12


@pytest.mark.parametrize("model,nu", [("spiked", 2.0), ("max", 1.5), ("max", math.inf)])
def test_qmc_fields_have_the_data_law(model, nu):
    # Scrambled Sobol' fields, N/2 = 4096 base points. Tolerances in units of the iid standard
    # error: measured max |error| over 20 seeds × 13 coordinates: 0.022 (means), 0.10 (second
    # moments); bounds 0.1 and 0.5. The categorical location (max-SLR, finite ν) is a
    # discontinuous function of the point: 4 iid s.e. there. P(ε* = ℓ) = 1/L by symmetry.
    L = 3
    f = draw_fields(Setting(model, nu, L, 0.0), 8192, seed=7, qmc=True)
    assert f.qmc and f.seed == 7 and f.n == 8192
    h = f.n // 2
    np.testing.assert_array_equal(f.chi_star[:h], f.chi_star[h:])
    np.testing.assert_array_equal(f.xi_k[:h], -f.xi_k[h:])
    np.testing.assert_array_equal(f.xi_v[:h], -f.xi_v[h:])
    shift = np.array([math.sqrt(nu), 0, 0]) if model == "spiked" else np.zeros(L)
    g = np.column_stack([f.chi_star[:h] - shift, f.z_star[:h], f.noise[:h], f.xi_k[:h], f.xi_v[:h]])
    assert np.all(np.abs(g.mean(0)) < 0.1 / math.sqrt(h))
    assert np.all(np.abs((g**2).mean(0) - 1) < 0.5 * math.sqrt(2 / h))
    if model == "spiked":
        assert np.all(f.eps == 0)
    elif math.isinf(nu):
        np.testing.assert_array_equal(f.eps, np.argmax(f.chi_star, axis=1))
    else:
        freq = np.bincount(f.eps[:h], minlength=L) / h
        assert np.all(np.abs(freq - 1 / L) < 4 * math.sqrt((1 / L) * (1 - 1 / L) / h))
    # a different seed is a different scramble; the iid draw is unchanged by the new option
    assert not np.array_equal(draw_fields(Setting(model, nu, L, 0.0), 8192, seed=8, qmc=True).z_star, f.z_star)
    a, b = (
        draw_fields(Setting(model, nu, L, 0.0), 64, seed=1),
        draw_fields(Setting(model, nu, L, 0.0), 64, seed=1, qmc=False),
    )
    np.testing.assert_array_equal(a.xi_v, b.xi_v)


def test_two_phase_newton_equals_straight_newton():
    # prox runs 8 Newton steps on every lane, then the remaining ones on the unconverged lanes
    # only; the end points must be those of n_steps straight steps (lanes stopped early are at
    # |∇ψ| < 1e-10 (1 + 1/V_k): one more Newton step moves them by ≲ 1e-9).
    import jax

    from slrpipe.theory.replica import newton as NW

    rng = np.random.default_rng(11)
    M, L, Vk, Vv = 512, 3, 6.0, 2.0
    wk, wv, y = rng.standard_normal((M, L)), rng.standard_normal((M, L)), 1.5 * rng.standard_normal(M)
    chi0 = wk + rng.standard_normal((M, L))
    with jax.enable_x64(True):
        a = NW.run_lanes(chi0, wk, wv, y, Vk, Vv, "softmax", 25)
        b = [np.asarray(t) for t in NW.batch_newton(chi0, wk, wv, y, Vk, Vv, "softmax", 25)]
    np.testing.assert_allclose(a[0], b[0], atol=1e-8)
    np.testing.assert_allclose(a[1], b[1], atol=1e-12, rtol=1e-12)


def test_newton_lane_does_not_depend_on_its_batch():
    # the Newton loop runs while any lane of a batch is unconverged, the converged lanes frozen:
    # a lane's end point must be the same alone (padded with copies of a converged lane) and among
    # lanes that need more steps, and a converged start must not move. Up to rounding: XLA's
    # vectorised loops round a lane by its position (~1 ulp: ψ at one χ in lanes 251-254 of 256)
    import jax

    from slrpipe.theory.replica import newton as NW

    rng = np.random.default_rng(12)
    M, L, Vk, Vv = 256, 3, 6.0, 2.0
    wk, wv, y = rng.standard_normal((M, L)), rng.standard_normal((M, L)), 1.5 * rng.standard_normal(M)
    chi0 = wk + 2.0 * rng.standard_normal((M, L))
    with jax.enable_x64(True):
        mixed = [np.asarray(t) for t in NW.batch_newton(chi0, wk, wv, y, Vk, Vv, "softmax", 25)]
        conv = mixed[2] < NW._CONT_TOL * (1 + 1 / Vk)
        assert conv.mean() > 0.9, conv.mean()
        # lane i alone among copies of the converged end point of lane j: it runs its own steps
        i, j = int(np.argmax(~conv)) if (~conv).any() else 0, int(np.argmax(conv))
        pad = lambda a, b: np.concatenate([a[None], np.repeat(b[None], M - 1, 0)])
        alone = NW.batch_newton(
            pad(chi0[i], mixed[0][j]), pad(wk[i], wk[j]), pad(wv[i], wv[j]), pad(y[i], y[j]), Vk, Vv, "softmax", 25
        )
        alone = [np.asarray(t) for t in alone]
        for a, b in zip(alone, mixed):
            np.testing.assert_allclose(a[0], b[i], rtol=1e-13, atol=1e-13)
            np.testing.assert_allclose(a[1:], np.repeat(b[j : j + 1], M - 1, 0), rtol=1e-13, atol=1e-13)
        # the same lanes in another order (another batch composition): the same end points
        perm = rng.permutation(M)
        shuffled = NW.batch_newton(chi0[perm], wk[perm], wv[perm], y[perm], Vk, Vv, "softmax", 25)
        for a, b in zip(shuffled, mixed):
            np.testing.assert_allclose(np.asarray(a), b[perm], rtol=1e-13, atol=1e-13)


def test_anderson_reaches_the_damped_fixed_point():
    # Same common random numbers, tol = 1e-8: the two iterations converge to the same fixed point
    # of the same map; |x_A − x_D| ≲ |(I − J)⁻¹| · tol, with |(I − J)⁻¹| ≲ 10 measured at such
    # points: bound 1e-6 relative (measured 1e-8). Anderson needs fewer channel evaluations
    # (measured 19 vs 75).
    f = draw_fields(Setting("spiked", 1.0, 2, 0.0), 1024, seed=3, qmc=True)
    kw = dict(fields=f, tol=1e-8, max_iter=400)
    ra = solve_replica(ReplicaTask("softmax", Setting("spiked", 1.0, 2, 0.0)), 0.1, 3.0, method="anderson", **kw)
    rd = solve_replica(ReplicaTask("softmax", Setting("spiked", 1.0, 2, 0.0)), 0.1, 3.0, method="damped", **kw)
    assert ra["converged"] and rd["converged"]
    for k in ("m_k", "q_k", "V_k", "m_v", "q_v", "V_v"):
        assert ra[k] == pytest.approx(rd[k], rel=1e-6, abs=1e-9)
    assert ra["iterations"] < rd["iterations"]


def _no_stability(sigma, fields, alpha, *state, **kw):
    from slrpipe.theory.replica.stability import STABILITY

    return dict.fromkeys(STABILITY, math.nan)


def test_two_way_sweep_flags_two_branches(monkeypatch):
    # Toy RS equations with a fold: branch A (m_k = 0.5) exists for α ≥ 4, branch B (m_k = −0.1)
    # for α ≤ 6; continuation follows the branch of its warm start while it exists. The down
    # pass stays on A down to α = 4 and fails below; the up pass (cold start = B) stays on B up to
    # α = 6 and jumps to A above. Where both converge to different points (α = 4, 5, 6) the sweep
    # must report two branches, the lower objective, and the other one in *_alt.
    from slrpipe.theory.replica import continuation as C
    from slrpipe.theory.replica import sweep as S

    def obj(branch, alpha):
        return {"A": 1.0, "B": 0.9 if alpha >= 5 else 1.1}[branch] * alpha

    def fake(task, lam, alpha, *, fields=None, init=None, **kw):
        want = "B" if init is None or init["m_k"] < 0 else "A"
        exists = {"A": alpha >= 4, "B": alpha <= 6}
        b = want if exists[want] else ("A" if want == "B" else None)
        r = {k: 0.0 for k in S.OUTPUTS}
        r.update(
            m_k=0.5 if b == "A" else -0.1,
            q_k=1.0,
            V_k=1.0,
            m_v=0.5,
            q_v=1.0,
            V_v=1.0,
            converged=b is not None,
            iterations=3,
            wall_time=0.0,
            objective=obj(b, alpha) if b else 99.0,
            test_error={"A": 1.0, "B": 5.0, None: 9.0}[b],
        )
        return r

    monkeypatch.setattr(C, "solve_replica", fake)
    monkeypatch.setattr(S, "rs_stability", _no_stability)  # sweep logic under test, not the replicon
    ds = S.replica_sweep(
        ReplicaTask("linear", Setting("spiked", 1.0, 3, 0.0)), [0.1], [2, 3, 4, 5, 6, 10, 20], draw=Draw(n_samples=64)
    )
    nb = ds.n_branches.sel(lam=0.1).values.tolist()
    assert nb == [1, 1, 2, 2, 2, 1, 1]
    assert ds.branch.sel(lam=0.1).values.tolist() == [1, 1, 0, 1, 1, 0, 0]  # 1: up pass
    te = ds.test_error.sel(lam=0.1).values.tolist()
    assert te == [5.0, 5.0, 1.0, 5.0, 5.0, 1.0, 1.0]
    alt = ds.test_error_alt.sel(lam=0.1).values
    assert np.isnan(alt[[0, 1, 5, 6]]).all() and alt[2:5].tolist() == [5.0, 1.0, 1.0]
    assert bool(ds.converged.all())
    # two-way: the down pass stops at the fold (reaching α = 4 on its way to 3), the up pass is
    # stopped by agreement at α = 10, 20
    assert ds.alpha_reached_down.sel(lam=0.1).values.tolist() == [4, 4, 4, 5, 6, 10, 20]
    # one-way continuation sees one branch everywhere and misses B at α = 5, 6; past the fold
    # (α = 3: not converged, the branch reached α = 4) the next point gets a cold start (B at α = 2)
    ds1 = S.replica_sweep(
        ReplicaTask("linear", Setting("spiked", 1.0, 3, 0.0)),
        [0.1],
        [2, 3, 4, 5, 6, 10, 20],
        draw=Draw(n_samples=64),
        two_way=False,
    )
    assert ds1.n_branches.sel(lam=0.1).values.tolist() == [1, 0, 1, 1, 1, 1, 1]
    assert ds1.alpha_reached_down.sel(lam=0.1).values.tolist()[:2] == [2, 4]


def test_sweep_measures_the_monte_carlo_error():
    # L = 1 (ridge regression), 3 independent QMC draws: the seed-to-seed s.d. of the test error
    # is finite and below the 4 % accuracy of the closed form at 4000 samples (test above).
    from slrpipe.theory.replica import replica_sweep

    ds = replica_sweep(
        ReplicaTask("softmax", Setting("spiked", 1.0, 1, 0.5)),
        [0.3],
        [3.0],
        draw=Draw(n_samples=4096, seed=1),
        mc_seeds=3,
    )
    sd = float(ds.test_error_mc_sd.sel(lam=0.3, alpha=3.0))
    e = _ridge_closed_form(3.0, 0.3, 0.5)[3]
    assert 0 < sd < 0.04 * e
    assert float(ds.test_error.sel(lam=0.3, alpha=3.0)) == pytest.approx(e, rel=0.04)
    assert int(ds.attrs["qmc"]) == 1 and int(ds.attrs["mc_seeds"]) == 3


def test_cold_start_retries_larger_key_scales(monkeypatch):
    # Toy equations whose only fixed point at the largest α lies at large key norm (softmax at
    # small λ, docs/theory.md §10 (iv)): reachable from q_k ≥ 50 only; once there, continuation
    # down in α works. The sweep must find it from its key-scale ladder and say which start.
    from slrpipe.theory.replica import continuation as C
    from slrpipe.theory.replica import sweep as S

    def fake(task, lam, alpha, *, fields=None, init=None, **kw):
        ok = init is not None and init["q_k"] >= 50
        r = {k: 0.0 for k in S.OUTPUTS}
        r.update(
            m_k=5.0,
            q_k=70.0 if ok else 1.0,
            V_k=1.0,
            m_v=0.5,
            q_v=1.0,
            V_v=1.0,
            converged=ok,
            iterations=3,
            wall_time=0.0,
            objective=alpha,
            test_error=0.8 if ok else 9.0,
        )
        return r

    monkeypatch.setattr(C, "solve_replica", fake)
    monkeypatch.setattr(S, "rs_stability", _no_stability)  # sweep logic under test, not the replicon
    ds = S.replica_sweep(
        ReplicaTask("softmax", Setting("spiked", 1.0, 3, 0.0)),
        [0.01],
        [5, 10, 20],
        draw=Draw(n_samples=64),
        two_way=False,
    )
    assert ds.converged.values.tolist() == [[True, True, True]]
    assert ds.key_scale.values.tolist() == [next(c for c in C.KEY_SCALES if c * c >= 50)]
    assert ds.q_k.values.tolist() == [[70.0, 70.0, 70.0]]


def test_cold_start_tries_the_small_alpha_start(monkeypatch):
    # Toy equations whose only fixed point at the smallest α has V_k ≈ 1/λ (linear σ, λ = 0.01,
    # spiked ν = 1, α = 0.5: V_k = 99): reachable only from the α → 0 start, the last of the ladder.
    from slrpipe.theory.replica import continuation as C
    from slrpipe.theory.replica import sweep as S

    def fake(task, lam, alpha, *, fields=None, init=None, **kw):
        ok = init is not None and init.get("V_k", 1.0) >= 0.5 / lam
        r = {k: 0.0 for k in S.OUTPUTS}
        r.update(
            m_k=0.05,
            q_k=0.04,
            V_k=99.0 if ok else 1.0,
            m_v=0.1,
            q_v=0.1,
            V_v=60.0,
            converged=ok,
            iterations=3,
            wall_time=0.0,
            objective=alpha,
            test_error=1.1 if ok else 9.0,
        )
        return r

    monkeypatch.setattr(C, "solve_replica", fake)
    monkeypatch.setattr(S, "rs_stability", _no_stability)  # sweep logic under test, not the replicon
    ds = S.replica_sweep(
        ReplicaTask("linear", Setting("spiked", 1.0, 3, 0.0)),
        [0.01],
        [0.5, 1.0],
        draw=Draw(n_samples=64),
        two_way=False,
    )
    assert ds.converged.values.tolist() == [[True, True]]
    assert ds.key_scale.values.tolist() == [0.0] and C.KEY_SCALES[-1] == 0.0
    assert ds.V_k.values.tolist() == [[99.0, 99.0]]


def _linear_L16_ladder(monkeypatch, reachable):
    """Run the cold-start ladder of linear, spiked ν = 16, L = 16, α = 20 on toy equations whose
    only fixed point (the one ERM reaches, m_v ≪ m_k) converges from the starts ``reachable(init)``
    accepts. Returns (sweep dataset, [(init, far_patience) of each start tried], population optimum)."""
    from slrpipe.theory.replica import continuation as C
    from slrpipe.theory.replica import sweep as S

    task = ReplicaTask("linear", Setting("spiked", 16.0, 16, 0.0))
    tried = []

    def fake(task, lam, alpha, *, fields=None, init=None, options=None, **kw):
        ok = init is not None and "m_v" in init and reachable(init)
        tried.append((init, options.iterate.far_patience))
        r = {k: 0.0 for k in S.OUTPUTS}
        r.update(m_k=2.39, q_k=6.4, V_k=1.39, m_v=0.046, q_v=0.0023, V_v=2.4e-4, converged=ok)
        r.update(iterations=3, wall_time=0.0, objective=alpha, test_error=0.54 if ok else 16.0)
        return r

    monkeypatch.setattr(C, "solve_replica", fake)
    monkeypatch.setattr(S, "rs_stability", _no_stability)  # sweep logic under test, not the replicon
    ds = S.replica_sweep(task, [0.1], [20.0], draw=Draw(n_samples=64), two_way=False)
    return ds, tried, optimal_risk(task.sigma, task.setting)


def test_cold_start_tries_the_population_optimum(monkeypatch):
    # Reachable only from a start with the population optimum's unbalanced proportions
    # (m_v < 0.1 m_k): at the top of the grid above L = 6 linear tries that start first, without
    # the cold far cap.
    from slrpipe.theory.replica import continuation as C

    ds, tried, opt = _linear_L16_ladder(monkeypatch, lambda init: init["m_v"] < 0.1 * init["m_k"])
    assert ds.converged.values.tolist() == [[True]] and ds.key_scale.values.tolist() == [C.POPULATION]
    assert len(tried) == 1  # the population optimum, before the default init
    init, far = tried[0]
    assert init["m_k"] == opt["m_k"] and init["m_v"] == opt["m_v"] and far is None
    assert init["q_k"] == pytest.approx((1 + C.POP_SPREAD) * opt["m_k"] ** 2) and init["V_v"] > 0
    pop = (C.POPULATION, C.POPULATION_BALANCED)
    # softmax keeps its ladder and tries the population optimum last, at every L
    for L, top in ((3, False), (16, True), (64, True)):
        assert C.ladder("softmax", L, top) == (*C.KEY_SCALES, *pop)
    # linear: first at the top of the grid above L = 6, else right after the default init
    assert C.ladder("linear", 16, top=True) == (*pop, *C.KEY_SCALES)
    assert C.ladder("linear", 16, top=False)[:3] == C.ladder("linear", 3, top=True)[:3] == (1.0, *pop)
    assert set(C.ladder("linear")) == set(C.ladder("softmax"))


def test_cold_start_tries_the_balanced_population_optimum(monkeypatch):
    # Reachable only from |k| = |v| with the population optimum's m_k m_v (at L = 16 the
    # own-proportions start stalls): the second rung of linear at the top of the grid.
    from slrpipe.theory.replica import continuation as C

    ds, tried, opt = _linear_L16_ladder(monkeypatch, lambda init: init["m_v"] == init["m_k"])
    assert ds.key_scale.values.tolist() == [C.POPULATION_BALANCED] and len(tried) == 2
    init = tried[1][0]
    m = init["m_k"]
    assert m == pytest.approx(math.sqrt(opt["m_k"] * opt["m_v"])) and init["V_k"] == C.POP_BALANCED_V
    assert init["q_v"] == pytest.approx((1 + C.POP_SPREAD) * m * m)


def test_continuation_halves_its_step_and_locates_the_fold(monkeypatch):
    # Toy branch m_k = α that exists for α ≥ 3 only (a fold at α = 3) and that the solver can
    # follow in steps of |Δα| ≤ 2 only. Down the grid [1, 5, 10]: 10 → 5 needs intermediate
    # points (5 is reached); 5 → 1 fails, but the pass records that the branch reaches α = 3.
    from slrpipe.theory.replica import continuation as C
    from slrpipe.theory.replica import sweep as S

    calls = []

    def fake(task, lam, alpha, *, fields=None, init=None, **kw):
        calls.append(alpha)
        ok = alpha >= 3 and (alpha == 10 if init is None else abs(init["m_k"] - alpha) <= 2)
        r = {k: 0.0 for k in S.OUTPUTS}
        r.update(
            m_k=alpha if ok else 0.0,
            q_k=alpha**2 + 1,
            V_k=1.0,
            m_v=0.5,
            q_v=1.0,
            V_v=1.0,
            converged=ok,
            iterations=1,
            wall_time=0.0,
            objective=alpha,
            test_error=1.0 / alpha,
        )
        return r

    monkeypatch.setattr(C, "solve_replica", fake)
    monkeypatch.setattr(S, "rs_stability", _no_stability)  # sweep logic under test, not the replicon
    ds = S.replica_sweep(
        ReplicaTask("linear", Setting("spiked", 1.0, 3, 0.0)), [0.1], [1, 5, 10], draw=Draw(n_samples=64), two_way=False
    )
    assert ds.converged.values.tolist() == [[False, True, True]]
    assert ds.m_k.sel(lam=0.1, alpha=5).item() == 5.0
    assert ds.alpha_reached_down.values.tolist() == [[3.0, 5.0, 10.0]]
    assert np.isnan(ds.alpha_reached_up.values).all()
    # past the fold (from α = 3 towards 1) the steps halve down to 4/2^MAX_HALVINGS = 0.25, no further
    assert C.MAX_HALVINGS == 4
    assert sorted({a for a in calls if 1 < a < 3}) == [2.0, 2.5, 2.75]


def _fold_toy(monkeypatch, reach, fold):
    """replica_sweep one-way down [1, 5] on a toy branch m_k = α that exists for α ≥ ``fold`` and
    that the solver follows in steps |Δα| ≤ ``reach`` only; returns (dataset, α of every solve)."""
    from slrpipe.theory.replica import continuation as C
    from slrpipe.theory.replica import sweep as S

    calls = []

    def fake(task, lam, alpha, *, fields=None, init=None, **kw):
        calls.append(alpha)
        ok = alpha >= fold and (alpha == 5 if init is None else abs(init["m_k"] - alpha) <= reach)
        r = {k: 0.0 for k in S.OUTPUTS}
        r.update(m_k=alpha if ok else 0.0, q_k=alpha**2 + 1, V_k=1.0, m_v=0.5, q_v=1.0, V_v=1.0)
        r.update(converged=ok, iterations=1, wall_time=0.0, objective=alpha, test_error=1.0 / alpha)
        return r

    monkeypatch.setattr(C, "solve_replica", fake)
    monkeypatch.setattr(S, "rs_stability", _no_stability)
    task = ReplicaTask("linear", Setting("spiked", 1.0, 3, 0.0))
    return S.replica_sweep(task, [0.1], [1, 5], draw=Draw(n_samples=64), two_way=False), calls


def test_halving_retries_the_nearest_failure_first(monkeypatch):
    # Reach 1.6 (the steps 5 → 3 and 4 → 2 fail, 4 → 3 does not). With a fold at α = 0.5 the
    # branch reaches α = 1: after α = 4 the failed α = 3 is retried from 4, before the grid point
    # α = 1, then the halving starts again towards 1. Solves in order (probes of α = 1, then
    # intermediate points; the last 1 is the full solve after a converged probe):
    ds, calls = _fold_toy(monkeypatch, 1.6, fold=0.5)
    assert ds.converged.values.tolist() == [[True, True]]
    assert calls == [5, 1, 3.0, 4.0, 3.0, 1, 2.0, 1, 1]
    # With a fold at α = 3.2 nothing beyond the failed α = 3 is tried once it failed: the branch
    # is followed to 3.25 (the last step 2^-MAX_HALVINGS of the grid step 4), α = 1 never again
    ds, calls = _fold_toy(monkeypatch, 1.6, fold=3.2)
    assert ds.alpha_reached_down.values.tolist() == [[3.25, 5.0]]
    assert calls == [5, 1, 3.0, 4.0, 3.0, 3.5, 3.0, 3.25, 3.0]


def test_cheap_finish_keeps_the_passes_near_the_root_cheap(monkeypatch):
    # Toy contraction F(x) = (x + x*)/2: the damped residual halves per pass. By default every pass
    # with residual < 10⁻² is a full multi-start search and convergence is declared on one; with
    # cheap_finish (intermediate continuation points) the passes near the root stay cheap and the
    # solve ends on a cheap one, at the same point within tol.
    from slrpipe.theory.replica import solver as S

    target = np.array([0.5, 1.0, 1.0, 0.5, 1.0, 1.0])
    log = []

    def channel(*a, multistart=True, **k):
        log.append(multistart)
        return {"warm": "w"}

    def residual(lam, ch, x):
        f = 0.5 * (target - x)
        r = float(np.max(np.abs(f) / (1 + np.abs(x))))
        log[-1] = (log[-1], r)
        return f, r

    monkeypatch.setattr(S, "channel", channel)
    monkeypatch.setattr(S, "_residual", residual)
    f = draw_fields(Setting("spiked", 1.0, 2, 0.0), 64, seed=0)
    o = S.SolverOptions.build(polish=False, method="damped", damping=1.0, tol=1e-6, full_every=3)
    for cheap in (False, True):
        log.clear()
        run = S._iterate("softmax", f, 1.0, 0.1, target + 1.0, o.replace(cheap_finish=cheap))
        assert run.converged and np.max(np.abs(run.x - target) / (1 + target)) < 2e-6
        near = [full for full, r in log if r < 1e-2]
        far = [(i + 1, full) for i, (full, r) in enumerate(log) if r >= 1e-2]
        # far from the root: the first pass and every full_every-th are full, either way
        assert all(full == (i == 1 or i % 3 == 0) for i, full in far)
        if cheap:
            assert near and not any(near)
        else:
            assert all(near[1:]) and log[-1][0]  # converged on a full pass


def test_far_patience_ends_a_hopeless_solve_with_an_honest_flag(monkeypatch):
    # Toy map whose residual F(x) − x is a constant 0.5 (a start outside every basin): the best
    # residual never halves, so the solve must stop after far_patience further evaluations with
    # converged=False; without the cap it runs until `patience`
    # evaluations without progress.
    from slrpipe.theory.replica import solver as S

    monkeypatch.setattr(S, "channel", lambda *a, **k: {"warm": None})
    monkeypatch.setattr(S, "_residual", lambda lam, ch, x: (np.full(6, 0.5 * (1 + np.abs(x))), 0.5))
    f = draw_fields(Setting("spiked", 1.0, 2, 0.0), 64, seed=0)
    it = S.SolverOptions.build(polish=False)
    run = S._iterate("softmax", f, 1.0, 0.1, np.array([0.5, 1.0, 1.0, 0.5, 1.0, 1.0]), it.replace(far_patience=7))
    assert not run.converged and run.it == 1 + 7 and run.resid == 0.5
    run = S._iterate("softmax", f, 1.0, 0.1, np.array([0.5, 1.0, 1.0, 0.5, 1.0, 1.0]), it.replace(far_patience=None))
    assert not run.converged and run.it == 1 + it.iterate.patience
    # below far_below the cap does not apply (the default 1e-2), unless far_below = 0
    monkeypatch.setattr(S, "_residual", lambda lam, ch, x: (np.full(6, 1e-3 * (1 + np.abs(x))), 1e-3))
    x0 = np.array([0.5, 1.0, 1.0, 0.5, 1.0, 1.0])
    assert S._iterate("softmax", f, 1.0, 0.1, x0, it.replace(far_patience=7)).it == 1 + it.iterate.patience
    assert S._iterate("softmax", f, 1.0, 0.1, x0, it.replace(far_patience=7, far_below=0.0)).it == 1 + 7


def test_options_are_checked_and_grouped():
    from slrpipe.theory.replica.options import SolverOptions, SweepOptions

    o = SolverOptions.build(tol=1e-7, polish=False, softmin=None, far_patience=None)
    assert (o.iterate.tol, o.polish.enabled, o.channel.softmin, o.iterate.far_patience) == (1e-7, False, None, None)
    assert o.replace(memory=3).iterate.memory == 3 and o.iterate.memory == 5  # frozen: replace copies
    for bad, match in (
        (dict(tol=0), "tol"),
        (dict(method="newton"), "method"),
        (dict(far_patience=0), "far_patience"),
        (dict(polish_maxfev=0), "polish_maxfev"),
        (dict(vhat="x"), "vhat"),
        (dict(nope=1), "nope"),
    ):
        with pytest.raises(ValueError, match=match):
            SolverOptions.build(**bad)
    with pytest.raises(ValueError, match="step_tol"):
        SweepOptions(step_tol=-1)
    sw = SweepOptions(step_tol=1e-4, step_patience=15)
    mid = sw.intermediate(o)
    assert (mid.iterate.tol, mid.polish.enabled, mid.iterate.patience) == (1e-4, False, 15)
    assert (mid.iterate.far_patience, mid.iterate.cheap_finish) == (o.iterate.far_patience, True)
    with pytest.raises(ValueError, match="step_patience"):
        SweepOptions(step_patience=0)
    assert SweepOptions(cold_far_patience=12).cold(o).iterate.far_patience == 12
    assert SweepOptions(step_tol=None, step_patience=None, step_cheap=False, step_full_every=None).intermediate(o) == o
    assert SweepOptions(step_full_every=10).intermediate(o).iterate.full_every == 10


def test_continuation_solves_intermediate_points_cheaply_and_passes_warm_starts(monkeypatch):
    # Toy branch that the solver follows in steps |Δα| ≤ 2 (as in the fold test above): 10 → 5
    # needs intermediate points. Those are solved with the intermediate options (looser tol, no
    # polish, shorter patience), the grid points with the full ones, the cold start with the cap
    # on wasted work; each solve gets the prox
    # warm starts of the last converged one, none after a cold start's failure.
    from slrpipe.theory.replica import continuation as C
    from slrpipe.theory.replica import sweep as S
    from slrpipe.theory.replica.options import SolverOptions

    calls = []

    def fake(task, lam, alpha, *, fields=None, init=None, options=None, warm=None, **kw):
        calls.append((alpha, options, warm))
        ok = init is None or abs(init["m_k"] - alpha) <= 2
        r = {k: 0.0 for k in S.OUTPUTS}
        r.update(
            m_k=alpha if ok else 0.0,
            q_k=alpha**2 + 1,
            V_k=1.0,
            m_v=0.5,
            q_v=1.0,
            V_v=1.0,
            converged=ok,
            iterations=1,
            wall_time=0.0,
            objective=alpha,
            test_error=1.0 / alpha,
            prox_warm=f"warm@{alpha:g}",
        )
        return r

    monkeypatch.setattr(C, "solve_replica", fake)
    monkeypatch.setattr(S, "rs_stability", _no_stability)  # sweep logic under test, not the replicon
    opts = SolverOptions.build(tol=1e-6)
    ds = S.replica_sweep(
        ReplicaTask("linear", Setting("spiked", 1.0, 3, 0.0)),
        [0.1],
        [5, 10],
        draw=Draw(n_samples=64),
        two_way=False,
        options=opts,
    )
    assert ds.converged.values.tolist() == [[True, True]]
    cheap = opts.replace(tol=1e-4, polish=False, patience=15, cheap_finish=True, full_every=10)
    probe = cheap  # a probe is solved with the intermediate options
    grid = [(a, o, w) for a, o, w in calls[1:] if a in (5.0, 10.0)]
    mid = [(a, o, w) for a, o, w in calls if a not in (5.0, 10.0)]
    assert mid and all(o == cheap for _, o, _ in mid)
    # the cold start: the solver's options with the cap on wasted work (cold_far_patience)
    assert calls[0] == (10.0, opts.replace(far_patience=30), None)
    # first try of 10 → 5 a cheap probe (it fails: the step is too long); then halved
    # steps from 10, and after each converged intermediate point a cheap probe of 5 (sw.probe),
    # solved in full only from a probe that converged
    assert calls[1] == (5.0, probe, "warm@10")
    assert not [c for c in calls if c[1] == opts and c[0] == 5.0 and c[2] == "warm@10"]  # no full try from 10
    retries = grid[1:]
    assert retries and all(o in (opts, probe) for _, o, _ in retries)
    for i, (a, o, w) in enumerate(retries):
        if o == opts:  # a full retry always follows a probe of the same point, from its state
            assert retries[i - 1][:2] == (a, probe) and w == f"warm@{a:g}"
    probes = [w for a, o, w in retries if o == probe]
    assert probes and probes[-1] == f"warm@{mid[-1][0]:g}"  # the last probe starts from the last intermediate point
    assert retries[-1][1] == opts  # and the reported solve is a full one


def test_two_way_sweep_cold_starts_each_point_once(monkeypatch):
    # Toy equations with no fixed point at α = 5 and one at α = 1 reachable only from the α → 0
    # start: the down pass cold-starts at 5 (fails) and then at 1; the up pass starts at 1 too.
    # A cold start is deterministic, so the up pass must reuse the down pass's one (one ladder
    # of KEY_SCALES solves at α = 1, not two) with the same result.
    from slrpipe.theory.replica import continuation as C
    from slrpipe.theory.replica import sweep as S

    calls = []

    def fake(task, lam, alpha, *, fields=None, init=None, **kw):
        calls.append(alpha)
        ok = alpha == 1.0 and init is not None and init.get("V_k", 1.0) >= 0.5 / lam
        r = {k: 0.0 for k in S.OUTPUTS}
        r.update(
            m_k=0.05,
            q_k=0.04,
            V_k=99.0 if ok else 1.0,
            m_v=0.1,
            q_v=0.1,
            V_v=60.0,
            converged=ok,
            iterations=3,
            wall_time=0.0,
            objective=alpha,
            test_error=1.1 if ok else 9.0,
        )
        return r

    monkeypatch.setattr(C, "solve_replica", fake)
    monkeypatch.setattr(S, "rs_stability", _no_stability)  # sweep logic under test, not the replicon
    ds = S.replica_sweep(
        ReplicaTask("linear", Setting("spiked", 1.0, 3, 0.0)), [0.01], [1.0, 5.0], draw=Draw(n_samples=64)
    )
    assert ds.converged.values.tolist() == [[True, False]]
    assert calls.count(1.0) == len(C.ladder("linear"))


def test_prox_does_not_depend_on_the_chunk_size():
    # The chunk (samples per jitted call: 4096 on CPU, all samples on an accelerator) only splits
    # the batch: every sample is solved independently, so the results must be identical.
    from slrpipe.theory.replica import prox as P

    rng = np.random.default_rng(5)
    N, L = 300, 3
    wk, wv, y = rng.standard_normal((N, L)), rng.standard_normal((N, L)), rng.standard_normal(N)
    a = P.prox("softmax", wk, wv, y, 2.0, 1.5, chunk=128, softmin=100.0)
    b = P.prox("softmax", wk, wv, y, 2.0, 1.5, chunk=None, softmin=100.0)
    assert P.default_chunk() >= 4096
    for k in ("chi", "z", "psi", "fk", "loss"):
        np.testing.assert_allclose(a[k], b[k], rtol=1e-12, atol=1e-12)


def test_prox_does_not_depend_on_the_number_of_threads(monkeypatch):
    # chunks run in parallel threads (prox_threads): the same programs on the same rows, so the
    # results must be bit-identical to one thread, with x64 in force in every thread
    from slrpipe.theory.replica import prox as P

    rng = np.random.default_rng(6)
    N, L = 300, 3
    wk, wv, y = rng.standard_normal((N, L)), rng.standard_normal((N, L)), rng.standard_normal(N)
    out = {}
    for n in (1, 3):
        monkeypatch.setattr(P, "prox_threads", lambda n=n: n)
        out[n] = P.prox("softmax", wk, wv, y, 2.0, 1.5, chunk=64, softmin=100.0)
    assert out[1]["psi"].dtype == np.float64
    for k in out[1]:
        np.testing.assert_array_equal(out[1][k], out[3][k], err_msg=k)


def test_prox_above_L6_completes_with_several_threads():
    # above L = 6 the prox calls LAPACK, and two such programs executing at once from two threads
    # hang jax 0.10.2 on CPU (this very call did, without the guard in prox._run_chunks); with
    # OMP_NUM_THREADS = 2 and 4 chunks it must finish (~15 s; in a child process, so that a hang
    # fails this test after 240 s instead of stopping the run)
    import subprocess
    import sys

    code = (
        "import numpy as np; from slrpipe.theory.replica import prox as P; "
        "r = np.random.default_rng(0); w = r.standard_normal((1024, 16)); "
        "p = P.prox('softmax', w, w[::-1], r.standard_normal(1024), 2.0, 1.5, chunk=256); "
        "print(np.isfinite(p['psi']).all())"
    )
    from slrpipe.threads import thread_env

    env = dict(os.environ, **thread_env(2))
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=240)
    assert res.stdout.strip() == "True", res.stderr[-2000:]


def test_prox_threads_follow_omp_num_threads(monkeypatch):
    from slrpipe.theory.replica.prox import prox_threads

    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert prox_threads() == 3
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert prox_threads() >= 1


def test_compilation_cache_cold_and_warm_give_identical_replica_results(tmp_path):
    """Replica jobs share the workflow's persistent compilation cache (workflow/rules/common.smk): a
    run that compiles the prox programs and one that loads them all write the same numbers, bit for bit."""
    from conftest import assert_identical_but_wall_time, cold_and_warm_runs

    cold, warm = cold_and_warm_runs(
        tmp_path,
        [
            "replica",
            "--model",
            "spiked",
            "--nu",
            "1",
            "--L",
            "2",
            "--sigma",
            "softmax",
            "--lam-grid",
            "0.1",
            "--alpha-grid",
            "2",
            "--n-samples",
            "256",
        ],
    )
    assert bool(cold.converged.all())
    assert_identical_but_wall_time(cold, warm)
