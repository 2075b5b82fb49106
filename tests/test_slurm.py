"""``snakemake --profile slurm`` (profiles/slurm installed by ``slrpipe install-profile``) against a
real one-node Slurm (slurm-wlm 22.05 + munge) on localhost, with a PATH that lacks the venv.

What is shown, each by the scheduler's own records (``squeue --states=all`` keeps finished jobs
for MinJobAge = 1800 s; there is no slurmdbd, so no sacct):
- every compute job of the workflow went through sbatch: each ``rule`` job in Snakemake's log has
  a Slurm job id, that job is COMPLETED in Slurm, its comment names the same rule, and it ran in
  the partition the profile asks for; local rules never reach Slurm;
- a job killed with ``scancel`` while running is reported failed, its outputs are removed, the
  other jobs finish (keep-going), and a rerun redoes only what was lost, leaving every file of
  the first run byte-identical and untouched; a further run has nothing to do;
- a job over its time limit ends TIMEOUT and comes back with more time (the toy's train_erm, 65 s
  against a site's ``--set-resources "train_erm:runtime=attempt**3"``, 1 then 8 min; run in the background beside the smoke runs, whose scancel
  picks only their own jobs); a job over its memory is killed by Slurm's memory enforcement
  (OverMemoryKill; slurmd logs it) and comes back with more (the smoke workflow run up to its
  training batches, forced to 300 then 2400 MB, beside the rerun); every training result file of that run equals the
  scancel-and-rerun run's, variable by variable (wall times aside);
- on a GPU-less node a GPU request is refused at submission (no hang), so the GPU requests are
  overridden for the smoke run; with fake GPUs (``Gres=gpu:2``) the profile's unchanged GPU rule
  lands in the GPU partition with ``CUDA_VISIBLE_DEVICES`` set.

The production profile is used unchanged except for, written into a temporary profile:
``slurm-status-command: squeue`` and ``slurm-init-seconds-before-status-checks: 4`` (no slurmdbd
here; production keeps sacct), ``slurm-keep-successful-logs`` (to read the job logs), ``retries``
(0 but for the kills above) and, for the GPU-less node only, the GPU keys dropped from
``set-resources``. The node is declared to hold
``NODE_SLOTS`` of the profile's largest requests (``SlurmdParameters=config_overrides``) so that
the real requests are scheduled, side by side, on this small machine.

Workflow: the real smoke workflow (``Snakefile`` + ``config/smoke.yaml``, run on a snapshot of
the repository in a temp dir); ``SLRPIPE_SLURM_WORKFLOW=toy`` swaps in ``tests/slurm/toy`` to
check the cluster and profile alone. The fake-GPU checks always use the toy, whose ``train_erm``
writes ``$CUDA_VISIBLE_DEVICES`` into its output.

Needs root and apt-get (CI: fresh Debian, as root); skipped with the reason otherwise.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import copy_workflow, share_jax_cache

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
TOY = REPO / "tests" / "slurm" / "toy"
SMOKE_CONFIG = REPO / "config" / "smoke.yaml"
# "smoke" (default, CI): the real workflow with config/smoke.yaml; "toy": tests/slurm/toy, about a
# minute, to check the cluster and the profile apart from the science code
WORKFLOW = os.environ.get("SLRPIPE_SLURM_WORKFLOW", "smoke")
# the plugin falls back from squeue to sacct unless MinJobAge >= 3 x init seconds (plugin 2.8)
INIT_SECONDS = 4
MIN_JOB_AGE = 1800  # s: longer than the three smoke runs together, whose jobs are read at the end
KILL_RULE = "train_erm"  # the rule of the job that is scancelled while it runs
# s for one snakemake run (SLRPIPE_SLURM_RUN_TIMEOUT on a loaded machine): a hang (e.g. a job that
# can never start) fails, not blocks. The first run compiles every program cold beside the replica
# tests (tests/conftest.py: FIRST); 300 s was once too short for it on a slow hour of the 2-core machine
RUN_TIMEOUT = int(os.environ.get("SLRPIPE_SLURM_RUN_TIMEOUT", 600))
# the node is declared to hold this many of the profile's largest jobs at once: the smoke jobs are
# tiny, and running them side by side saves Slurm's polling rounds (wall time), not CPU
NODE_SLOTS = 8


def _load_module(name: str, file: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "tests" / "slurm" / file)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


cluster_mod = _load_module("slrpipe_test_cluster", "cluster.py")


# --- profile helpers ---------------------------------------------------------------------------
profile_mod = _load_module("slrpipe_test_profile", "slurm_profile.py")
load_profile, family = profile_mod.load_profile, profile_mod.family
profile_partitions, profile_node_size = profile_mod.profile_partitions, profile_mod.profile_node_size


def write_test_profile(xdg: Path, *, gpus: bool, **extra) -> Path:
    """The profile installed for this cluster (``slurm_profile.install_profile``), with the Slurm logs
    of successful jobs kept (to read them) and, unless ``extra`` says otherwise, no retries (a
    scancelled job must fail, not be resubmitted)."""
    extra = {"retries": 0, **extra}
    return profile_mod.install_profile(
        xdg, gpus=gpus, init_seconds=INIT_SECONDS, slurm_keep_successful_logs=True, **extra
    )


# --- running snakemake ---------------------------------------------------------------------------
VENV_BIN = Path(sys.executable).parent


def path_without_venv() -> str:
    """PATH with the virtual environment's bin/ left out: jobs must not need ``slrpipe`` on PATH."""
    return os.pathsep.join(
        d for d in os.environ.get("PATH", "").split(os.pathsep) if d and Path(d).resolve() != VENV_BIN.resolve()
    )


