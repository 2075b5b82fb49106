"""Tests of the per-sample prox at any sequence length (slrpipe.theory.replica.prox, .linalg);
docs/theory.md §5, §9.

The reference numbers of the L = 3 reproduction tests were recorded from the prox and solver as
they were before the looped factorisation (commit 83b08fd: Python-unrolled Cholesky, every
candidate start kept), on the inputs built here, with a script that printed ``repr`` of the sums
below. Each test takes < 30 s on one shared core (most of it compilation).
"""

from __future__ import annotations

import numpy as np
import pytest

from slrpipe.setting import Setting
from slrpipe.theory.replica import Draw, ReplicaTask, linalg, solve_replica
from slrpipe.theory.replica import newton as NW
from slrpipe.theory.replica import prox as P


def _inputs(L=3, N=64, seed=7):
    rng = np.random.default_rng(seed)
    wk, wv, y = 1.5 * rng.standard_normal((N, L)), rng.standard_normal((N, L)), 1.5 * rng.standard_normal(N)
    warm = wk[:, None] + rng.standard_normal((N, 2, L))
    return wk, wv, y, warm


#: sums over the 64 samples of _inputs() of the prox outputs, V_k = 3, V_v = 2, soft-min β = 100,
#: two warm starts per sample; recorded at commit 83b08fd (module docstring)
REFERENCE_PROX = {
    "softmax": {
        "psi": 32.22398668707835,
        "chi": -47.0300711485117,
        "z": -13.329266847933312,
        "hinv_diag": 893.5155469569048,
        "dz_dy": 46.732286566801704,
        "fv": -1.6936290863188797,
        "fk2": 3.8766430918671415,
        "fv2": 14.994784700286576,
        "loss": 11.414924965542816,
        "n_min": 69,
    },
    "linear": {
        "psi": 11.762339080595325,
        "chi": -54.42796723162782,
        "z": -10.38499800968085,
        "hinv_diag": 894.700046291516,
        "dz_dy": 11.868374512481573,
        "fk": -2.4659653610387067,
        "fv": -0.22225379117677402,
        "fk2": 3.8502353032920924,
        "fv2": 5.485414228407448,
        "loss": 0.5015718972497396,
        "n_min": 64,
    },
}

#: solve_replica(ReplicaTask(σ, "spiked", ν = 2, L = 3, Δ = 0), λ = 0.1, α = 2, fields=Draw(n_samples = 512, seed = 0)),
#: default options; recorded at commit 83b08fd (converged in 28 / 23 channel evaluations)
REFERENCE_SOLVE = {
    "softmax": {
        "m_k": 0.5626358297516223,
        "q_k": 1.0038285150386996,
        "V_k": 6.069130830017854,
        "m_v": 0.9724335495252815,
        "q_v": 1.3861949759489192,
        "V_v": 3.0947520936969832,
        "test_error": 0.7674119627314003,
        "train_loss": 0.021045770546911244,
    },
    "linear": {
        "m_k": 0.1210357653775891,
        "q_k": 0.5504877416330659,
        "V_k": 8.235471845451789,
        "m_v": 0.29611361447974904,
        "q_v": 0.4337797549657458,
        "V_v": 3.5617817902068043,
        "test_error": 2.4853215402130973,
        "train_loss": 0.001527475830274709,
    },
}


@pytest.mark.parametrize("sigma", ["softmax", "linear"])
def test_prox_reproduces_the_unrolled_factorisation_at_L3(sigma):
    # same samples, same starts (every candidate is kept at L = 3): the global minima, the
    # implicit Jacobian and the soft-min statistics agree to ≤ 1e-6 relative (seen: 1e-12)
    wk, wv, y, warm = _inputs()
    p = P.prox(sigma, wk, wv, y, 3.0, 2.0, warm=warm, softmin=100.0)
    for k, ref in REFERENCE_PROX[sigma].items():
        assert float(np.sum(p[k])) == pytest.approx(ref, rel=1e-6), k


