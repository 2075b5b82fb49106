"""The Slurm profile (profiles/slurm) as installed for the local one-node Slurm of ``cluster.py``:
read it, size the node for its requests, install it with the few settings this cluster needs.

Shared by ``tests/test_slurm.py`` and ``benchmarks/bench_rehearsal.py``. The overrides, all written
into the installed copy (the repository's profile is never edited):
``slurm-status-command: squeue`` and a short ``slurm-init-seconds-before-status-checks`` (no
slurmdbd here; production keeps sacct) and, for a GPU-less node only, the GPU keys dropped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "profiles" / "slurm" / "config.yaml"
GPU_KEYS = ("gpu", "gpu_model", "gres")


def load_profile() -> dict:
    """profiles/slurm/config.yaml as a dict."""
    return yaml.safe_load(PROFILE.read_text())


def unquote(v) -> str:
    """A resource value without the inner quotes that Snakemake's expressions need ("'cpu'" -> cpu)."""
    return str(v).strip("'\"")


def family(rule: str) -> str:
    """The rule name a profile addresses: the batch rules (population__<batch>, train_erm__<batch>) are
    a family each."""
    return rule.split("__")[0]


def profile_partitions(profile: dict) -> dict[str, str]:
    """rule name (or '*' for the default) -> partition the profile sends it to."""
    out = {"*": unquote(profile["default-resources"]["slurm_partition"])}
    for rule, res in (profile.get("set-resources") or {}).items():
        if "slurm_partition" in res:
            out[rule] = unquote(res["slurm_partition"])
    return out


def profile_node_size(profile: dict) -> tuple[int, int]:
    """Largest number of cores (threads or cpus_per_task) and mem_mb any rule asks for."""
    entries = [profile["default-resources"], *(profile.get("set-resources") or {}).values()]
    cpus = [int(e.get("cpus_per_task", 1)) for e in entries] + [
        int(t) for t in (profile.get("set-threads") or {}).values()
    ]
    return max(cpus), max(int(e.get("mem_mb", 0)) for e in entries)


def install_profile(xdg: Path, *, gpus: bool, init_seconds: int, **extra) -> Path:
    """Install the profile as the named profile ``slurm`` under ``xdg`` (used as XDG_CONFIG_HOME)
    by the README's setup step, then apply the local-cluster overrides and ``extra`` (option names
    with ``_`` for ``-``) to the installed copy; returns ``xdg``.

    Raises ``AssertionError`` when ``install-profile`` did not install profiles/slurm unchanged."""
    env = dict(os.environ, XDG_CONFIG_HOME=str(xdg))
    subprocess.run(
        [sys.executable, "-m", "slrpipe", "install-profile", "slurm"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    installed = xdg / "snakemake" / "slurm" / "config.yaml"
    p = yaml.safe_load(installed.read_text())
    assert p == load_profile(), "install-profile did not install profiles/slurm unchanged"
    p["slurm-status-command"] = "squeue"
    p["slurm-init-seconds-before-status-checks"] = init_seconds
    p.update({k.replace("_", "-"): v for k, v in extra.items()})
    if not gpus:  # a GPU-less node refuses GPU requests at submission
        for res in [p["default-resources"], *(p.get("set-resources") or {}).values()]:
            for k in GPU_KEYS:
                res.pop(k, None)
    installed.write_text(yaml.safe_dump(p, sort_keys=False))
    return xdg
