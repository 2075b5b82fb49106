"""Every benchmark runs: each ``benchmarks/bench_*.py`` in its ``--quick`` mode (the same code path
at tiny sizes), each mode of a benchmark with modes (its ``MODES``: bench_erm.py, bench_workflow.py)
on its own, as a fresh process from the repository root, single-threaded as CI is.

The cases are globbed, so a new benchmark or mode without a quick mode (or without its key figures
listed in ``FIGURES``) fails here. The figures are not checked against targets — a quick run times
compilation and start-up, not the method — only that each benchmark still prints them.

The quick runs are single-threaded processes: they are started together, ``WORKERS`` at a time
(CI has 2 cores), the slowest first, when the first case asks for its result; each case then checks
its own run (its ``wall`` in the failure message).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from slrpipe.threads import thread_env

REPO = Path(__file__).resolve().parents[1]


def _modes(script: Path) -> list[str]:
    """The modes of a benchmark (the keys of its top-level ``MODES`` dict), [] for one without; read
    off the syntax tree, so that collecting the cases imports no benchmark."""
    for node in ast.parse(script.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MODES" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return []


#: one case per benchmark file, or one per mode of a benchmark with modes ("bench_erm.py MODE")
BENCHMARKS = sorted(
    case
    for script in (REPO / "benchmarks").glob("bench_*.py")
    for case in ([f"{script.name} {mode}" for mode in _modes(script)] or [script.name])
)
WORKERS = 2
TIMEOUT_S = 400
#: longer limits: bench_replica's quick run times the solver at L = 3 and 16 too (fresh processes)
TIMEOUTS = {"bench_replica.py": 900}
NUM = r"[-+\d.e]+"

#: per benchmark: the lines its quick run must print (regular expressions, one match each)
FIGURES = {
    "bench_erm.py eval": [
        rf"^reference: numpy copy of {NUM} MB: {NUM} ms = {NUM} GB/s",
        rf"^evaluation \(plain X\): {NUM} ms, X streamed at {NUM} GB/s",
        rf"^L-BFGS: {NUM} ms/iteration .* {NUM} line-search evaluations per iteration",
        r"^minimize \(informed start, tol 1e-5\): \d+ iterations, converged=\w+",
        r"^paper config \(config/paper\.yaml\): \d+ ERM runs in \d+ training batches, \d+ training sets drawn",
        rf"^  L-BFGS on the GPU: {NUM} min in all",
        rf"^  sampling on the host .* = {NUM} h of one core",
    ],
    "bench_erm.py starts": [
        rf"^evaluation of J and ∇J: one start {NUM} ms, \d+ at once {NUM} ms \({NUM}× one\)",
        rf"^one after the other \(minimize\): {NUM} s CPU, iterations \[",
        rf"^as lanes \(slrpipe\.train\.lanes\): {NUM} s CPU \({NUM}× one after the other\), iterations \[",
        rf"^  lowest J over starts: {NUM} one after the other, {NUM} as lanes",
        rf"^all at once \(vmap of optax\.lbfgs\): {NUM} s CPU \({NUM}× one after the other\)",
        r"^  iterations \[.*\]; broadcasts of X or XT to \d+ lanes in the program: \d+",
    ],
    "bench_erm.py share": [
        r"^share: batch \S+, its first training set: \d+ models \(.*linear.*softmax.*\), D = \d+",
        rf"^one after the other \(optax\.lbfgs\): .* {NUM} ms CPU per model-iteration; passes over X .* ≥ \d+",
        rf"^as lanes \(slrpipe\.train\.lanes\): .* {NUM} ms CPU per model-iteration; \d+ passes over X in \d+ "
        rf"iterations = {NUM} per iteration",
        rf"^per-model-iteration CPU: {NUM}× lower as lanes",
    ],
    "bench_erm.py products": [
        r"^products: n·L = \d+, D = \d+, float32",
        rf"^C = 28: X @ W {NUM} ms {NUM} GFLOP/s .*; Wt·Xᵀ {NUM} ms {NUM} GFLOP/s \(\w+\)\*",
        rf"^square 1024 GEMM: {NUM} GFLOP/s",
    ],
    "bench_erm.py scipy": [
        rf"^this project \(lanes, float32\): {NUM} s wall, {NUM} s CPU",
        rf"^  without dropping stopped lanes \(compact=False\): {NUM} s wall, {NUM} s CPU",
        rf"^research code \(scipy \S+ L-BFGS-B, float64, jitted JAX gradients\): {NUM} s wall, {NUM} s CPU",
        rf"^ratio \(research / this project\): {NUM}× in CPU, {NUM}× in wall; same J .* at \d+ of \d+ starts",
    ],
    "bench_erm.py batch": [
        r"^batch \S+: \d+ models, D = \d+, n = \d+",
        rf"^wall {NUM} s: training sets {NUM} s, training {NUM} s \(\d+ iterations",
        rf"^off the solve \(sampling \+ test evaluation\): {NUM}% of the wall time",
        rf"^peak RSS {NUM} MB; law requests mem_mb = \d+",
        r"^on a GPU node the law requests mem_mb = \d+ of the host and gpu_mem_mb = \d+ of the card",
    ],
    "bench_erm.py config": [
        rf"^lanes: false: {NUM} s CPU, {NUM} s wall; lanes: true: {NUM} s CPU, {NUM} s wall \({NUM}×\)",
        rf"^runs compared: J relative difference median {NUM}, max {NUM}; test error difference max {NUM} s\.e\.",
    ],
    "bench_erm.py job": [
        r"^one ERM run of a train-batch job: softmax, D = 100",
        rf"^L-BFGS block: compile or cache load +{NUM} +{NUM} +{NUM} +{NUM}$",
        rf"^minimize \(\d+ iterations; programs in memory\) +{NUM}",
        rf"^total \(after interpreter start\) +{NUM} +{NUM} +{NUM} +{NUM}$",
    ],
    "bench_machine.py": [
        rf"^python loop: {NUM} s \(\d+ iterations\)",
        rf"^numpy exp: {NUM} ns per element",
        rf"^jax: import and compile {NUM} s; \d+ products of 400 x 400: {NUM} s",
    ],
    "bench_population.py": [
        rf"^spiked L=2 +total +{NUM} s \(3 ν × 5 σ\)",
        rf"^max L~U\{{1,2,3\}} +total +{NUM} s",
        rf"^Fig\. 2 grid total: {NUM} s \(target < 60 s\); max risk_err {NUM}",
        rf"^L=64 softmax max ν=2: risk={NUM} ± {NUM}",
        rf"^softmax +3 +{NUM} +{NUM} +{NUM} +{NUM} \| +{NUM}",  # exact and quadrature side by side
        rf"^bayes +100 +{NUM}",
        rf"^worst change of A, B \(relative beyond 1\) under 1\.5² refinement: {NUM}",
    ],
    "bench_replica.py": [
        rf"^\(1\) channel softmax L=3 N=256: ours {NUM} s .* speed-up {NUM}x",
        rf"^\(2\) softmax spiked .* α=10 N=256 .*: {NUM} s/point, {NUM} channel evaluations",
        rf"^\(3\) Fig\. 3 panel \(softmax, one λ\): {NUM} s",
        rf"^\(11\) softmax L=3 N=\d+ α=5: compile {NUM} s CPU .* channel evaluations at {NUM} s wall",
        rf"^\(11\) softmax L=16: compile {NUM}× L = 3's \(target ≤ 2\); time per evaluation {NUM}× L = 3's",
    ],
    "bench_workflow.py rehearsal": [r"^config/rehearsal\.yaml: \d+ Slurm jobs — .*train_erm \d+"],
    "bench_workflow.py times": [  # the synthetic tree's known totals
        r"^train_erm +4 +44\.0 +11\.00 +14\.0 +39\.6$",
        r"^fig_\* +2 +5\.0 ",
        r"^all jobs +16 +133\.0$",
        r"^elapsed \(Snakemake log\): 0:02:11$",
    ],
}
#: the slowest first (one to three minutes of CPU each), so that two workers finish together
FIRST = ("bench_replica.py", "bench_erm.py share", "bench_erm.py scipy", "bench_population.py")


def _quick(name: str) -> tuple[subprocess.CompletedProcess, float]:
    env = dict(
        os.environ,
        **thread_env(1),
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")])),
        PYTHONUNBUFFERED="1",
    )
    t0 = time.perf_counter()
    script, *mode = name.split()
    proc = subprocess.run(
        [sys.executable, f"benchmarks/{script}", *mode, "--quick"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUTS.get(name, TIMEOUT_S),
    )
    return proc, time.perf_counter() - t0


@pytest.fixture(scope="module")
def quick_runs(request):
    """{benchmark: future of (process, wall seconds)}: the quick run of every selected case,
    WORKERS at a time."""
    selected = {
        item.callspec.params["name"]
        for item in request.session.items
        if item.originalname == "test_benchmark_runs_in_quick_mode"
    }
    order = sorted(selected, key=lambda b: (FIRST.index(b) if b in FIRST else len(FIRST), b))
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        yield {name: pool.submit(_quick, name) for name in order}


def test_every_benchmark_has_its_figures_listed():
    assert BENCHMARKS, "no benchmarks found"
    assert set(FIGURES) == set(BENCHMARKS), "FIGURES: exactly the benchmarks/bench_*.py files, or their modes"


@pytest.mark.parametrize("name", BENCHMARKS)
def test_benchmark_runs_in_quick_mode(name, quick_runs):
    proc, wall = quick_runs[name].result()
    out = f"{name} --quick ({wall:.0f} s wall, rc {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, out
    missing = [f for f in FIGURES.get(name, ["(no figures listed in FIGURES)"]) if not re.search(f, proc.stdout, re.M)]
    assert not missing, f"did not print {missing}; {out}"


def _bench_module(name: str):
    from conftest import load_file_module

    return load_file_module(f"benchmarks/{name}.py")


def test_rehearsal_counts_submissions_and_compares_results_by_content(tmp_path, capsys):
    """bench_workflow.py rehearsal's two checks on made-up input: the Slurm jobs of a log (plain
    submissions once each, array tasks one each) and the file-by-file comparison of two results/ trees, where
    a file that differs in ``wall_time`` and provenance only counts as identical and any other
    difference, a missing file or other PNG bytes are reported."""
    import numpy as np
    import xarray as xr

    bench = _bench_module("_workflow_rehearsal")
    log = (
        "Job 3 has been submitted with SLURM jobid 11 (log: a).\n"
        "Job 3 has been submitted with SLURM jobid 11 (log: a).\n"  # the same line twice: one job
        "Job 4 has been submitted with SLURM jobid 12 (log: b).\n"
        "Submitted array job with Snakemake IDs 5,6,7 and SLURM job ID 13. The individual task IDs are 1-3.\n"
    )
    assert bench.submitted_jobs(log) == 5
    for run, (wall, host, value, png) in {"a": (1.0, "x", 2.0, b"1"), "b": (9.0, "y", 2.0, b"1")}.items():
        res = tmp_path / run / "results"
        (res / "erm").mkdir(parents=True)
        (res / "figures").mkdir()
        (res / "logs").mkdir()
        ds = xr.Dataset({"e": ("t", np.array([value, 1.0])), "wall_time": wall}, attrs={"host": host})
        ds.to_netcdf(res / "erm" / "r.nc")
        (res / "figures" / "f.png").write_bytes(png)
        (res / "logs" / "job.log").write_text(run)  # the record of a run, not a result: not compared
    assert bench.compare_results(tmp_path / "a", tmp_path / "b") == 0
    assert "2 identical, 0 differ" in capsys.readouterr().out
    xr.Dataset({"e": ("t", np.array([2.0 * (1 + 1e-9), 1.0])), "wall_time": 0.0}, attrs={"lam": 0.1}).to_netcdf(
        tmp_path / "b" / "results" / "erm" / "r.nc"
    )
    (tmp_path / "b" / "results" / "figures" / "f.png").write_bytes(b"2")
    (tmp_path / "b" / "results" / "erm" / "extra.nc").write_bytes(b"")
    assert bench.compare_results(tmp_path / "a", tmp_path / "b") == 3
    out = capsys.readouterr().out
    assert "erm/r.nc: / attribute lam: differs; /e: max relative difference 1e-09" in out
    assert "figures/f.png: bytes differ" in out
    assert "erm/extra.nc: only in b" in out and "attribute lam: differs" in out
