"""Mode ``rehearsal`` of benchmarks/bench_workflow.py: how many Slurm jobs a config submits (array
tasks counted: each compute job is one sbatch job or one array task), per rule, for
config/paper.yaml, config/validation.yaml and config/rehearsal.yaml; with ``--run``, the rehearsal
itself through ``snakemake --profile slurm`` on the local one-node Slurm of tests/slurm/cluster.py
(the profile as ``slrpipe install-profile`` installs it, two fake GPUs), with its wall time, the
Slurm jobs it submitted and the jobs each rule ran; then the same config with the local executor,
and the two results/ trees compared file by file (netCDF and zarr by content, ``wall_time`` aside;
figures, the validation table and the plan byte for byte). Both runs work on snapshots of the
repository, so it may be edited meanwhile.

The counts come from Snakemake's own dry run with the Slurm profile (the jobs it would submit;
local rules — plan, aggregate, figures, validate — run on the login node and are not counted).

``--quick`` (CI): the count of config/rehearsal.yaml alone (one dry run; no ``--run``).

Usage: python benchmarks/bench_workflow.py rehearsal [--run [--keep DIR] [--cores N]]
           [--configs config/paper.yaml ...] [--quick]
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

from slrpipe.provenance import VOLATILE

REPO = Path(__file__).resolve().parents[1]
CONFIGS = ["config/paper.yaml", "config/validation.yaml", "config/rehearsal.yaml"]
LOCAL = {"plan", "aggregate", "validate", "all"}
REHEARSAL = "config/rehearsal.yaml"


def _workdir(tmp: Path) -> Path:
    """A copy of the workflow with a snapshot of ``src/`` (first on PYTHONPATH for the jobs too), so
    that edits to the repository while a long run goes on do not reach it."""
    tmp.mkdir(parents=True, exist_ok=True)
    for part in ("Snakefile", "workflow", "config", "profiles", "src"):
        src = REPO / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, tmp / part)
    return tmp


def _env(wd: Path, **extra) -> dict:
    return dict(os.environ, PYTHONPATH=str(wd / "src"), **extra)


def slurm_jobs(stdout: str) -> dict[str, int]:
    """{rule: compute jobs} from a dry run's job table."""
    jobs: dict[str, int] = {}
    table = stdout.split("Job stats:", 1)[1].split("\n\n", 1)[0]  # the first table only
    for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M):
        rule = m.group(1)
        if rule != "total" and rule not in LOCAL and not rule.startswith("fig_"):
            jobs[rule] = jobs.get(rule, 0) + int(m.group(2))
    return jobs


def snakemake(wd: Path, *args, env=None) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "snakemake"
    return subprocess.run([str(exe), *args], cwd=wd, env=env or _env(wd), capture_output=True, text=True, check=True)


def count(configs) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        wd = _workdir(Path(tmp))
        for cfg in configs:
            out = snakemake(wd, "-n", "--profile", "profiles/slurm", "--configfile", cfg).stdout
            jobs = slurm_jobs(out)
            print(f"{cfg}: {sum(jobs.values())} Slurm jobs — " + ", ".join(f"{k} {v}" for k, v in sorted(jobs.items())))


# --- the rehearsal itself ----------------------------------------------------------------------
_SUBMITTED = re.compile(r"^Job (\d+) has been submitted with SLURM jobid (\d+)", re.M)
_ARRAY = re.compile(r"^Submitted array job with Snakemake IDs (\S+) and SLURM job ID (\d+)", re.M)
# results/ entries that are the run's record, not its results (timings, logs, the JAX cache)
NOT_RESULTS = ("logs", "benchmarks", "cache")
#: provenance attributes that name the machine, the moment and the command line (slrpipe.provenance), not the result
VOLATILE_ATTRS = VOLATILE


def _run(cmd: list[str], wd: Path, env: dict, log: Path) -> tuple[int, float, str]:
    t0 = time.monotonic()
    with open(log, "wb") as fh:
        rc = subprocess.run(cmd, cwd=wd, env=env, stdout=fh, stderr=subprocess.STDOUT).returncode
    return rc, time.monotonic() - t0, log.read_text(errors="replace")