class Run:
    """One ``snakemake --profile slurm`` (the documented command, literally; the venv's snakemake
    by its path, with a PATH that lacks the venv) started in ``workdir``, the named profile found in
    ``xdg``/snakemake/slurm. :meth:`wait` collects it; it may run beside other runs meanwhile."""

    def __init__(self, workdir: Path, xdg: Path, *args: str, timeout: float = RUN_TIMEOUT):
        cmd = [str(VENV_BIN / "snakemake"), "--profile", "slurm", *args]
        env = dict(os.environ, XDG_CONFIG_HOME=str(xdg), PATH=path_without_venv())
        assert shutil.which("slrpipe", path=env["PATH"]) is None
        assert shutil.which("snakemake", path=env["PATH"]) is None
        if (workdir / "src").is_dir():  # the snapshot, also for the jobs (sbatch --export=ALL)
            env["PYTHONPATH"] = os.pathsep.join([str(workdir / "src"), *filter(None, [env.get("PYTHONPATH")])])
        self.workdir, self.timeout = workdir, timeout
        self.log = workdir / f"snakemake-{time.monotonic_ns()}.log"
        self.result: tuple[int, str] | None = None
        with open(self.log, "wb") as fh:
            self.proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=fh, stderr=subprocess.STDOUT)
        self.deadline = time.monotonic() + timeout

    def stop(self):
        """SIGINT (the plugin then scancels its jobs), then SIGKILL; no-op once it has ended."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def wait(self) -> tuple[int, str]:
        """(returncode, combined output), the same on every call. Past the deadline the run is
        stopped and the test fails with the log tail."""
        if self.result is None:
            try:
                rc = self.proc.wait(max(self.deadline - time.monotonic(), 0.1))
            except BaseException as exc:
                self.stop()
                if isinstance(exc, subprocess.TimeoutExpired):
                    tail = self.log.read_text(errors="replace")[-4000:]
                    pytest.fail(f"snakemake did not finish in {self.timeout} s:\n{tail}")
                raise
            self.result = rc, self.log.read_text(errors="replace")
        return self.result


def snakemake(workdir: Path, xdg: Path, *args: str, timeout: float = RUN_TIMEOUT, on_start=None):
    """Run :class:`Run` to its end; returns (returncode, combined output). ``on_start(proc,
    deadline)`` is called while it runs (for scancel); an error there stops the run."""
    run = Run(workdir, xdg, *args, timeout=timeout)
    try:
        if on_start is not None:
            on_start(run.proc, run.deadline)
    except BaseException:
        run.stop()
        raise
    return run.wait()


def run_ok(workdir, profile, *args):
    rc, out = snakemake(workdir, profile, *args)
    assert rc == 0, f"snakemake failed ({rc}):\n{out[-6000:]}"
    return out


_JOB_BLOCK = re.compile(r"^(local)?rule (\w+):\n(?:    .*\n)*?    jobid: (\d+)$", re.M)
_SUBMITTED = re.compile(r"^Job (\d+) has been submitted with SLURM jobid (\d+)", re.M)


def jobs_in_log(out: str) -> tuple[dict[int, str], dict[int, str]]:
    """(compute jobs, local jobs) of one snakemake run: Snakemake job id -> rule."""
    compute, local = {}, {}
    for is_local, rule, jobid in _JOB_BLOCK.findall(out):
        (local if is_local else compute)[int(jobid)] = rule
    return compute, local


def requests_in_log(out: str) -> dict[int, dict[str, str]]:
    """Snakemake job id -> the resources its job block lists (``mem_mb``, ``runtime``, ...), per
    submission (the last block of a job id: a retried job is listed again with its new request)."""
    found = {}
    for block in re.findall(r"^(?:local)?rule \w+:\n((?:    .*\n)+)", out, re.M):
        jobid = re.search(r"^    jobid: (\d+)$", block, re.M)
        res = re.search(r"^    resources: (.*)$", block, re.M)
        if jobid and res:
            found[int(jobid.group(1))] = dict(kv.split("=", 1) for kv in res.group(1).split(", ") if "=" in kv)
    return found


def slurm_ids_in_log(out: str) -> dict[int, str]:
    """Snakemake job id -> Slurm job id, from the plugin's submission lines."""
    return {int(j): s for j, s in _SUBMITTED.findall(out)}


