"""Benchmark: how many Slurm jobs a config submits (array tasks counted: each compute job is one
sbatch job or one array task), per rule, for config/paper.yaml, config/validation.yaml and
config/rehearsal.yaml; with ``--run``, the rehearsal itself through ``snakemake --profile`` on the
local one-node Slurm of tests/slurm/cluster.py, with its wall time and the jobs each rule ran.

The counts come from Snakemake's own dry run with the Slurm profile (the jobs it would submit;
local rules — plan, aggregate, figures, validate — run on the login node and are not counted).

``--quick`` (CI): the count of config/rehearsal.yaml alone (one dry run; no ``--run``).

Usage: python benchmarks/bench_rehearsal.py [--run] [--configs config/paper.yaml ...] [--quick]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIGS = ["config/paper.yaml", "config/validation.yaml", "config/rehearsal.yaml"]
LOCAL = {"plan", "aggregate", "validate", "all"}


def _workdir(tmp: Path) -> Path:
    for part in ("Snakefile", "workflow", "config", "profiles"):
        src = REPO / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, tmp / part)
    return tmp


def slurm_jobs(stdout: str) -> dict[str, int]:
    """{rule family: compute jobs} from a dry run's job table (train_erm__<batch> counted as train_erm)."""
    jobs: dict[str, int] = {}
    table = stdout.split("Job stats:", 1)[1].split("\n\n", 1)[0]  # the first table only
    for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M):
        rule = m.group(1).split("__")[0]
        if rule != "total" and rule not in LOCAL and not rule.startswith("fig_"):
            jobs[rule] = jobs.get(rule, 0) + int(m.group(2))
    return jobs


def snakemake(wd: Path, *args, env=None) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "snakemake"
    env = dict(os.environ if env is None else env, PYTHONPATH=str(REPO / "src"))
    return subprocess.run([str(exe), *args], cwd=wd, env=env, capture_output=True, text=True, check=True)


def count(configs) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        wd = _workdir(Path(tmp))
        for cfg in configs:
            out = snakemake(wd, "-n", "--profile", "profiles/slurm", "--configfile", cfg).stdout
            jobs = slurm_jobs(out)
            print(f"{cfg}: {sum(jobs.values())} Slurm jobs — " + ", ".join(f"{k} {v}" for k, v in sorted(jobs.items())))


def run_rehearsal() -> int:
    sys.path.insert(0, str(REPO / "tests" / "slurm"))
    import cluster as cluster_mod

    reason = cluster_mod.install()
    if reason:
        print(f"no local Slurm: {reason}")
        return 1
    with tempfile.TemporaryDirectory() as tmp, cluster_mod.LocalSlurm(Path(tmp) / "state", cpus=2) as c:
        wd = _workdir(Path(tmp) / "wf")
        t0 = time.monotonic()
        proc = subprocess.run(
            [
                str(Path(sys.executable).parent / "snakemake"),
                "--profile",
                "profiles/slurm",
                "--configfile",
                "config/rehearsal.yaml",
                "--default-resources",
                "slurm_partition='cpu'",
                "mem_mb=2000",
            ],
            cwd=wd,
            capture_output=True,
            text=True,
            env=dict(os.environ, PYTHONPATH=str(REPO / "src")),
        )
        wall = time.monotonic() - t0
        ran = re.findall(r"^rule (\w+):", proc.stdout, re.M)
        per: dict[str, int] = {}
        for r in ran:
            per[r.split("__")[0]] = per.get(r.split("__")[0], 0) + 1
        print(
            f"rehearsal through Slurm: rc {proc.returncode}, wall {wall:.0f} s, {len(c.jobs())} Slurm jobs; per rule: "
            + ", ".join(f"{k} {v}" for k, v in sorted(per.items()))
        )
        return proc.returncode


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="*", default=CONFIGS)
    ap.add_argument("--run", action="store_true", help="also run config/rehearsal.yaml on the local Slurm")
    ap.add_argument("--quick", action="store_true", help="count config/rehearsal.yaml only (CI)")
    a = ap.parse_args(argv)
    if a.quick:
        if a.run:
            ap.error("--quick counts only; it does not run the rehearsal")
        a.configs = ["config/rehearsal.yaml"]
    count(a.configs)
    return run_rehearsal() if a.run else 0


if __name__ == "__main__":
    sys.exit(main())