def _per_rule(out: str) -> str:
    """Jobs a snakemake run ran, per rule; local rules (never submitted) marked "(local)"."""
    per: dict[str, int] = {}
    for local, r in re.findall(r"^(local)?rule (\w+):", out, re.M):
        name = r + (" (local)" if local else "")
        per[name] = per.get(name, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(per.items()))


def submitted_jobs(out: str) -> int:
    """Slurm jobs a snakemake run submitted, array tasks counted (one per Snakemake job of an array)."""
    plain = len(set(_SUBMITTED.findall(out)))
    tasks = sum(len(ids.split(",")) for ids, _ in _ARRAY.findall(out))
    return plain + tasks


def run_slurm(wd: Path) -> int:
    """config/rehearsal.yaml through ``snakemake --profile slurm`` on the local one-node Slurm, the
    profile as ``slrpipe install-profile`` installs it (status by squeue: no slurmdbd here), with two
    fake GPUs so that the training batches keep the profile's GPU request. The node is declared to
    hold two of the profile's largest jobs (the jobs then share this machine's real cores)."""
    sys.path.insert(0, str(REPO / "tests" / "slurm"))
    import cluster as cluster_mod
    import slurm_profile as profile_mod

    reason = cluster_mod.install()
    if reason:
        print(f"no local Slurm: {reason}")
        return 1
    prof = profile_mod.load_profile()
    import yaml

    cpus, mem = profile_mod.profile_node_size(prof, yaml.safe_load((REPO / REHEARSAL).read_text()))
    state = wd.parent / "slurm-state"
    with cluster_mod.LocalSlurm(
        state,
        gpus=2,
        partitions=list(dict.fromkeys(profile_mod.profile_partitions(prof).values())),
        cpus=2 * cpus,
        memory_mb=2 * mem,
        min_job_age=7200,  # the jobs of the run stay visible to squeue
    ):
        xdg = profile_mod.install_profile(wd.parent / "xdg", gpus=True, init_seconds=4)
        env = _env(wd, XDG_CONFIG_HOME=str(xdg))
        cmd = [str(Path(sys.executable).parent / "snakemake"), "--profile", "slurm", "--configfile", REHEARSAL]
        rc, wall, out = _run(cmd, wd, env, wd / "snakemake-slurm.log")
    print(
        f"rehearsal through Slurm: rc {rc}, wall {wall:.0f} s, {submitted_jobs(out)} Slurm jobs "
        f"(array tasks counted); jobs per rule: {_per_rule(out)}"
    )
    return rc


def run_local(wd: Path, cores: int) -> int:
    """The same config with Snakemake's local executor (README's command with this config)."""
    cmd = [str(Path(sys.executable).parent / "snakemake"), "--cores", str(cores), "--configfile", REHEARSAL]
    rc, wall, out = _run(cmd, wd, _env(wd), wd / "snakemake-local.log")
    print(f"rehearsal, local executor ({cores} cores): rc {rc}, wall {wall:.0f} s; jobs per rule: {_per_rule(out)}")
    return rc


