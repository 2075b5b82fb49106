"""RS stability (replicon) of the zero-temperature fixed point: docs/theory.md §11."""

import math

import numpy as np
import pytest
from scipy import integrate, special

from slrpipe.setting import Setting
from slrpipe.theory.replica import ReplicaTask, solve_replica
from slrpipe.theory.replica.fields import draw_fields
from slrpipe.theory.replica.stability import (
    STABILITY,
    jump_operator,
    rs_stability,
    smooth_operator,
    spectral_radius,
    sym_operator,
    tail_index,
)

STATE = ("m_k", "q_k", "V_k", "m_v", "q_v", "V_v")


def test_sym_operator_matches_explicit_sum():
    """T(E) = α mean_i Σ_ℓℓ' A_ℓℓ' E A_ℓℓ'ᵀ, coordinates (kk, vv, kv), against explicit loops."""
    rng = np.random.default_rng(0)
    N, L, alpha = 5, 3, 1.7
    A = rng.standard_normal((N, 2 * L, 2 * L))
    M = smooth_operator(A, alpha).mean(0)
    E = np.array([[0.3, -0.7], [-0.7, 1.1]])
    T = np.zeros((2, 2))
    for i in range(N):
        for l in range(L):
            for m in range(L):
                blk = A[i][np.ix_([l, L + l], [m, L + m])]
                T += blk @ E @ blk.T
    T *= alpha / N
    got = M @ np.array([E[0, 0], E[1, 1], E[0, 1]])
    np.testing.assert_allclose(got, [T[0, 0], T[1, 1], T[0, 1]], rtol=1e-12)
    assert sym_operator(np.zeros((2, 2, 2, 2))).shape == (3, 3)


@pytest.mark.parametrize("lam, alpha", [(0.1, 2.0), (0.01, 0.5)])
def test_ridge_replicon_closed_form(lam, alpha):
    """σ ≡ 1 (softmax, L = 1) is ridge regression: replicon = α V_v²/(1 + V_v)² < 1, no jumps.
    The identity holds exactly at the solver's V_v; V_v itself agrees with the closed-form root of
    λV² + (λ + α − 1)V − 1 = 0 within 4 of its Monte Carlo standard errors (V = 1/(λ + V̂))."""
    f = draw_fields(Setting("spiked", 1.0, 1, 0.5), 4096, 0, qmc=True)
    r = solve_replica(ReplicaTask("softmax", Setting("spiked", 1.0, 1, 0.5)), lam, alpha, fields=f, softmin=None)
    assert r["converged"]
    st = rs_stability("softmax", f, alpha, [r[k] for k in STATE])
    assert set(STABILITY) <= set(st)
    V = r["V_v"]
    assert st["replicon"] == pytest.approx(alpha * V**2 / (1 + V) ** 2, rel=1e-9)
    assert st["replicon"] < 1 and st["rs_stable"]
    assert st["replicon_tail_index"] > 2 and math.isfinite(st["replicon_se"])  # light-tailed: s.e. given
    assert st["replicon_jump_slope"] == 0 and st["prox_multi_fraction"] == 0 and st["n_ties"] == 0
    V_exact = (-(lam + alpha - 1) + math.sqrt((lam + alpha - 1) ** 2 + 4 * lam)) / (2 * lam)
    se_V = V**2 * r["Vhat_v_se"]
    assert abs(V - V_exact) < 4 * se_V + 1e-9
    # the closed form at the exact V: (1 − λV) V/(1 + V), docs/theory.md §11
    assert alpha * V_exact**2 / (1 + V_exact) ** 2 == pytest.approx((1 - lam * V_exact) * V_exact / (1 + V_exact))


def _toy(a, V, s):
    """Scalar double well ℓ(h) = ½ min((h − a)², (h + a)²), ω ~ N(0, s²): prox branches
    h± = (ω ± V a)/(1 + V), X = ψ₊ − ψ₋ = −2aω/(1 + V); jump Δh = 2Va/(1 + V), Δf = Δh/V."""
    dh = 2 * V * a / (1 + V)
    p0 = (1 + V) / (2 * a) / (math.sqrt(2 * math.pi) * s)  # density of X at 0
    return dh, dh / V, p0