@pytest.mark.parametrize("sigma", ["softmax", "linear"])
def test_fixed_point_reproduces_the_unrolled_factorisation_at_L3(sigma):
    r = solve_replica(ReplicaTask(sigma, Setting("spiked", 2.0, 3, 0.0)), 0.1, 2.0, fields=Draw(n_samples=512, seed=0))
    assert r["converged"]
    for k, ref in REFERENCE_SOLVE[sigma].items():
        assert r[k] == pytest.approx(ref, rel=1e-6), k


# n ≤ 6 runs the straight-line factorisation, n ≥ 7 the library one (linalg.UNROLL_MAX)
@pytest.mark.parametrize("n", [1, 3, 6, 7, 17])
def test_cholesky_solves_and_inverts(n):
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(n)
    B = rng.standard_normal((n, n))
    A = B @ B.T + 0.1 * np.eye(n)
    b = rng.standard_normal(n)
    with jax.enable_x64(True):
        Lm, ok = linalg.cholesky(jnp.asarray(A), 0.0)
        x, _ = linalg.chol_solve(jnp.asarray(A), jnp.asarray(b), 0.0)
        X, _ = linalg.chol_solve(jnp.asarray(A), jnp.eye(n), 0.0)
        d = linalg.inverse_diagonal(Lm)
        # not positive definite: flagged (a negative eigenvalue)
        Lbad, bad = linalg.cholesky(jnp.asarray(A - 2 * np.linalg.eigvalsh(A)[-1] * np.eye(n)), 0.0)
    assert bool(ok) and not bool(bad)
    if n > linalg.UNROLL_MAX:  # the library's NaN factor replaced by a finite stand-in
        assert np.all(np.isfinite(np.asarray(Lbad)))
    np.testing.assert_allclose(np.asarray(Lm), np.linalg.cholesky(A), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(A, b), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(np.asarray(X), np.linalg.inv(A), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(np.asarray(d), np.diag(np.linalg.inv(A)), rtol=1e-9)


@pytest.mark.parametrize("sigma", ["softmax", "linear"])
def test_closed_form_hessian_matches_autodiff(sigma):
    # the outer-product ∇²ψ of the Newton steps (L > 6) against jax.hessian of ψ itself, at random
    # points far from the centre (|χ| ~ 3: saturated softmax) and small and large V: float64
    # rounding only (seen: ≤ 3e-14 relative to the largest entry)
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(5)
    hessian = jax.jit(jax.hessian(NW.psi), static_argnums=6)  # one program per L (op by op: ~250)
    with jax.enable_x64(True):
        for L in (7, 16, 64):
            for _ in range(5):
                chi, wk, wv = (jnp.asarray(3 * rng.standard_normal(L)) for _ in range(3))
                y, Vk, Vv = 2 * rng.standard_normal(), rng.uniform(0.1, 5), rng.uniform(0.01, 5)
                ref = hessian(chi, wk, wv, y, Vk, Vv, sigma)
                H = NW._psi_hessian(chi, wk, wv, y, Vk, Vv, sigma)
                assert float(jnp.max(jnp.abs(H - ref))) <= 1e-12 * float(jnp.max(jnp.abs(ref)))


def test_prox_program_does_not_grow_with_L():
    # the jitted starts, Newton lanes and finish of the prox, lowered at L = 8 and L = 48: the program
    # text must have (almost) the same size (it grew like L³–L⁴ with the unrolled factorisation)
    import jax
    import jax.numpy as jnp

    sizes = {}
    for L in (8, 48):  # both above the start budget (2L > MAX_DIRECTIONS)
        n, S = 8, 1 + P.MAX_DIRECTIONS + 3
        rng = np.random.default_rng(0)
        with jax.enable_x64(True):
            wk, wv, y = (jnp.asarray(rng.standard_normal(sh)) for sh in ((n, L), (n, L), (n,)))
            chi = jnp.asarray(rng.standard_normal((n * S, L)))
            lanes = (chi, jnp.repeat(wk, S, 0), jnp.repeat(wv, S, 0), jnp.repeat(y, S, 0))
            texts = [
                NW.batch_starts.lower(NW.Obs(wk, wv, y), None, (3.0, 2.0), "softmax", True).as_text(),
                NW.batch_newton.lower(*lanes, 3.0, 2.0, "softmax", 8).as_text(),
                NW.batch_finish.lower(
                    NW.Ends(chi.reshape(n, S, L), jnp.zeros((n, S)), jnp.zeros((n, S))),
                    NW.Obs(wk, wv, y),
                    (3.0, 2.0),
                    100.0,
                    "softmax",
                ).as_text(),
            ]
        sizes[L] = [len(t) for t in texts]
    for a, b in zip(sizes[8], sizes[48]):
        assert b < 1.3 * a, sizes


def test_start_budget_keeps_the_lowest_psi_candidates():
    import jax
    import jax.numpy as jnp

    L, n = 12, 16  # softmax: 2L = 24 candidate directions > MAX_DIRECTIONS
    wk, wv, y, _ = _inputs(L=L, N=n, seed=3)
    with jax.enable_x64(True):
        st = np.asarray(
            NW.batch_starts(NW.Obs(jnp.asarray(wk), jnp.asarray(wv), jnp.asarray(y)), None, (3.0, 2.0), "softmax", True)
        )
        full = np.asarray(
            NW.batch_starts(
                NW.Obs(jnp.asarray(wk), jnp.asarray(wv), jnp.asarray(y)), None, (3.0, 2.0), "softmax", True, 2 * L
            )
        )
        psi = jax.vmap(jax.vmap(lambda c, a, b, e: NW.psi(c, a, b, e, 3.0, 2.0, "softmax"), (0, None, None, None)))
        v_st = np.asarray(psi(jnp.asarray(st[:, 1:]), jnp.asarray(wk), jnp.asarray(wv), jnp.asarray(y)))
        v_full = np.asarray(psi(jnp.asarray(full[:, 1:]), jnp.asarray(wk), jnp.asarray(wv), jnp.asarray(y)))
    assert st.shape == (n, 1 + P.MAX_DIRECTIONS, L) and full.shape == (n, 1 + 2 * L, L)
    np.testing.assert_array_equal(st[:, 0], wk)  # the centre first
    np.testing.assert_allclose(np.sort(v_st, 1), np.sort(v_full, 1)[:, : P.MAX_DIRECTIONS], rtol=1e-12)


def test_bad_directions_raise():
    wk, wv, y, _ = _inputs(N=4)
    with pytest.raises(ValueError, match="directions"):
        P.prox("softmax", wk, wv, y, 1.0, 1.0, directions=0)


@pytest.mark.parametrize("sigma", ["softmax", "linear"])
def test_padded_end_points_are_inert(sigma):
    # a full pass without warm starts has fewer end points than one with them; both are padded to one
    # width (one compiled finish program). The padding must change nothing: the winner, runners-up,
    # Jacobian and counts exactly, the soft-min weighted sums up to their reduction order.
    import jax
    import jax.numpy as jnp

    wk, wv, y, _ = _inputs()
    with jax.enable_x64(True):
        obs = NW.Obs(*(jnp.asarray(a) for a in (wk, wv, y)))
        st = np.asarray(NW.batch_starts(obs, None, (3.0, 2.0), sigma, True))
        n, S, L = st.shape
        rep = lambda a: np.repeat(a, S, axis=0)
        chis, vals, gns = NW.run_lanes(st.reshape(n * S, L), rep(wk), rep(wv), rep(y), 3.0, 2.0, sigma, 25)
        ends = (chis.reshape(n, S, L), vals.reshape(n, S), gns.reshape(n, S))
        width = P._finish_width(sigma, L, P.ProxOptions())
        assert width == S + P._WARM_MAX
        padded = P._pad_ends(*ends, width)
        assert padded[0].shape == (n, width, L)
        out = [
            {
                k: np.asarray(v)
                for k, v in NW.batch_finish(NW.Ends(*map(jnp.asarray, e)), obs, (3.0, 2.0), 100.0, sigma).items()
            }
            for e in (ends, padded)
        ]
    for k in out[0]:
        if k in ("fk", "fv", "fk2", "fv2", "loss"):
            np.testing.assert_allclose(out[1][k], out[0][k], rtol=1e-14, atol=1e-15, err_msg=k)
        else:
            np.testing.assert_array_equal(out[1][k], out[0][k], err_msg=k)
