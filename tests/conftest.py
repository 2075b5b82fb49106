"""Shared fixtures: a private copy of the workflow (Snakefile, rules, configs, profiles and the
package source) in a temp directory, so workflow tests never touch the checkout's results/."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from slrpipe.threads import thread_env

REPO = Path(__file__).resolve().parents[1]
WORKFLOW_PARTS = ["Snakefile", "workflow", "config", "profiles", "src"]

# Single-threaded XLA/BLAS in every test process: CI has 2 cores and parallel jobs.
for _var, _value in thread_env(1).items():
    os.environ.setdefault(_var, _value)

# One persistent JAX compilation cache for the whole test session: set in the pytest process
# that loads this first (xdist's controller), whose environment both workers inherit, and so
# every process the tests start (CLI, benchmarks) and the workflow runs (their results/cache/jax
# links here, :func:`share_jax_cache`): each XLA program is compiled once per session instead of
# once per process and workflow run. A loaded program is the compiled one, so the numbers are the
# same (tests/test_replica.py and tests/test_train.py check cold against warm runs, each with a
# cache of its own). Set before anything imports JAX, which reads these at import; removed when
# the session ends (pytest_unconfigure), unless the caller gave a cache of their own.
_OWN_CACHE = "JAX_COMPILATION_CACHE_DIR" not in os.environ
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(Path(tempfile.gettempdir()) / f"slrpipe-test-jax-{os.getpid()}"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")


def pytest_unconfigure(config):
    if _OWN_CACHE and not hasattr(config, "workerinput"):  # the session's own, after its workers
        shutil.rmtree(os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)


#: test files started first, in this order (pytest-xdist ``--dist loadfile --no-loadscope-reorder``
#: hands files to the workers in collection order; the rest keep theirs): the Slurm run of the smoke
#: workflow and the replica tests (~5 min each) side by side, then the smoke workflow and its
#: cut-down install run, which load the XLA programs the Slurm run compiled (the session's cache,
#: :func:`share_jax_cache`) instead of compiling them at the same time; the long files early (the
#: last five: half a minute to two minutes each on CI's 2-core machine, otherwise late in alphabetical
#: order), so that none is left for the end, when the other worker would have nothing left to do
FIRST = (
    "test_slurm.py",
    "test_replica.py",
    "test_workflow.py",
    "test_install.py",
    "test_benchmarks.py",
    "test_prox.py",
    "test_rsb1.py",
    "test_train.py",
    "test_resources.py",
    "test_batch_means.py",
    "test_stability.py",
    "test_validation.py",
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(FIRST)))  # stable: a file's tests keep their order


def load_file_module(relpath: str):
    """The module at ``relpath`` (from the repository root) of a folder that is not a package, such
    as benchmarks/ or scripts/, imported under its file name."""
    import importlib.util

    path = REPO / relpath
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def share_jax_cache(workdir: Path) -> None:
    """Link ``workdir``/results/cache/jax (the workflow's cache, workflow/rules/common.smk) to the
    session's, unless the run already has one."""
    link, cache = workdir / "results" / "cache" / "jax", Path(os.environ["JAX_COMPILATION_CACHE_DIR"])
    if not link.exists() and not link.is_symlink():
        cache.mkdir(parents=True, exist_ok=True)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(cache, target_is_directory=True)


def copy_workflow(dest: Path, parts=WORKFLOW_PARTS) -> Path:
    """Copy the workflow's ``parts`` (default: with a snapshot of ``src/``, which :func:`snakemake`
    puts first on PYTHONPATH) from the repository into ``dest``; returns ``dest``."""
    for part in parts:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, dest / part)
    return dest


def snakemake(workdir: Path, *args, check=True, timeout=900, share_cache=True):
    """Run the snakemake CLI in ``workdir`` with the copied package first on PYTHONPATH (and, with
    ``share_cache``, the session's JAX compilation cache: :func:`share_jax_cache`)."""
    if share_cache:
        share_jax_cache(workdir)
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


def assert_self_describing(ds, where: str, global_attrs: bool = True) -> None:
    """The CF attributes of a result file, a store node or a data set (``ds``: an
    ``xarray.Dataset``, or a ``zarr.Group``): ``long_name`` on every variable, ``units`` on every
    numeric one, and with ``global_attrs`` ``Conventions`` "CF-…", ``history`` "<date_created>
    slrpipe <step> …", an ISO 8601 UTC ``date_created``, and no ``description`` / ``created_unix``."""
    import re
    from datetime import datetime

    import numpy as np

    if hasattr(ds, "arrays"):  # a zarr group
        variables = {name: (np.dtype(a.dtype), dict(a.attrs)) for name, a in ds.arrays()}
    else:
        variables = {name: (v.dtype, v.attrs) for name, v in ds.variables.items()}
    assert variables, where
    for name, (dtype, attrs) in variables.items():
        assert attrs.get("long_name"), f"{where}: {name} has no long_name"
        assert "description" not in attrs, f"{where}: {name}"
        if dtype.kind in "biuf":
            assert attrs.get("units"), f"{where}: {name} ({dtype}) has no units"
    assert variables.get("wall_time", (None, {"units": "s"}))[1]["units"] == "s", where
    if global_attrs:
        a = dict(ds.attrs)
        assert a["Conventions"].startswith("CF-"), where
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", a["date_created"]), (where, a["date_created"])
        assert datetime.fromisoformat(a["date_created"]).tzinfo is not None, where
        assert a["history"].startswith(f"{a['date_created']} slrpipe "), (where, a["history"][:200])
        assert "created_unix" not in a and "description" not in a, where


def comparison_row(**values):
    """A comparison row (slrpipe.analysis.rows.Row) for renderer tests: ``values`` over defaults
    (NaN numbers, the verdict "agrees", one experiment 'e', softmax, λ = 0.1, α = 2, D = 40, 2 seeds)."""
    import math
    from dataclasses import fields

    from slrpipe.analysis.rows import Row

    kinds = {"str": "", "int": 0, "bool": False, "float": math.nan}
    core = {f.name: kinds[f.type] for f in fields(Row) if "group" not in f.metadata}
    core |= {"experiment": "e", "sigma": "softmax", "lam": 0.1, "alpha": 2.0, "D": 40, "n_seeds": 2}
    core |= {"verdict": "agrees", "n_branches": 1, "erm_quantity": "test_error_pop"}
    return Row(**(core | values))