def _nc_differences(a: Path, b: Path) -> list[str]:
    """Variables, coordinates and attributes of two result files that differ (``wall_time`` and
    ``VOLATILE_ATTRS`` aside), with the largest relative difference of float ones."""
    import numpy as np
    import xarray as xr

    if a.suffix == ".zarr":
        ta, tb = ({n.path: n.to_dataset() for n in xr.open_datatree(p, engine="zarr").subtree} for p in (a, b))
        pairs = [(path, ds, tb.get(path)) for path, ds in ta.items()]
        pairs += [(f"{path} (only in {b})", None, None) for path in tb.keys() - ta.keys()]
    else:
        pairs = [("/", xr.load_dataset(a), xr.load_dataset(b))]
    diffs = []
    for path, da, db in pairs:
        if da is None or db is None:
            diffs.append(f"{path}: missing")
            continue
        attrs = [
            k for k in set(da.attrs) | set(db.attrs) if k not in VOLATILE_ATTRS and da.attrs.get(k) != db.attrs.get(k)
        ]
        diffs += [f"{path} attribute {k}: differs" for k in sorted(attrs)]
        node = path.rstrip("/")
        names = set(da.variables) | set(db.variables)
        for v in sorted(n for n in names if "wall_time" not in n):
            if v not in da.variables or v not in db.variables:
                diffs.append(f"{node}/{v}: in one file only")
                continue
            x, y = np.asarray(da[v].values), np.asarray(db[v].values)
            if x.shape != y.shape:
                diffs.append(f"{node}/{v}: shapes {x.shape} vs {y.shape}")
            elif x.dtype.kind in "fc":
                if not np.array_equal(x, y, equal_nan=True):
                    rel = np.nanmax(np.abs(x - y) / (np.abs(y) + 1e-300))
                    diffs.append(f"{node}/{v}: max relative difference {rel:.2g}")
            elif not np.array_equal(x, y):
                diffs.append(f"{node}/{v}: differs")
    return diffs


def compare_results(a: Path, b: Path) -> int:
    """Compare two runs' results/ trees file by file: netCDF files and the zarr store by content
    (:func:`_nc_differences`), everything else (figures, validation table, plan) byte for byte.
    Prints one summary line and one line per differing file; returns the number of differing files."""
    ra, rb = a / "results", b / "results"

    def files(root: Path) -> set[str]:
        out = set()
        for p in root.rglob("*"):
            rel = p.relative_to(root)
            if rel.parts[0] in NOT_RESULTS or any(part.endswith(".zarr") for part in rel.parts[:-1]):
                continue
            if p.is_file() or p.suffix == ".zarr":
                out.add(str(rel))
        return out

    fa, fb = files(ra), files(rb)
    bad = [f"{f}: only in {a.name}" for f in sorted(fa - fb)] + [f"{f}: only in {b.name}" for f in sorted(fb - fa)]
    same = 0
    for f in sorted(fa & fb):
        pa, pb = ra / f, rb / f
        if pa.suffix in (".nc", ".zarr"):
            d = _nc_differences(pa, pb)
        else:
            d = [] if pa.read_bytes() == pb.read_bytes() else ["bytes differ"]
        if d:
            bad.append(f"{f}: " + "; ".join(d[:4]) + (f" (+{len(d) - 4} more)" if len(d) > 4 else ""))
        else:
            same += 1
    print(f"results compared ({a.name} vs {b.name}): {same} identical, {len(bad)} differ")
    for line in bad:
        print("  " + line)
    return len(bad)


def run_rehearsal(keep: Path | None, cores: int) -> int:
    root = Path(tempfile.mkdtemp(prefix="rehearsal-")) if keep is None else keep
    try:
        slurm_wd, local_wd = _workdir(root / "slurm"), _workdir(root / "local")
        rc = run_slurm(slurm_wd) or run_local(local_wd, cores)
        return rc or (1 if compare_results(slurm_wd, local_wd) else 0)
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"work directories kept under {root}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="bench_workflow.py rehearsal", description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="*", default=CONFIGS)
    ap.add_argument(
        "--run", action="store_true", help="also run config/rehearsal.yaml on the local Slurm and locally, and compare"
    )
    ap.add_argument("--keep", type=Path, help="with --run: keep the two work directories under this (new) folder")
    ap.add_argument("--cores", type=int, default=2, help="with --run: cores of the local-executor run (default 2)")
    ap.add_argument("--quick", action="store_true", help="count config/rehearsal.yaml only (CI)")
    a = ap.parse_args(argv)
    if a.quick:
        if a.run:
            ap.error("--quick counts only; it does not run the rehearsal")
        a.configs = ["config/rehearsal.yaml"]
    count(a.configs)
    return run_rehearsal(a.keep, a.cores) if a.run else 0
