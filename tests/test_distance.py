"""The distance between ERM minima reached from different starts on the same data
(slrpipe.analysis.distance): its value on explicit weights, the mirror symmetry of odd σ, and the
pairing of each run with the informed start and with the ground state of the same data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from slrpipe.analysis.distance import to_ground, to_informed, weight_distance


def test_weight_distance_is_the_mean_squared_difference_up_to_the_mirror_of_odd_sigma():
    rng = np.random.default_rng(0)
    D = 50
    k, v, dk, dv = (rng.standard_normal(D) for _ in range(4))
    # (1/D)(|dk|² + |dv|²), exactly
    d = weight_distance("softmax", (k + dk, v + dv), (k, v))
    assert d == pytest.approx((dk @ dk + dv @ dv) / D, rel=1e-12)
    assert weight_distance("softmax", (k, v), (k, v)) == 0.0
    # (−k, −v) is the same predictor for odd σ only: distance 0 there, 4(|k|² + |v|²)/D for softmax
    for sigma in ("linear", "erf"):
        assert weight_distance(sigma, (-k, -v), (k, v)) == 0.0
        assert weight_distance(sigma, (-k - dk, -v - dv), (k, v)) == pytest.approx(d, rel=1e-12)
    far = weight_distance("softmax", (-k, -v), (k, v))
    assert far == pytest.approx(4 * (k @ k + v @ v) / D, rel=1e-12)
    with pytest.raises(ValueError, match="weights"):
        weight_distance("softmax", (k, v), (k[:-1], v[:-1]))


def _index(init, restart=0, seed=0, alpha=2.0, sigma="softmax"):
    return {
        "sigma": [sigma],
        "lam": [0.1],
        "alpha": [alpha],
        "seed": [seed],
        "init": [init],
        "restart": [restart],
        "optimizer": ["lbfgs"],
    }


def test_each_run_is_paired_with_the_informed_start_on_the_same_data():
    D = 4
    w = lambda c: (np.full(D, c), np.zeros(D))  # (k, v) with k = c·1: distance (c_a − c_b)²
    runs = [
        (_index("random", 0, seed=0), w(1.0)),
        (_index("informed", 0, seed=0), w(3.0)),
        (_index("random", 1, seed=0), w(3.5)),
        (_index("random", 0, seed=1), w(0.0)),  # no informed start for seed 1
        (_index("informed", 0, seed=1, alpha=5.0), w(7.0)),  # another α: not its partner
    ]
    d = to_informed(runs)
    assert d[:3] == [4.0, 0.0, 0.25] and math.isnan(d[3]) and d[4] == 0.0


def test_each_run_is_paired_with_the_lowest_objective_run_on_the_same_data():
    """The partner is the run of lowest finite objective over (init, restart, optimizer) at the same
    (σ, λ, α, seed): for seed 0 the random restart 1 (J = 0.5), not the informed start."""
    D = 4
    w = lambda c: (np.full(D, c), np.zeros(D))
    opt = lambda index, name: dict(index, optimizer=[name])
    runs = [
        (_index("informed", 0, seed=0), w(4.0), 1.0),
        (_index("random", 0, seed=0), w(1.0), 0.7),
        (_index("random", 1, seed=0), w(2.0), 0.5),
        (opt(_index("random", 2, seed=0), "gd"), w(2.5), np.nan),  # did not finish: never the partner
        (_index("random", 0, seed=1), w(0.0), np.nan),  # nothing finite for seed 1
        (_index("informed", 0, seed=0, alpha=5.0), w(7.0), 9.0),  # another α: its own ground state
    ]
    d = to_ground(runs)
    assert d[:4] == [4.0, 1.0, 0.0, 0.25] and math.isnan(d[4]) and d[5] == 0.0


def test_second_lowest_is_the_distance_between_the_two_lowest_minima():
    """d₂ per seed: the dist_ground of the run of second-lowest objective over every start and
    optimiser (the lowest is the ground state itself, at distance 0); NaN with fewer than two
    finished runs; unaffected by the order of the runs."""
    import xarray as xr

    from slrpipe.analysis.distance import second_lowest

    loss = np.array([[3.0, 1.0, 2.0, np.nan], [np.nan, 1.0, np.nan, np.nan]])  # (seed, restart)
    dist = np.array([[0.5, 0.0, 0.2, 7.0], [9.0, 0.0, 9.0, 9.0]])
    dims = ("seed", "init", "restart", "optimizer")

    def node(perm):
        return xr.Dataset(
            {
                "train_loss": (dims, loss[:, perm].reshape(2, 1, 4, 1)),
                "dist_ground": (dims, dist[:, perm].reshape(2, 1, 4, 1)),
            },
            coords={"seed": [0, 1], "init": ["random"], "restart": [0, 1, 2, 3], "optimizer": ["lbfgs"]},
        )

    for perm in ([0, 1, 2, 3], [3, 2, 1, 0]):
        d2 = second_lowest(node(perm))
        assert d2.dims == ("seed",)
        np.testing.assert_array_equal(d2.values, [0.2, np.nan])
    one = second_lowest(node([1, 0, 2, 3]).isel(restart=[0]))  # the informed start alone
    assert one.dims == ("seed",) and np.isnan(one.values).all()