def test_jump_slope_window_estimate_and_softmin_limit():
    """Toy double-well channel (one column): (i) the soft-min replicon T_β = α E[A_β²] by
    quadrature grows like T + βK with K = (α/6) p_X(0) Δh² Δf² (the β/6 of docs/theory.md §11);
    (ii) the window estimator of :func:`jump_operator` recovers K and the V̂ jump
    −α p_X(0) Δf² from samples within 4 standard errors."""
    a, V, s, alpha = 0.8, 0.7, 1.3, 2.0
    dh, df, p0 = _toy(a, V, s)
    K = alpha / 6 * p0 * dh**2 * df**2

    def T_beta(beta):
        c = 2 * a / (1 + V)

        def A(w):  # V ∂f̄/∂ω of the soft-min channel
            sg = special.expit(beta * c * w)
            return -V / (1 + V) + V * c**2 * beta * sg * (1 - sg)

        dens = lambda w: math.exp(-0.5 * (w / s) ** 2) / (math.sqrt(2 * math.pi) * s)
        w0 = 40 / (beta * c)
        val = sum(
            integrate.quad(lambda w: A(w) ** 2 * dens(w), lo, hi, limit=400, epsabs=1e-13)[0]
            for lo, hi in ((-np.inf, -w0), (-w0, w0), (w0, np.inf))
        )
        return alpha * val

    slope = (T_beta(800.0) - T_beta(400.0)) / 400.0
    assert slope == pytest.approx(K, rel=1e-3)
    # (ii) samples: ω ~ N(0, s²), gap = |X|, jump only in the v column
    rng = np.random.default_rng(1)
    N, t = 400_000, 0.02
    w = s * rng.standard_normal(N)
    gap = np.abs(2 * a * w / (1 + V))
    dhs = np.zeros((N, 2, 1))
    dhs[:, 1, 0] = dh
    Km, vj = jump_operator(dhs, gap, np.array([1.0, V]), alpha, t)
    rho, se = spectral_radius(Km.mean(0), Km)
    assert abs(rho - K) < 4 * se and se < 0.05 * K
    vj_v = vj[:, 1]
    assert abs(vj_v.mean() + alpha * p0 * df**2) < 4 * vj_v.std(ddof=1) / math.sqrt(N)
    assert np.all(vj[:, 0] == 0)


def test_softmax_two_tokens_flagged_unstable():
    """Non-convex channel (softmax, L = 2, spiked ν = 1, λ = 0.1, α = 1, Δ = 0) at its RS fixed
    point (solve_replica, N = 4096 QMC seed 0, rounded to 4 digits): the global prox jumps, so RS
    is flagged unstable (ties within tie_tol, K > 0), and the window estimate of the V̂ jump mass
    agrees with the Stein − pointwise-Jacobian difference of the channel within 3 standard errors
    of the window estimate (docs/theory.md §4, §11)."""
    f = draw_fields(Setting("spiked", 1.0, 2, 0.0), 4096, 0, qmc=True)
    x = dict(m_k=0.147, q_k=0.2863, V_k=8.4822, m_v=0.6208, q_v=0.8572, V_v=5.5972)
    st = rs_stability("softmax", f, 1.0, [x[k] for k in STATE])  # default window 0.01 (§11)
    assert not st["rs_stable"]
    assert st["n_ties"] >= 5 and st["prox_multi_fraction"] > st["prox_tie_fraction"] > 0
    assert st["replicon_jump_slope"] > 0
    assert 0 < st["replicon"]
    assert st["replicon_tail_index"] < 2 and math.isnan(st["replicon_se"])  # heavy tail: no s.e.
    assert st["n_singular"] == 0
    for c in ("k", "v"):
        assert st[f"vhat_jump_{c}"] < 0
        assert abs(st[f"vhat_jump_{c}"] - st[f"vhat_stein_minus_jac_{c}"]) < 3 * st[f"vhat_jump_{c}_se"]


def test_tail_index_recovers_a_pareto_tail():
    """Hill estimate on Pareto(γ) samples: within 4 of its asymptotic s.e. γ/√k (k = 1 % of n)."""
    rng = np.random.default_rng(3)
    n = 100_000
    for gamma in (1.2, 3.0):
        x = rng.pareto(gamma, n) + 1.0
        assert abs(tail_index(x) - gamma) < 4 * gamma / math.sqrt(0.01 * n)
    assert tail_index(np.ones(100)) == math.inf and math.isnan(tail_index(np.ones(5)))


def test_rejects_bad_window():
    f = draw_fields(Setting("spiked", 1.0, 1, 0.0), 16, 0)
    with pytest.raises(ValueError, match="tie_tol"):
        rs_stability("softmax", f, 1.0, (0.5, 1.0, 1.0, 0.5, 1.0, 1.0), tie_tol=0.0)


