"""ERM-vs-replica check: z-scores from the seed spread, enforced only where the theory should hold."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from slrpipe.store.validation import ValidationFailed, compare, validate_store
from slrpipe.io import write_zarr

ALPHAS = [1.0, 4.0]


def store(tmp_path, erm_shift, converged=True):
    """A store with replica test error 0.5 at every α and ERM runs 0.5 + shift ± 0.01 over 4 seeds."""
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.01, size=(1, 1, 2, 4))
    noise -= noise.mean(-1, keepdims=True)  # the seed mean is exactly 0.5 + shift
    erm = xr.Dataset({"test_error": (("sigma", "lam", "alpha", "seed"), 0.5 + erm_shift + noise),
                      "D": (("sigma", "lam", "alpha", "seed"), np.full((1, 1, 2, 4), 100))},
                     coords={"sigma": ["softmax"], "lam": [0.1], "alpha": ALPHAS, "seed": [0, 1, 2, 3]})
    rep = xr.Dataset({"test_error": (("sigma", "lam", "alpha"), np.full((1, 1, 2), 0.5)),
                      "converged": (("sigma", "lam", "alpha"), np.full((1, 1, 2), converged))},
                     coords={"sigma": ["softmax"], "lam": [0.1], "alpha": ALPHAS})
    tree = xr.DataTree.from_dict({"/erm/e": erm, "/replica/r": rep})
    return write_zarr(tree, tmp_path / "slr.zarr")


CONFIG = {"replica": {"r": {"erm": "e"}}, "validation": {"max_abs_z": 4.0, "rel_tol": 0.05, "fail": True}}


def test_agreement_passes_and_writes_table(tmp_path):
    rows = validate_store(store(tmp_path, 0.0), CONFIG, tmp_path / "v.txt")
    assert [r["agrees"] for r in rows] == [True, True] and all(r["enforced"] for r in rows)
    assert rows[0]["z"] == pytest.approx(0.0, abs=1e-9)
    assert "softmax" in (tmp_path / "v.txt").read_text()


def test_disagreement_fails_with_the_points(tmp_path):
    # shift 0.1: z ≈ 0.1 / (0.01/√4) = 20 and relative difference 20 % — both beyond tolerance
    with pytest.raises(ValidationFailed, match=r"2 of 2 enforced ERM points disagree.*α=1 "):
        validate_store(store(tmp_path, 0.1), CONFIG, tmp_path / "v.txt")
    assert not (tmp_path / "v.txt").exists() and (tmp_path / "v.failed.txt").exists()


def test_small_bias_within_relative_tolerance_passes(tmp_path):
    # shift 0.02: z ≈ 4 but only 4 % off — the finite-D allowance accepts it
    rows = validate_store(store(tmp_path, 0.02), CONFIG, tmp_path / "v.txt")
    assert all(r["agrees"] for r in rows)


def test_non_converged_theory_is_not_enforced(tmp_path):
    from slrpipe.store.aggregate import open_store

    rows = compare(open_store(store(tmp_path, 0.1, converged=False)), CONFIG)
    assert not any(r["enforced"] for r in rows) and not any(r["agrees"] for r in rows)
