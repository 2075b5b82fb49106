"""Batch-means Monte Carlo error of a fixed point on common random numbers
(slrpipe.theory.replica.batch_means; docs/theory.md §13): the batches, the summary, and the error
against the spread over independent draws."""

import math

import numpy as np
import pytest

from slrpipe.setting import Setting
from slrpipe.theory.replica.batch_means import antithetic_batches, batch_values, subset, summary
from slrpipe.theory.replica.fields import draw_fields
from slrpipe.theory.replica.options import ReplicaTask
from slrpipe.theory.replica.rsb1 import draw_inner
from slrpipe.theory.replica.solver import solve_replica

# near the RS fixed point (hard channel) of softmax, spiked ν = 1, L = 2, Δ = 0, λ = 0.1, α = 5
RS_START = {"m_k": 0.83, "q_k": 1.80, "V_k": 2.77, "m_v": 1.057, "q_v": 1.190, "V_v": 0.4405}


def test_batches_partition_the_samples_into_antithetic_pairs():
    parts = antithetic_batches(16, 4)
    assert sorted(np.concatenate(parts).tolist()) == list(range(16))
    for idx in parts:
        assert len(idx) == 4 and set((idx + 8) % 16) == set(idx.tolist())  # closed under i ↔ i + N/2
    for n, k, match in ((16, 3, "multiple of K = 3"), (10, 1, "at least 2"), (15, 2, "N₀/2")):
        with pytest.raises(ValueError, match=match):
            antithetic_batches(n, k)


def test_subset_cuts_every_per_sample_array_and_keeps_a_shared_inner_set():
    fields = draw_fields(Setting("spiked", 1.0, 2, 0.0), 16, 0, qmc=True)
    idx = antithetic_batches(16, 2)[1]
    cut = subset(fields, idx)
    assert cut.n == 8 and cut.model == fields.model and cut.seed == fields.seed
    np.testing.assert_array_equal(cut.chi_star, fields.chi_star[idx])
    np.testing.assert_array_equal(cut.eps, fields.eps[idx])
    np.testing.assert_array_equal(cut.xi_k[:4], -cut.xi_k[4:])  # the student noise stays antithetic
    inner = draw_inner(2, 8, seed=1, n_outer=16)
    np.testing.assert_array_equal(subset(inner, idx).xi_v, inner.xi_v[idx])
    shared = draw_inner(2, 8, seed=1)
    assert subset(shared, idx) is shared


def test_summary_is_sd_over_root_k_and_the_jackknife_bias():
    out = summary(np.array([1.0, 2.0, 3.0, 6.0]), full=2.5)
    assert out["mean"] == 3.0
    assert out["se"] == pytest.approx(np.std([1, 2, 3, 6], ddof=1) / 2)
    assert out["bias"] == pytest.approx((3.0 - 2.5) / 3)
    assert all(math.isnan(v) for v in summary(np.array([1.0, np.nan]), 1.0).values())


def test_batch_means_error_is_not_smaller_than_the_spread_over_draws():
    """At a softmax point with competing prox minima (spiked ν = 1, L = 2, λ = 0.1, α = 5), the RS
    fixed point on N = 2048 scrambled-Sobol' samples, for 12 independent seeds: the batch-means s.e.
    (K = 4 antithetic blocks of one draw) of the test error and of the objective, pooled over the
    seeds (36 degrees of freedom), against the spread of the full-sample values over the seeds (11).
    Were the two the same error, their variance ratio would exceed 2.9 (F(11, 36)) with probability
    0.5 %, so the batch-means s.e. understates the error only if it is below 1/1.7 of the spread.
    (Measured: 1.4 and 1.7 times the spread: blocks of one net are a conservative estimate.)"""
    task, lam, alpha, n, k = ReplicaTask("softmax", Setting("spiked", 1.0, 2, 0.0)), 0.1, 5.0, 2048, 4
    full, se = [], []
    for seed in range(12):
        fields = draw_fields(Setting("spiked", 1.0, 2, 0.0), n, seed, qmc=True)
        r = solve_replica(task, lam, alpha, fields=fields, softmin=None, tol=1e-6, init=RS_START)
        assert r["converged"], (seed, r["residual"])
        start = {key: r[key] for key in RS_START}

        def solve(idx, fields=fields, start=start):
            return solve_replica(task, lam, alpha, fields=subset(fields, idx), softmin=None, tol=1e-6, init=start)

        b = batch_values(solve, n, k, ("test_error", "objective"))
        full.append([r["test_error"], r["objective"]])
        se.append([summary(b[key], r[key])["se"] for key in ("test_error", "objective")])
    spread = np.std(full, axis=0, ddof=1)
    pooled = np.sqrt(np.mean(np.square(se), axis=0))
    assert np.all(pooled > spread / 1.7), (pooled, spread)
