"""scripts/erm_polish_check.py: the float64 continuation of a stored ERM run starts from the run's
own training and test sets, and ends at a minimum (docs/theory.md §13, "ERM's end points")."""

from __future__ import annotations

from pathlib import Path

import jax
import pytest
import xarray as xr

from slrpipe.cli import main


def _script():
    from conftest import load_file_module

    return load_file_module("scripts/erm_polish_check.py")


def _train(out: Path, max_iter: int) -> xr.Dataset:
    args = ["train", "--model", "spiked", "--nu", "1", "--L", "3", "--D", "32", "--alpha", "4"]
    args += ["--teacher-seed", "2", "--data-seed", "10002", "--test-seed", "20002", "--sigma", "softmax"]
    args += ["--lam", "0.1", "--init", "random", "--init-seed", "7", "--n-test", "500"]
    assert main([*args, "--max-iter", str(max_iter), "--no-theory", "--out", str(out)]) == 0
    return xr.open_dataset(out)


def test_continuation_starts_on_the_runs_data_and_ends_at_a_minimum(tmp_path):
    polish = _script().polish_run
    stopped = _train(tmp_path / "stopped.nc", 15)  # 15 L-BFGS steps: far from a minimum
    assert not bool(stopped.converged)
    with jax.enable_x64(True):
        r = polish(str(tmp_path / "stopped.nc"), 1e-9, 5000)
    # the regenerated test set is the job's: the stored weights' error matches the file's up to
    # the float32 predictions the job made (relative 1e-5 ≫ float32 rounding of a mean of 500)
    assert r["test0"] == pytest.approx(r["test_stored"], rel=1e-5)
    # and so is the training set: α·J at the stored weights is the file's (its float32 J, rel 1e-5),
    # and the continuation lowers it and stops by its gradient test
    assert r["obj0"] == pytest.approx(r["obj_stored"], rel=1e-5)
    assert r["obj"] < r["obj0"] and r["reason"] == "tol"
