"""The Slurm profile (profiles/slurm) as installed for the local one-node Slurm of ``cluster.py``:
read it, size the node for the workflow's requests, install it with the few settings this cluster
needs.

Shared by ``tests/test_slurm.py`` and ``benchmarks/_workflow_rehearsal.py``. The overrides, all written
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
    """The rule name a profile addresses (every rule is its own family: a batch is a wildcard)."""
    return rule


def profile_partitions(profile: dict) -> dict[str, str]:
    """rule name (or '*' for the default) -> partition the profile sends it to."""
    out = {"*": unquote(profile["default-resources"]["slurm_partition"])}
    for rule, res in (profile.get("set-resources") or {}).items():
        if "slurm_partition" in res:
            out[rule] = unquote(res["slurm_partition"])
    return out


def first_attempts(config: dict) -> list[tuple[str, dict]]:
    """(rule, first-attempt request {mem_mb, runtime}) of every compute job of ``config`` (a config
    dict), as the workflow's rules request them (slrpipe.resource_laws.first_attempt)."""
    from slrpipe.config import validate
    from slrpipe.resource_laws import first_attempt
    from slrpipe.workflow import plan

    p = plan(validate(config))
    records = {
        "generate_data": p.data.values(),
        "train_erm": p.train_batches.values(),
        "population": p.population_batches.values(),
        "replica": p.replica.values(),
        "rsb1": p.rsb1.values(),
        "rsb1_error": [p.rsb1[e.rsb1] for e in p.rsb1_error.values()],
        "length": p.length.values(),
    }
    return [(rule, first_attempt(rule, r)) for rule, rs in records.items() for r in rs]


def profile_node_size(profile: dict, config: dict) -> tuple[int, int]:
    """Largest number of cores (threads or cpus_per_task) any rule asks for in ``profile``, and the
    largest mem_mb a job of ``config`` asks for (its rule's request, or the profile's override)."""
    entries = [profile["default-resources"], *(profile.get("set-resources") or {}).values()]
    cpus = [int(e.get("cpus_per_task", 1)) for e in entries] + [
        int(t) for t in (profile.get("set-threads") or {}).values()
    ]
    overrides = profile.get("set-resources") or {}
    mem = [int(overrides.get(rule, {}).get("mem_mb", req["mem_mb"])) for rule, req in first_attempts(config)]
    return max(cpus), max(mem, default=0)


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
