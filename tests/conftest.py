"""Shared fixtures: a private copy of the workflow (Snakefile, rules, configs, profiles and the
package source) in a temp directory, so workflow tests never touch the checkout's results/."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from slrpipe.threads import thread_env

REPO = Path(__file__).resolve().parents[1]
WORKFLOW_PARTS = ["Snakefile", "workflow", "config", "profiles", "src"]

# Single-threaded XLA/BLAS in every test process: CI has 2 cores and parallel jobs.
for _var, _value in thread_env(1).items():
    os.environ.setdefault(_var, _value)


def copy_workflow(dest: Path) -> Path:
    for part in WORKFLOW_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, dest / part)
    return dest


def snakemake(workdir: Path, *args, check=True, timeout=900):
    """Run the snakemake CLI in ``workdir`` with the copied package first on PYTHONPATH."""
    bindir = Path(sys.executable).parent  # the venv's bin: snakemake and the slrpipe console script
    env = dict(
        os.environ,
        PYTHONPATH=str(workdir / "src"),
        PYTHONUNBUFFERED="1",
        PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    exe = bindir / "snakemake"
    proc = subprocess.run([str(exe), *args], cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-5000:]}\n{proc.stderr[-5000:]}"
        )
    return proc


@pytest.fixture
def workflow_dir(tmp_path):
    return copy_workflow(tmp_path)


@pytest.fixture
def fig3_legend(monkeypatch):
    """The legend texts of every figure saved through ``slrpipe.figures.fig3`` (a list, appended)."""
    from slrpipe.figures import fig3

    labels, real_save = [], fig3.save

    def save(fig, out):
        labels.extend(t.get_text() for leg in fig.legends for t in leg.get_texts())
        return real_save(fig, out)

    monkeypatch.setattr(fig3, "save", save)
    return labels


def cold_and_warm_runs(tmp_path: Path, command: list[str]):
    """Run ``python -m slrpipe <command> --out …`` twice with the workflow's persistent compilation
    cache in ``tmp_path`` (workflow/rules/common.smk): the first run compiles and fills it, the
    second must load every program from it (no new entry). Returns the two written datasets."""
    import xarray as xr

    cache = tmp_path / "jax_cache"
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=str(cache), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    runs, entries = [], []
    for name in ("cold", "warm"):
        out = tmp_path / f"{name}.nc"
        subprocess.run(
            [sys.executable, "-m", "slrpipe", *command, "--out", str(out)], env=env, check=True, capture_output=True
        )
        runs.append(xr.load_dataset(out))
        entries.append(sorted(os.listdir(cache)))
    assert entries[0] and entries[1] == entries[0]  # the warm run compiled nothing new
    return runs


def assert_identical_but_wall_time(a, b) -> None:
    import numpy as np

    for name in a.variables:
        if name != "wall_time":
            np.testing.assert_array_equal(b[name].values, a[name].values, err_msg=name)