def elapsed(out: str) -> str:
    """The wall time a snakemake run reports at its end ("h:mm:ss.ffffff"; "?" without one)."""
    found = re.findall(r"^Elapsed time: (\S+)", out, re.M)
    return found[-1] if found else "?"


def job_side_files(out: str) -> set[str]:
    """log: and benchmark: files of the jobs in one snakemake run."""
    files = set()
    for line in re.findall(r"^    (?:log|benchmark): (.+)$", out, re.M):
        files.update(f.strip() for f in line.split(" (check log")[0].split(","))
    return files


def tree_digest(root: Path) -> dict[str, tuple[str, int]]:
    """relative path -> (sha256, mtime_ns) of every file under root."""
    return {
        str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def check_outputs_readable(results: Path):
    """Every result file opens with the library that wrote it (no truncated netCDF / zarr)."""
    import xarray as xr

    for nc in results.rglob("*.nc"):
        xr.load_dataset(nc)
    for store in results.rglob("*.zarr"):
        if store.is_dir():
            xr.open_zarr(store, consolidated=False).load()


# --- fixtures ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    t0 = time.monotonic()
    try:
        reason = cluster_mod.install()
    except RuntimeError as exc:
        pytest.fail(f"installing Slurm failed: {exc}")
    if reason:
        pytest.skip(reason)
    t_install = time.monotonic() - t0
    profile = load_profile()
    cpus, mem = profile_node_size(profile, yaml.safe_load(SMOKE_CONFIG.read_text()))
    cpus, mem = NODE_SLOTS * cpus, NODE_SLOTS * mem
    c = cluster_mod.LocalSlurm(
        tmp_path_factory.mktemp("slurm-state"),
        gpus=0,
        partitions=list(dict.fromkeys(profile_partitions(profile).values())),
        cpus=cpus,
        memory_mb=mem,
        min_job_age=MIN_JOB_AGE,
    )
    t0 = time.monotonic()
    c.start()
    print(f"slurm: install {t_install:.1f} s, start {time.monotonic() - t0:.1f} s")
    try:
        yield c
    finally:
        c.stop()


#: runs started in the background (:func:`time_limit_run`): a restart of the cluster would kill their
#: jobs and forget their records, so :func:`restart` waits for them first
_BACKGROUND: list[Run] = []


def restart(cluster, gpus: int):
    """``cluster.restart(gpus)`` once every run started in the background has ended."""
    for run in _BACKGROUND:
        run.wait()
    cluster.restart(gpus=gpus)


def _copy_workflow(dest: Path) -> tuple[Path, list[str]]:
    """Copy the workflow (and a snapshot of ``src/``, put first on PYTHONPATH by ``snakemake``)
    into ``dest``; returns (dest, snakemake args). The snapshot keeps the runs consistent while
    the repository is being edited (source fingerprints are part of the rules' params)."""
    if WORKFLOW == "toy":
        shutil.copy2(TOY / "Snakefile", dest / "Snakefile")
        return dest, ["--config", "n_train=3", "slow_seconds=15"]
    if not SMOKE_CONFIG.exists():
        pytest.fail(f"{SMOKE_CONFIG} does not exist (set SLRPIPE_SLURM_WORKFLOW=toy to test the profile alone)")
    copy_workflow(dest)
    share_jax_cache(dest)
    return dest, ["--configfile", "config/smoke.yaml"]


#: s the toy's train_erm job runs: over its first time limit (1 min), and under its second
#: (``TIMEOUT_RUNTIME``: 8 min, room for the jobstep's start-up beside the smoke runs' jobs). A job that ends past its limit is TIMEOUT
#: whether slurmctld's time-limit sweep (every 30 s) killed it or it ended first, so any sleep over
#: the limit is one Slurm times out; a short one is seen ended at an earlier status check
TIMEOUT_SLEEP = 65
#: the toy's train_erm time limit (min) per attempt, as a site would override a rule's law
#: (``--set-resources``, an expression of the attempt): 1 then 8 min
TIMEOUT_RUNTIME = "attempt**3"


@pytest.fixture(scope="module")
def time_limit_run(cluster, tmp_path_factory):
    """The toy's train_erm, its limit set to ``TIMEOUT_RUNTIME`` minutes and running
    ``TIMEOUT_SLEEP`` s, with one retry: started in the background as soon as the cluster is up (its job sleeps, it costs no
    CPU) and collected by its test; :func:`smoke_runs` requests it so that it runs beside them."""
    if cluster.gpus:
        restart(cluster, gpus=0)
    work = tmp_path_factory.mktemp("time-limit")
    shutil.copy2(TOY / "Snakefile", work / "Snakefile")
    (work / "results" / "data").mkdir(parents=True)
    (work / "results" / "data" / "0.txt").write_text("made locally\n")
    profile = write_test_profile(tmp_path_factory.mktemp("profile-time-limit"), gpus=False, retries=1)
    config = ["n_train=1", f"slow_seconds={TIMEOUT_SLEEP}", "minutes=1"]
    run = Run(
        work,
        profile,
        "results/train/0.txt",
        "--set-resources",
        f"train_erm:runtime={TIMEOUT_RUNTIME}",
        "--config",
        *config,
    )
    _BACKGROUND.append(run)
    yield run
    run.stop()
    _BACKGROUND.remove(run)


def same_dir(a, b) -> bool:
    return Path(a).resolve() == Path(b).resolve()


def start_retried_run(tmp_path_factory) -> Run:
    """The smoke workflow up to its training batches (``--until train_erm``: the batches and the
    data they read), with the batches' memory forced below what they hold on the first attempt
    (``OOM_MEM``) and the profile's retries: every batch is killed by Slurm's memory enforcement
    once (slurmd: "exceeded memory limit") and completes on its second attempt."""
    work, args = _copy_workflow(tmp_path_factory.mktemp("retried"))
    profile = write_test_profile(tmp_path_factory.mktemp("profile-retries"), gpus=False, retries=2)
    return Run(work, profile, *args, "--until", "train_erm", "--set-resources", f"train_erm:mem_mb={OOM_MEM}")


@pytest.fixture(scope="module")
def smoke_runs(cluster, time_limit_run, tmp_path_factory):
    """Run 1 with one running job scancelled, run 2 (rerun), run 3 (nothing to do); the toy's
    time-limit run (``time_limit_run``) goes on beside them, in a directory of its own, and so does
    the memory-kill run (:func:`start_retried_run`, collected by ``retried_run``) from the end of
    run 1 on, when the JAX cache holds the programs it runs."""
    work, args = _copy_workflow(tmp_path_factory.mktemp("smoke"))
    profile = write_test_profile(tmp_path_factory.mktemp("profile-nogpu"), gpus=False)
    expected = profile_partitions(load_profile())
    killed = {}

    def kill_one_running_job(proc, deadline):
        # the GPU rule: the longest job, and the one whose loss costs most
        while proc.poll() is None and time.monotonic() < deadline:
            # this run's job only: the toy's train_erm runs meanwhile, from its own directory
            running = [
                j
                for j in cluster.jobs()
                if j["state"] == "RUNNING"
                and j["comment"].startswith(f"rule_{KILL_RULE}")
                and same_dir(j["work_dir"], work)
            ]
            if running:
                subprocess.run([cluster_mod.which("scancel"), running[0]["id"]], check=True)
                killed.update(running[0])
                return
            time.sleep(0.2)

    t0 = time.monotonic()
    rc1, out1 = snakemake(work, profile, *args, on_start=kill_one_running_job)
    t1 = time.monotonic() - t0
    assert "id" in killed, f"no running {KILL_RULE} job to scancel was seen:\n{out1[-4000:]}"
    errors = [family(r) for r in re.findall(r"^Error in rule (\w+):", out1, re.M)]
    assert errors == [KILL_RULE], f"jobs other than the cancelled one failed: {errors}\n{out1[-6000:]}"
    after_kill = tree_digest(work / "results")
    retried = None if WORKFLOW == "toy" else start_retried_run(tmp_path_factory)
    if retried is not None:
        _BACKGROUND.append(retried)
    try:
        t0 = time.monotonic()
        out2 = run_ok(work, profile, *args)
        t2 = time.monotonic() - t0
        t0 = time.monotonic()
        out3 = run_ok(work, profile, *args)
        t3 = time.monotonic() - t0
        print(f"smoke runs: {t1:.1f} s (scancel), {t2:.1f} s (rerun), {t3:.1f} s (nothing to do)")
        yield dict(
            work=work,
            rc1=rc1,
            out1=out1,
            out2=out2,
            out3=out3,
            killed=killed,
            after_kill=after_kill,
            expected_partitions=expected,
            slurm_jobs=cluster.jobs(),
            retried=retried,
        )
    finally:
        if retried is not None:
            retried.stop()
            _BACKGROUND.remove(retried)


# --- tests -------------------------------------------------------------------------------------
def test_every_compute_job_went_through_sbatch(smoke_runs):
    jobs = {j["id"]: j for j in smoke_runs["slurm_jobs"]}
    parts = smoke_runs["expected_partitions"]
    profile = load_profile()
    threads, resources = profile.get("set-threads") or {}, profile.get("set-resources") or {}
    n_compute = 0
    for out in (smoke_runs["out1"], smoke_runs["out2"]):
        compute, local = jobs_in_log(out)
        submitted, requests = slurm_ids_in_log(out), requests_in_log(out)
        n_compute += len(compute)
        assert not set(local) & set(submitted), "a local rule was submitted to Slurm"
        for jobid, rule in compute.items():
            assert jobid in submitted, f"compute job {jobid} ({rule}) has no Slurm job id in the log"
            sj = jobs.get(submitted[jobid])
            assert sj is not None, f"Slurm does not know job {submitted[jobid]} ({rule})"
            assert sj["comment"].startswith(f"rule_{rule}"), (rule, sj)
            assert sj["partition"] == parts.get(family(rule), parts["*"]), (rule, sj)
            # the profile's cores and the workflow's memory request (its law, first attempt) are
            # what Slurm allocated
            if family(rule) in threads:
                assert int(sj["cpus"]) == int(threads[family(rule)]), (rule, sj)
            mem = resources.get(rule, {}).get("mem_mb", requests[jobid]["mem_mb"])
            assert sj["min_memory"] == f"{int(mem)}M", (rule, sj)
            want = "CANCELLED" if sj["id"] == smoke_runs["killed"]["id"] else "COMPLETED"
            assert sj["state"] == want, (rule, sj)
    assert n_compute > 0, "no compute job ran"


def test_scancel_then_rerun_loses_nothing(smoke_runs):
    work, killed = smoke_runs["work"], smoke_runs["killed"]
    assert smoke_runs["rc1"] != 0, "the run with a cancelled job reported success"
    assert re.search(rf"SLURM-job '{killed['id']}' failed, SLURM status is: 'CANCELLED'", smoke_runs["out1"])
    compute2, _ = jobs_in_log(smoke_runs["out2"])
    # the rerun redoes the cancelled job (and what depends on it), nothing that had finished
    killed_rule = killed["comment"].removeprefix("rule_").split("_wildcards_")[0]
    assert killed_rule in compute2.values(), (killed, compute2)
    after = tree_digest(work / "results")
    changed = {p for p, v in smoke_runs["after_kill"].items() if after.get(p) != v}
    # a failed job's own log and benchmark files stay (Snakemake keeps them) and are rewritten
    rewritten = {f.removeprefix("results/") for f in job_side_files(smoke_runs["out2"]) if f.startswith("results/")}
    assert not changed - rewritten, (
        f"files of the first run changed or vanished in the rerun: {sorted(changed - rewritten)}"
    )
    assert set(after) > set(smoke_runs["after_kill"]), "the rerun wrote nothing new"
    check_outputs_readable(work / "results")


def test_rerun_with_nothing_to_do(smoke_runs):
    out3 = smoke_runs["out3"]
    assert "Nothing to be done" in out3, out3[-3000:]
    assert not slurm_ids_in_log(out3), "a run with nothing to do submitted jobs"


# --- a job killed for time or memory comes back with more ----------------------------------------
#: train_erm's memory on attempt 1, 2, 3 (MB): the first is below what a training job holds (the
#: jobstep's snakemake and JAX), the second far above; an expression of the attempt, as a site
#: would write one (--set-resources accepts it)
OOM_MEM = "300*attempt**3"


def submissions(out: str) -> dict[int, list[str]]:
    """Snakemake job id -> the Slurm job ids it was submitted as, in order (one per attempt)."""
    subs: dict[int, list[str]] = {}
    for j, s in _SUBMITTED.findall(out):
        subs.setdefault(int(j), []).append(s)
    return subs


def test_a_job_over_its_time_limit_comes_back_with_more_time(cluster, time_limit_run):
    """The toy's train_erm asks for 1 min (``TIMEOUT_RUNTIME``) and runs ``TIMEOUT_SLEEP`` s: Slurm
    ends the first attempt TIMEOUT, Snakemake resubmits it with 8 min (retries), and it completes."""
    rc, out = time_limit_run.wait()
    assert rc == 0, f"snakemake failed ({rc}):\n{out[-6000:]}"
    print(f"time limit run (in the background): {elapsed(out)}")
    jobs = {j["job_id"]: j for j in cluster.jobs()}
    (ids,) = submissions(out).values()
    assert [(jobs[i]["state"], jobs[i]["time_limit"]) for i in ids] == [("TIMEOUT", "1:00"), ("COMPLETED", "8:00")], [
        jobs.get(i) for i in ids
    ]
    assert (time_limit_run.workdir / "results" / "train" / "0.txt").read_text().startswith(f"job={ids[1]} ")


@pytest.fixture(scope="module")
def retried_run(cluster, smoke_runs):
    """The memory-kill run (:func:`start_retried_run`, started by ``smoke_runs``), collected."""
    if WORKFLOW == "toy":
        pytest.skip("the training results of the smoke workflow are compared")
    run = smoke_runs["retried"]
    rc, out = run.wait()
    assert rc == 0, f"snakemake failed ({rc}):\n{out[-6000:]}"
    print(f"training run with memory kills (in the background): {elapsed(out)}")
    return dict(work=run.workdir, out=out, slurm_jobs=cluster.jobs(), memory_kills=cluster.memory_kills())


def test_a_job_over_its_memory_comes_back_with_more_memory(retried_run):
    jobs = {j["job_id"]: j for j in retried_run["slurm_jobs"]}
    compute, _ = jobs_in_log(retried_run["out"])
    subs = submissions(retried_run["out"])
    train = [j for j, rule in compute.items() if rule == "train_erm"]
    assert train, "no training batch ran"
    for j in train:
        first, second = subs[j] if len(subs[j]) == 2 else (None, None)
        assert first is not None, (j, subs[j])
        # the kill is read from slurmd's own log: Slurm 22.05 without cgroups reports a job killed by
        # OverMemoryKill as FAILED, and slurmctld may already have purged that failed record
        assert first in retried_run["memory_kills"] and second not in retried_run["memory_kills"], (j, subs[j])
        if first in jobs:
            assert (jobs[first]["state"], jobs[first]["min_memory"]) in (
                ("OUT_OF_MEMORY", "300M"),
                ("FAILED", "300M"),
            ), jobs[first]
        assert (jobs[second]["state"], jobs[second]["min_memory"]) == ("COMPLETED", "2400M"), jobs[second]
    others = [i for j, ids in subs.items() if j not in train for i in ids]
    assert others and all(jobs[i]["state"] == "COMPLETED" for i in others), "a job other than training was retried"


def training_results(config_file: Path) -> list[str]:
    """The result files of every training batch of the config in ``config_file`` (the batches'
    members, slrpipe.workflow.plan), relative to the results directory."""
    from slrpipe.config import validate
    from slrpipe.workflow import plan

    batches = plan(validate(yaml.safe_load(config_file.read_text()))).train_batches.values()
    return sorted(m.out.removeprefix("results/") for b in batches for m in b.members)


#: global attributes of a result file that record when it was written, not what it holds
WHEN_WRITTEN = ("date_created", "history")


def test_killed_and_retried_training_equals_an_undisturbed_one(retried_run, smoke_runs):
    """Every training result file of the run with memory kills (every variable, wall times aside,
    and every global attribute but when it was written) equals the smoke run's, whose one
    cancelled training batch was rerun by a fresh run (``smoke_runs``): a batch killed and redone
    leaves no trace in its numbers. The store, the figures and the validation table are made from
    these files and the theory's, which no kill touches."""
    import xarray as xr

    a, b = smoke_runs["work"] / "results", retried_run["work"] / "results"
    files = training_results(retried_run["work"] / "config" / "smoke.yaml")
    assert files
    n = 0
    for f in files:
        da, db = xr.load_dataset(a / f), xr.load_dataset(b / f)
        assert sorted(da.variables) == sorted(db.variables), f
        for name in da.variables:
            if "wall" not in name:
                xr.testing.assert_identical(da[name], db[name])
                n += 1
        when = set(WHEN_WRITTEN)
        assert {k: v for k, v in da.attrs.items() if k not in when} == {
            k: v for k, v in db.attrs.items() if k not in when
        }, f
    assert n > 0


def test_gpu_request_refused_on_gpu_less_node(cluster, tmp_path):
    """The unmodified profile on a GPU-less node: sbatch refuses the GPU job, snakemake stops."""
    if cluster.gpus:
        restart(cluster, gpus=0)
    shutil.copy2(TOY / "Snakefile", tmp_path / "Snakefile")
    (tmp_path / "results" / "data").mkdir(parents=True)
    (tmp_path / "results" / "data" / "0.txt").write_text("made locally\n")
    profile = write_test_profile(tmp_path / "profile", gpus=True)
    t0 = time.monotonic()
    rc, out = snakemake(
        tmp_path, profile, "results/train/0.txt", "--config", "n_train=1", "slow_seconds=0", timeout=120
    )
    assert rc != 0
    assert "SLURM sbatch failed" in out, out[-3000:]
    assert time.monotonic() - t0 < 60, "refusal took suspiciously long"


def test_gpu_rule_gets_a_gpu(cluster, tmp_path):
    """Fake GPUs: the profile's unchanged train_erm request lands in the GPU partition with
    CUDA_VISIBLE_DEVICES set, also as a job array (the documented opt-in ``slurm-array-jobs``)."""
    restart(cluster, gpus=2)
    shutil.copy2(TOY / "Snakefile", tmp_path / "Snakefile")
    n = 2
    (tmp_path / "results" / "data").mkdir(parents=True)
    for i in range(n):  # inputs made here: both train_erm jobs are ready at once, one array
        (tmp_path / "results" / "data" / f"{i}.txt").write_text("made locally\n")
    profile = write_test_profile(tmp_path / "profile", gpus=True, slurm_array_jobs="train_erm")
    out = run_ok(tmp_path, profile, "--config", f"n_train={n}", "slow_seconds=0")
    assert re.search(
        rf"Submitted array job with Snakemake IDs \S+ and SLURM job ID \d+\. "
        rf"The individual task IDs are 1-{n}\.",
        out,
    ), out[-3000:]
    want = profile_partitions(load_profile())["train_erm"]
    # array tasks run without srun and the jobstep drops SLURM_JOB_PARTITION: ask slurmctld
    jobs = {j["job_id"]: j for j in cluster.jobs()}
    seen = set()
    for i in range(n):
        train = dict(kv.split("=", 1) for kv in (tmp_path / f"results/train/{i}.txt").read_text().split())
        assert train["job"] in jobs, f"train_erm {i} did not run under Slurm: {train}"
        sj = jobs[train["job"]]
        assert sj["partition"] == want and sj["state"] == "COMPLETED" and "_" in sj["id"], sj
        assert re.fullmatch(r"[01]", train["cuda"]), f"CUDA_VISIBLE_DEVICES={train['cuda']!r} in train_erm"
        seen.add(train["job"])
    assert len(seen) == n, f"array tasks share a Slurm job id: {seen}"
