"""Mode ``batch`` of benchmarks/bench_erm.py: peak memory and time of one training batch.

One ``slrpipe train-batch`` job as the workflow submits it, against the resource law the Slurm
profile requests from (slrpipe.resource_laws.batch_resources; on a GPU node batch_gpu_resources).

The batch is taken from a config's plan (default: the paper config's α = 0.5 batch of spiked-SLR
ν = 1, D = 14 142, n = 7071, every model it holds: softmax and linear), optionally with fewer
iterations (``--max-iter``), one σ's models only (``--sigma``), fewer members (``--members``) or
another test-set size (``--n-test``) or sampler (``--sampler numpy|jax``). It runs as
one child process (a fresh interpreter, as a job is); printed: wall time, peak RSS (the child's
ru_maxrss), the time spent drawing training sets, training and on the test sets (from the job's
``timing:`` log lines), the off-solve fraction, and the law's mem_mb/runtime request beside the
measurement. ``--quick`` (CI): the smoke config's α = 8 batch, softmax models (spiked L = 2, D = 40, n = 320,
4 models) with max_iter 50 and 500 test sequences: seconds, nearly all start-up and compilation.

Usage: python benchmarks/bench_erm.py batch [--config config/paper.yaml --alpha 0.5 --sigma softmax
       --setting spiked_L3_nu1 --max-iter 200 --members 7 --platform cpu|gpu] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def pick_batch(a):
    from slrpipe.config import validate
    from slrpipe.resource_laws import batch_gpu_resources, batch_resources
    from slrpipe.workflow import plan, sizes

    cfg = validate(yaml.safe_load((REPO / a.config).read_text()))
    exp = cfg["erm"][a.setting]
    ((D, n),) = sizes(exp, a.alpha)[-1:]
    p = plan(cfg, results=a.out)
    name = next(
        k
        for k, b in p.train_batches.items()
        if b.members[0].D == D
        and b.members[0].n == n
        and b.members[0].model == exp["model"]
        and b.members[0].nu == float(exp["nu"])
    )
    batch = p.train_batches[name]
    members = [m for m in batch.members if a.sigma is None or m.sigma == a.sigma]
    members = members[: a.members] if a.members else members
    over = {k: v for k, v in (("max_iter", a.max_iter), ("n_test", a.n_test), ("sampler", a.sampler)) if v is not None}
    members = [dataclasses.replace(m, data=None, **over) for m in members]  # drawn in the job
    batch = dataclasses.replace(batch, members=tuple(members))
    gpu = batch_gpu_resources(batch)
    return name, batch, {**batch_resources(batch), "gpu_node_mem_mb": gpu["mem_mb"], "gpu_mem_mb": gpu["gpu_mem_mb"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="bench_erm.py batch", description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="config/paper.yaml")
    ap.add_argument("--setting", default="spiked_L3_nu1")
    ap.add_argument("--alpha", type=float, default=0.5)
    ap.add_argument("--sigma", default=None, help="only the batch's models of this σ (default: all of them)")
    ap.add_argument("--max-iter", type=int, default=None)
    ap.add_argument("--n-test", type=int, default=None)
    ap.add_argument("--members", type=int, default=None, help="only the first N models of the batch")
    ap.add_argument("--sampler", default=None, help="numpy or jax (default: the config's)")
    ap.add_argument("--threads", type=int, default=1, help="XLA/BLAS threads (the profile's set-threads)")
    ap.add_argument("--platform", default=None, help="JAX_PLATFORMS for the child (cpu, cuda); default: JAX's choice")
    ap.add_argument("--quick", action="store_true", help="a tiny batch (config/smoke.yaml, α = 8): for CI")
    ap.add_argument("--out", default=None, help="results directory (default: a temporary one)")
    ap.add_argument(
        "--write-batch",
        default=None,
        help="only write the chosen batch (and its law) to this JSON file, to run it elsewhere",
    )
    ap.add_argument("--batch", default=None, help="run the batch of a --write-batch file (no planning here)")
    a = ap.parse_args(argv)
    if a.quick:
        a.config, a.setting, a.alpha, a.max_iter, a.n_test = "config/smoke.yaml", "spiked_L2", 8.0, 50, 500
    with tempfile.TemporaryDirectory() as tmp:
        a.out = a.out or tmp
        from slrpipe.commands.train_batch import members
        from slrpipe.job_args import argv as job_argv
        from slrpipe.jobs import TrainBatchJob
        from slrpipe.threads import thread_env

        if a.batch:  # on a machine without the workflow's dependencies (e.g. a GPU node)
            saved = json.loads(Path(a.batch).read_text())
            name, law = saved["name"], saved["law"]
            batch = TrainBatchJob(members=members(saved["members"]))
        else:
            name, batch, law = pick_batch(a)
        if a.write_batch:
            Path(a.write_batch).write_text(json.dumps({"name": name, "law": law, "members": job_argv(batch)[1]}))
            return 0

        m = batch.members[0]
        env = dict(
            os.environ,
            PYTHONUNBUFFERED="1",
            XLA_PYTHON_CLIENT_PREALLOCATE="false",
            **thread_env(a.threads, multi_thread_eigen=a.threads > 1),
        )
        if a.platform:
            env["JAX_PLATFORMS"] = a.platform
        cmd = [sys.executable, "-m", "slrpipe", "train-batch", *job_argv(batch), "--no-theory"]
        print(
            f"batch {name}: {len(batch.members)} models, D = {m.D}, n = {m.n}, L = {max(m.L)}, "
            f"max_iter = {m.max_iter}, n_test = {m.n_test}, dtype {m.dtype}, threads {a.threads}"
        )
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=a.out)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            print(proc.stderr[-3000:])
            return proc.returncode
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        times = [
            tuple(map(float, t))
            for t in re.findall(
                r"timing: \d+ runs, training set ([\d.]+) s, training ([\d.]+) s, test sets ([\d.]+) s", proc.stderr
            )
        ]
        sample, train, test = (sum(t[i] for t in times) for i in range(3))
        iters = [int(x) for x in re.findall(r"ERM done: (\d+) iterations", proc.stderr)]
        device = re.findall(r"device (\w+)", proc.stderr)[:1]
        x_gb = m.n * max(m.L) * m.D * 4 / 2**30
        print(f"device {device[0] if device else '?'}; training set X = {x_gb:.2f} GB (float32)")
        print(
            f"wall {wall:.1f} s: training sets {sample:.1f} s, training {train:.1f} s ({sum(iters)} iterations, "
            f"{train / max(sum(iters), 1) * 1e3:.2f} ms per iteration), test sets {test:.1f} s, "
            f"start-up and writing {wall - sample - train - test:.1f} s"
        )
        print(f"off the solve (sampling + test evaluation): {(sample + test) / wall:.1%} of the wall time")
        print(
            f"peak RSS {peak_mb:.0f} MB; law requests mem_mb = {law['mem_mb']} ({law['mem_mb'] / peak_mb:.2f}x the "
            f"peak), runtime = {law['runtime']} min ({law['runtime'] * 60 / wall:.1f}x the wall)"
        )
        if "gpu_mem_mb" in law:  # a --batch file written before the GPU law lacks it
            print(
                f"on a GPU node the law requests mem_mb = {law['gpu_node_mem_mb']} of the host and gpu_mem_mb = "
                f"{law['gpu_mem_mb']} of the card ({law['gpu_node_mem_mb'] / peak_mb:.2f}x the host peak here)"
            )
    return 0
