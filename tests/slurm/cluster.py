"""A one-node Slurm cluster on localhost, for testing ``profiles/slurm`` against a real scheduler.

Used by ``tests/test_slurm.py`` (fixture) and by hand::

    python tests/slurm/cluster.py install             # apt-get the Debian packages (root)
    python tests/slurm/cluster.py start --gpus 2      # prints the state dir; daemons keep running
    python tests/slurm/cluster.py stop STATE_DIR      # stops the daemons it started, by pid

Layout: Debian's slurm-wlm 22.05 + munge. The daemons run in the foreground (``-D``/``-F``) as
children of this process so that they can be stopped by pid; their state, logs and fake GPU device
files live in one temporary state dir. Clients (sbatch, squeue, and the ``srun`` that the Snakemake
jobstep executor runs inside every job, which drops ``SLURM_*`` variables such as ``SLURM_CONF``)
only find the configuration at the default path, so ``/etc/slurm/slurm.conf`` (and ``gres.conf``)
are written, marked as ours, and removed on stop; a configuration that is not ours is never touched.

Fake GPUs: Slurm 22.05 drops a GPU whose ``File=`` is missing, so each is a character device made
with ``mknod`` (the numbers of /dev/null). Slurm then sets ``CUDA_VISIBLE_DEVICES`` for jobs that
ask for a GPU, which is what the test checks.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
BINARIES = ("slurmctld", "slurmd", "sbatch", "squeue", "scancel", "munged")
CONF_DIR = Path("/etc/slurm")
MARKER = "# slrpipe-test-cluster: written by tests/slurm/cluster.py"
MUNGE_KEY = Path("/etc/munge/munge.key")
MUNGE_RUN = Path("/run/munge")
SBIN = ("/usr/sbin", "/sbin", "/usr/bin", "/bin")


def which(name: str) -> str | None:
    """``shutil.which`` that also looks in the sbin dirs (root's PATH in CI may lack them)."""
    return shutil.which(name) or shutil.which(name, path=os.pathsep.join(SBIN))


def installed() -> bool:
    """True when the daemons and client commands that the test uses are all on PATH (or sbin)."""
    return all(which(b) for b in BINARIES)


def install(timeout: float = 900) -> str | None:
    """Install Slurm and munge with apt-get unless already there.

    Returns None when Slurm is usable, else a one-line reason why it cannot be installed or run
    here (not root: needed for apt-get and for the daemons; no apt-get): the caller skips on that. apt-get failures raise ``RuntimeError`` with
    apt's output, because where apt exists a failure is a real problem, not a reason to skip.
    Service start-up by the packages is suppressed with a temporary ``/usr/sbin/policy-rc.d``
    (an existing one is left as it is).
    """
    if os.geteuid() != 0:
        return "installing and starting a local Slurm needs root (apt-get, munged, slurmd)"
    if installed():
        return None
    if not which("apt-get"):
        return "Slurm is not installed and there is no apt-get to install it"
    policy = Path("/usr/sbin/policy-rc.d")
    ours = not policy.exists()
    if ours:
        policy.write_text("#!/bin/sh\n# slrpipe test: do not start services while installing\nexit 101\n")
        policy.chmod(0o755)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        for cmd in (
            ["apt-get", "update", "-qq"],
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES],
        ):
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
            if r.returncode:
                raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    finally:
        if ours:
            policy.unlink(missing_ok=True)
    if not installed():
        raise RuntimeError(f"apt-get install {' '.join(PACKAGES)} left some of {BINARIES} missing")
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _munge_works() -> bool:
    try:
        cred = subprocess.run([which("munge") or "munge", "-n"], capture_output=True, timeout=10)
        if cred.returncode:
            return False
        return (
            subprocess.run(
                [which("unmunge") or "unmunge"], input=cred.stdout, capture_output=True, timeout=10
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


class LocalSlurm:
    """slurmctld + slurmd (+ munged if none runs) on localhost, started and stopped by pid.

    Parameters
    ----------
    state_dir : directory for Slurm state, logs and fake device files (created; kept on stop so
        that logs can be read after a failure).
    gpus : number of fake GPUs the node declares (``Gres=gpu:N``); 0 means a GPU-less node, where
        Slurm refuses any job that asks for a GPU at submission.
    partitions : partition names to create on the node, first is the default (use the names the
        profile asks for, so that the profile is tested unchanged).
    cpus, memory_mb : the node as declared to Slurm; at least the machine's (``slurmd -C``),
        larger values let the profile's real requests be scheduled (``config_overrides``), the
        jobs then share the real cores.
    min_job_age : seconds a finished job stays visible to ``squeue``; the plugin's squeue status
        command needs ``min_job_age >= 3 * slurm-init-seconds-before-status-checks``.

    Raises ``RuntimeError`` when a Slurm configuration that is not ours exists or the cluster does
    not come up (with the daemon logs).
    """

    def __init__(
        self,
        state_dir: Path,
        gpus: int = 0,
        partitions=("cpu", "gpu"),
        cpus: int = 0,
        memory_mb: int = 0,
        min_job_age: int = 300,
    ):
        if gpus < 0:
            raise ValueError(f"gpus: must be >= 0, got {gpus}")
        if min_job_age < 1:
            raise ValueError(f"min_job_age: must be >= 1 s, got {min_job_age}")
        self.state = Path(state_dir)
        self.gpus = gpus
        self.partitions = list(dict.fromkeys(partitions))
        self.cpus, self.memory_mb, self.min_job_age = cpus, memory_mb, min_job_age
        self.host = socket.gethostname().split(".")[0]
        self.procs: dict[str, subprocess.Popen] = {}

    # --- configuration -------------------------------------------------------------------------
    def _machine(self) -> tuple[int, int]:
        out = subprocess.run([which("slurmd"), "-C"], capture_output=True, text=True, check=True).stdout
        fields = dict(kv.split("=", 1) for kv in out.split() if "=" in kv)
        # Debian's recipe: leave 1 GiB to the OS
        return int(fields["CPUs"]), max(int(fields["RealMemory"]) - 1024, 512)

    def render(self) -> tuple[str, str | None]:
        """Text of slurm.conf and gres.conf (None without GPUs)."""
        cpus, mem = self._machine()
        devs = [self.state / "dev" / f"fakegpu{i}" for i in range(self.gpus)]
        fields = dict(
            host=self.host,
            ctld_port=_free_port(),
            slurmd_port=_free_port(),
            state=self.state,
            min_job_age=self.min_job_age,
            cpus=max(cpus, self.cpus),
            memory_mb=max(mem, self.memory_mb),
            gres_types="GresTypes=gpu" if self.gpus else "",
            node_gres=f"Gres=gpu:{self.gpus} " if self.gpus else "",
            partitions="\n".join(
                f"PartitionName={p} Nodes={self.host} Default={'YES' if i == 0 else 'NO'} MaxTime=INFINITE State=UP"
                for i, p in enumerate(self.partitions)
            ),
        )
        conf = MARKER + "\n" + (HERE / "slurm.conf.in").read_text().format(**fields)
        gres = None
        if self.gpus:
            gres = (
                MARKER
                + "\n"
                + (HERE / "gres.conf.in")
                .read_text()
                .format(host=self.host, files="\n".join(f"NodeName={self.host} Name=gpu File={d}" for d in devs))
            )
        return conf, gres

    def _write_config(self):
        for name in ("slurm.conf", "gres.conf"):
            p = CONF_DIR / name
            if p.exists() and MARKER not in p.read_text():
                raise RuntimeError(f"{p} exists and was not written by this test; refusing to overwrite it")
        for sub in ("ctld", "slurmd", "dev"):
            (self.state / sub).mkdir(parents=True, exist_ok=True)
        for i in range(self.gpus):
            dev = self.state / "dev" / f"fakegpu{i}"
            if not dev.exists():
                os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        conf, gres = self.render()
        CONF_DIR.mkdir(parents=True, exist_ok=True)
        (CONF_DIR / "slurm.conf").write_text(conf)
        if gres:
            (CONF_DIR / "gres.conf").write_text(gres)
        else:
            (CONF_DIR / "gres.conf").unlink(missing_ok=True)

    # --- daemons -------------------------------------------------------------------------------
    def _spawn(self, name: str, argv: list[str], **kw):
        log = open(self.state / f"{name}.stdout", "ab")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **kw)
        log.close()

    def _start_munge(self):
        if _munge_works():  # a munged is already serving /run/munge: use it, it is not ours to stop
            return
        if not MUNGE_KEY.exists():
            subprocess.run([which("mungekey") or "mungekey", "--create"], check=True)
            shutil.chown(MUNGE_KEY, "munge", "munge")
        MUNGE_RUN.mkdir(mode=0o755, exist_ok=True)
        shutil.chown(MUNGE_RUN, "munge", "munge")
        # munged refuses to run as root; Popen(user=...) execs it directly so that pid is munged's
        self._spawn("munged", [which("munged"), "--foreground"], user="munge", group="munge")
        self._wait(_munge_works, 20, "munged did not answer on /run/munge")

    def _node_state(self) -> str:
        r = subprocess.run([which("sinfo"), "-h", "-N", "-o", "%T"], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else ""

    def _wait(self, ok, timeout: float, what: str):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if ok():
                return
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited ({p.returncode}) while waiting: {what}\n{self.logs()}")
            time.sleep(0.3)
        raise RuntimeError(f"timeout after {timeout} s: {what}\n{self.logs()}")

    def start(self, timeout: float = 60) -> LocalSlurm:
        """Write the configuration and start the daemons; returns when the node is idle."""
        self.state.mkdir(parents=True, exist_ok=True)
        self._write_config()
        try:
            self._start_munge()
            # -c: cold start, no job or node state from an earlier cluster in this state dir
            self._spawn("slurmctld", [which("slurmctld"), "-D", "-c", "-i"])
            self._spawn("slurmd", [which("slurmd"), "-D", "-N", self.host])
            self._wait(
                lambda: self._node_state().split("\n")[0] in ("idle", "mixed", "allocated"),
                timeout,
                "node did not become idle",
            )
        except BaseException:
            self.stop()  # no daemon outlives a failed start
            raise
        return self

    def stop(self, timeout: float = 30):
        """Cancel our jobs, stop the daemons we started (by pid), remove our configuration."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            subprocess.run([which("scancel"), "--user", str(os.getuid())], capture_output=True)
            t0 = time.monotonic()
            while time.monotonic() - t0 < timeout and self.active_jobs():
                time.sleep(0.5)
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.procs.pop(name, None)
            if p is None or p.poll() is not None:
                continue
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for name in ("slurm.conf", "gres.conf"):
            p = CONF_DIR / name
            if p.exists() and MARKER in p.read_text():
                p.unlink()

    def restart(self, gpus: int) -> LocalSlurm:
        """Stop and start again with another number of fake GPUs (gres are read at start only)."""
        self.stop()
        self.gpus = gpus
        return self.start()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # --- queries -------------------------------------------------------------------------------
    def jobs(self) -> list[dict]:
        """All jobs still known to slurmctld (finished ones for ``min_job_age`` s): dicts with
        id (``<array id>_<task>`` for array tasks), job_id (unique, = $SLURM_JOB_ID), name, state, comment (the plugin writes ``rule_<rule>[_wildcards_...]``), partition,
        tres (allocated trackable resources, e.g. ``cpu=1,mem=4000M,node=1,gres/gpu=1``), cpus,
        min_memory (e.g. ``4000M``), time_limit (e.g. ``1:00``), work_dir (the directory sbatch
        was run in: tells apart the jobs of workflows run side by side)."""
        fmt = "%i|%A|%j|%T|%k|%P|%b|%C|%m|%l|%Z"
        r = subprocess.run(
            [which("squeue"), "--states=all", "--noheader", f"--format={fmt}"],
            capture_output=True,
            text=True,
            check=True,
        )
        keys = (
            "id",
            "job_id",
            "name",
            "state",
            "comment",
            "partition",
            "tres_per_node",
            "cpus",
            "min_memory",
            "time_limit",
            "work_dir",
        )
        return [dict(zip(keys, line.split("|"))) for line in r.stdout.splitlines() if line.strip()]

    def memory_kills(self) -> set[str]:
        """Ids of the jobs that slurmd killed for exceeding their memory (``JobAcctGatherParams=
        OverMemoryKill``: Slurm 22.05 then reports the job ``FAILED``, its log says why)."""
        import re

        log = self.state / "slurmd.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        return set(
            re.findall(r"\[(\d+)\.\w+\] error: (?:StepId=\S+ exceeded memory limit|Exceeded job memory limit)", text)
        )

    def active_jobs(self) -> list[dict]:
        """The jobs of :meth:`jobs` that have not ended."""
        return [j for j in self.jobs() if j["state"] in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING")]

    def logs(self, tail: int = 40) -> str:
        """Last ``tail`` lines of every daemon log in the state dir, for error messages."""
        out = []
        for f in sorted(self.state.glob("*.log")) + sorted(self.state.glob("*.stdout")):
            lines = f.read_text(errors="replace").splitlines()[-tail:]
            out.append(f"--- {f.name} (last {tail} lines) ---\n" + "\n".join(lines))
        return "\n".join(out)


def _main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("install")
    st = sub.add_parser("start")
    st.add_argument("--gpus", type=int, default=0)
    st.add_argument("--state-dir", type=Path, default=None)
    st.add_argument("--partitions", default="cpu,gpu")
    sp = sub.add_parser("stop")
    sp.add_argument("state_dir", type=Path)
    a = ap.parse_args(argv)
    if a.cmd == "install":
        reason = install()
        print(reason or "slurm installed")
        return 1 if reason else 0
    if a.cmd == "start":
        state = a.state_dir or Path(tempfile.mkdtemp(prefix="slrpipe-slurm-"))
        c = LocalSlurm(state, gpus=a.gpus, partitions=a.partitions.split(",")).start()
        # the daemons are our children: detach them from this process so that they outlive it
        pids = {n: p.pid for n, p in c.procs.items()}
        (state / "pids.json").write_text(json.dumps(pids))
        print(state)
        return 0
    # stop from another process: signal the recorded pids
    pids = json.loads((a.state_dir / "pids.json").read_text())
    subprocess.run([which("scancel"), "--user", str(os.getuid())], capture_output=True)
    for name in ("slurmd", "slurmctld", "munged"):
        if name in pids:
            try:
                os.kill(pids[name], signal.SIGTERM)
            except ProcessLookupError:
                pass
    for name in ("slurm.conf", "gres.conf"):
        p = CONF_DIR / name
        if p.exists() and MARKER in p.read_text():
            p.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(_main())