@pytest.mark.slow
def test_replicon_operator_predicts_the_erm_susceptibility():
    """Finite-D check of T itself (scripts/replicon_vs_hessian.py, docs/theory.md §11): at a
    stable point with two tokens (linear σ, L = 2, spiked ν = 1, λ = 0.1, α = 10, no prox jumps)
    the ERM minimum's (1/D) tr H⁻¹ → V and (1/D) tr (H⁻²)_aa → [(I − T)⁻¹V²]_aa (4 seeds at
    D = 200, float64 L-BFGS; tolerance 4 × (seed s.e. ⊕ 2 %)). The cross-token blocks A_ℓℓ' (ℓ ≠ ℓ')
    of T matter: without them C_vv is predicted 28 % low, 6 seed s.e. from ERM."""
    import jax
    import jax.numpy as jnp

    from slrpipe.data.sampling import SLRTask, sample_chunk
    from slrpipe.data.teacher import make_teacher
    from slrpipe.theory.replica import stability as S
    from slrpipe.train.erm import minimize, objective
    from slrpipe.train.options import SolverOptions

    L, lam, alpha, D = 2, 0.1, 10.0, 200
    f = draw_fields(Setting("spiked", 1.0, L, 0.0), 4096, 0, qmc=True)
    r = solve_replica(ReplicaTask("linear", Setting("spiked", 1.0, L, 0.0)), lam, alpha, fields=f)
    assert r["converged"]
    x = [r[k] for k in STATE]
    captured = {}
    smooth = S.smooth_operator

    def keep(A, al):
        captured["A"] = A
        return smooth(A, al)

    S.smooth_operator = keep
    try:
        st = S.rs_stability("linear", f, alpha, x)
    finally:
        S.smooth_operator = smooth
    assert st["rs_stable"] and st["replicon"] < 1 and st["n_ties"] == 0
    V = np.array([r["V_k"], r["V_v"]])

    def predict(A):
        M = smooth_operator(A, alpha).mean(0)
        return np.linalg.solve(np.eye(3) - M, np.array([V[0] ** 2, V[1] ** 2, 0.0]))

    C_th = predict(captured["A"])
    diag_only = captured["A"].copy()
    for a in range(2):
        for b in range(2):
            blk = diag_only[:, a * L : (a + 1) * L, b * L : (b + 1) * L]
            blk *= np.eye(L)[None]
    C_diag = predict(diag_only)

    task = SLRTask(Setting("spiked", 1.0, L, 0.0), D)
    n = int(alpha * D)
    vals = []  # per seed: (1/D) tr H⁻¹ (k, v), (1/D) tr H⁻² (k, v)
    # one compiled program for every seed (op by op, the first seed's Hessian compiles ~100 of them)
    hessian = jax.jit(
        jax.hessian(lambda t, X, mask, y: n * objective({"k": t[:D], "v": t[D:]}, X, mask, y, "linear", lam))
    )
    for seed in range(4):
        ks, vs = make_teacher(D, 1000 + seed)
        ch = sample_chunk(task, ks, vs, seed, 0, n)
        with jax.enable_x64(True):
            p0 = {"k": jnp.asarray(ks * r["m_k"]), "v": jnp.asarray(vs * r["m_v"])}
            X = ch.X.astype(np.float64)
            res = minimize(p0, X, ch.mask, ch.y, "linear", lam, SolverOptions(max_iter=3000, tol=1e-10))
            t = jnp.concatenate([res.params["k"], res.params["v"]])
            H = np.asarray(hessian(t, jnp.asarray(X), jnp.asarray(ch.mask), jnp.asarray(ch.y)))
        Hi = np.linalg.inv(H)
        Hi2 = Hi @ Hi
        tr = lambda A, a: np.trace(A[a * D : (a + 1) * D, a * D : (a + 1) * D]) / D
        vals.append([tr(Hi, 0), tr(Hi, 1), tr(Hi2, 0), tr(Hi2, 1)])
    vals = np.array(vals)
    mean, se = vals.mean(0), vals.std(0, ddof=1) / np.sqrt(len(vals))
    # seed mean within 4 × (its s.e. ⊕ 2 %: finite-D bias O(1/D) and the theory's MC error)
    for i, want in enumerate([V[0], V[1], C_th[0], C_th[1]]):
        assert abs(mean[i] - want) < 4 * np.hypot(se[i], 0.02 * want)
    # without the cross-token blocks the prediction of C_vv is off (measured: 6 s.e.)
    assert abs(mean[3] - C_diag[1]) > 4 * se[3]
    assert C_th[0] > 1.2 * V[0] ** 2  # the feedback through T is visible in C_kk
