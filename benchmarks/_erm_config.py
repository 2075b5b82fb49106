"""Mode ``config`` of benchmarks/bench_erm.py: a config's ERM with ``lanes`` off and on.

Every training batch of the config's plan run as the workflow runs it (``slrpipe train-batch``, one
fresh process per batch, one XLA/BLAS thread, a JAX compilation cache of its own, cold at the
start), once with every ERM experiment's ``lanes: false`` and once with ``lanes: true``, back to
back. Printed: the CPU seconds of the batch processes (user + sys) and their wall time per
variant, and the runs compared file by file (every training set drawn in its batch,
``store_data: false``: the same samples as a stored set): J's relative difference, the test
error's difference in units of its standard error, and the runs whose stop reason or minimum (J
beyond 10⁻⁴ relative) differ. ``--quick`` (CI): the first batch of config/smoke.yaml (its 8 runs:
softmax and linear, L-BFGS and gradient descent; the other batch differs in n only).
"""

from __future__ import annotations

import argparse
import copy
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_variant(cfg: dict, lanes: bool, root: Path, max_batches: int | None = None) -> tuple[float, float, dict]:
    """(CPU s, wall s, {result path: its numbers}) of every batch of ``cfg`` (the first
    ``max_batches`` where given) with ``lanes``."""
    import xarray as xr

    from slrpipe.config import validate
    from slrpipe.job_args import argv as job_argv
    from slrpipe.threads import thread_env
    from slrpipe.workflow import plan

    cfg = copy.deepcopy(cfg)
    for exp in cfg["erm"].values():  # training sets regenerated in the batch: no generate jobs here
        exp["lanes"], exp["store_data"] = lanes, False
    p = plan(validate(cfg))
    env = dict(
        os.environ,
        **thread_env(1),
        PYTHONUNBUFFERED="1",
        JAX_COMPILATION_CACHE_DIR=str(root / "cache"),
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
    )
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    batches = list(p.train_batches.values())[:max_batches]
    for batch in batches:
        cmd = [sys.executable, "-m", "slrpipe", "train-batch", *job_argv(batch), "--no-theory"]
        subprocess.run(cmd, env=env, cwd=root, check=True, capture_output=True)
    wall, after = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    out = {}
    for path in (m.out for batch in batches for m in batch.members):
        with xr.open_dataset(root / path) as d:
            out[path] = {
                k: float(d[k]) for k in ("train_loss", "test_error", "test_error_se", "iterations", "gnorm")
            } | {"reason": d.attrs["stop_reason"]}
    return cpu, wall, out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench_erm.py config", description=__doc__.splitlines()[0])
    p.add_argument("--config", default="config/config.yaml")
    p.add_argument("--quick", action="store_true", help="the first batch of config/smoke.yaml (CI)")
    p.add_argument("--max-batches", type=int, default=None, help="run only the first N training batches")
    a = p.parse_args(argv)
    if a.quick:
        a.config, a.max_batches = "config/smoke.yaml", 1
    import yaml

    cfg = yaml.safe_load(Path(a.config).read_text())
    res = {}
    for lanes in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            res[lanes] = run_variant(cfg, lanes, Path(tmp), a.max_batches)
    (c0, w0, r0), (c1, w1, r1) = res[False], res[True]
    print(f"config {a.config}: {len(r0)} ERM runs, every batch a fresh process on one thread, JAX cache cold")
    print(
        f"lanes: false: {c0:.1f} s CPU, {w0:.1f} s wall; lanes: true: {c1:.1f} s CPU, {w1:.1f} s wall ({c1 / c0:.2f}×)"
    )
    dj = [abs(r1[k]["train_loss"] - r0[k]["train_loss"]) / abs(r0[k]["train_loss"]) for k in r0]
    dt = [abs(r1[k]["test_error"] - r0[k]["test_error"]) / r0[k]["test_error_se"] for k in r0]
    reasons = sum(r1[k]["reason"] != r0[k]["reason"] for k in r0)
    other = [k for k, d in zip(r0, dj) if d > 1e-4]
    print(
        f"runs compared: J relative difference median {sorted(dj)[len(dj) // 2]:.1e}, max {max(dj):.1e}; "
        f"test error difference max {max(dt):.2f} s.e.; {reasons} stop reasons differ; "
        f"{len(other)} runs at another J (beyond 1e-4 relative)"
    )
    for k in other:
        print(f"  {k}: J {r0[k]['train_loss']:.6f} → {r1[k]['train_loss']:.6f} ({r0[k]['reason']} → {r1[k]['reason']})")
    return 0
