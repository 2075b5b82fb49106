"""The Slurm requests of the workflow's jobs: one key per rule family overrides a request from the
command line (``--set-resources``) and from the installed ``slurm`` profile, over the measured law;
every job's command line stays short (its members come from a manifest file); the laws and the
manifests themselves."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, copy_workflow, snakemake

from slrpipe.config import validate
from slrpipe.jobs import TrainBatchJob, TrainJob
from slrpipe.manifests import manifest_text, write_manifest
from slrpipe.resource_laws import LAWS, first_attempt, replica_resources, rsb1_resources
from slrpipe.workflow import plan

#: a value per overridable resource, none of them what the law or the profile gives
OVERRIDES = {
    "mem_mb": ("2000", "mem_mb=2000"),
    "runtime": ("7", "runtime=7"),
    "slurm_partition": ("'short'", "slurm_partition=short"),
}
#: the longest command line a job may have (bytes)
MAX_COMMAND = 8192


def dry_run_resources(out: str, rule: str) -> list[str]:
    """The ``resources:`` line of every job of ``rule`` in a dry run's output."""
    return re.findall(rf"^rule {rule}:\n(?:    .*\n)*?    resources: (.*)$", out, re.M)


@pytest.fixture(scope="module")
def wf(tmp_path_factory):
    return copy_workflow(tmp_path_factory.mktemp("wf"))


def install_slurm_profile(xdg: Path, train_erm: dict) -> dict:
    """``slrpipe install-profile slurm`` into ``xdg``, with ``train_erm`` added to its train_erm
    set-resources entry (the documented site edit); returns the environment that finds it."""
    env = dict(os.environ, XDG_CONFIG_HOME=str(xdg))
    subprocess.run([sys.executable, "-m", "slrpipe", "install-profile", "slurm"], env=env, check=True)
    path = xdg / "snakemake" / "slurm" / "config.yaml"
    profile = yaml.safe_load(path.read_text())
    profile["set-resources"]["train_erm"].update(train_erm)
    path.write_text(yaml.safe_dump(profile, sort_keys=False))
    return env


@pytest.mark.slow
@pytest.mark.parametrize("resource", sorted(OVERRIDES))
def test_one_key_overrides_the_training_batches(wf, tmp_path, resource):
    """``--set-resources train_erm:<resource>=…`` and the same key in the installed slurm profile:
    the dry run plans the whole run and every training batch requests the value given."""
    value, shown = OVERRIDES[resource]
    cli = snakemake(wf, "-n", "--configfile", "config/smoke.yaml", "--set-resources", f"train_erm:{resource}={value}")
    env = install_slurm_profile(tmp_path, {resource: yaml.safe_load(value) if resource != "slurm_partition" else value})
    prof = subprocess.run(
        [
            str(Path(sys.executable).parent / "snakemake"),
            "-n",
            "--profile",
            "slurm",
            "--configfile",
            "config/smoke.yaml",
        ],
        cwd=wf,
        env=dict(env, PYTHONPATH=str(wf / "src")),
        capture_output=True,
        text=True,
        check=True,
    )
    for out in (cli.stdout, prof.stdout):
        assert "This was a dry-run" in out and re.search(r"^all\s+1$", out, re.M), out[-2000:]
        lines = dry_run_resources(out, "train_erm")
        assert len(lines) == 2 and all(re.search(rf"(^|, ){shown}(,|$)", line) for line in lines), lines
    # the other families keep the workflow's law
    replica = dry_run_resources(cli.stdout, "replica")
    assert replica and not any(re.search(rf"(^|, ){shown}(,|$)", line) for line in replica), replica


def test_laws_grow_with_the_job_and_unknown_families_raise():
    cfg = validate(yaml.safe_load((REPO / "config" / "rsb1.yaml").read_text()))
    p = plan(cfg)
    for job in p.rsb1.values():
        small = rsb1_resources(job)
        bigger = rsb1_resources(dataclasses.replace(job, n_outer=4 * job.n_outer))
        assert bigger["mem_mb"] > small["mem_mb"] and bigger["runtime"] > small["runtime"]
        assert first_attempt("rsb1_error", job)["runtime"] <= small["runtime"]
    for job in p.replica.values():
        r = replica_resources(job)
        assert replica_resources(dataclasses.replace(job, n_samples=4 * job.n_samples))["runtime"] > r["runtime"]
    assert set(LAWS) >= {"train_erm", "population", "replica", "rsb1", "rsb1_error", "generate_data", "length"}
    with pytest.raises(KeyError, match="no resource law for rule 'trian_erm'; allowed"):
        first_attempt("trian_erm", None)


def test_manifest_is_written_once_and_atomically(tmp_path):
    job = TrainJob(model="spiked", nu=1.0, L=2, delta=0.0, D=10, n=20, teacher_seed=0, data_seed=1, out="a.nc")
    text = manifest_text(TrainBatchJob(members=[job]))
    path = tmp_path / "plan" / "train_erm" / "b.json"
    assert write_manifest(text, path) and path.read_text() == text
    mtime = path.stat().st_mtime_ns
    assert not write_manifest(text, path) and path.stat().st_mtime_ns == mtime  # unchanged: not rewritten
    assert write_manifest(text.replace('"a.nc"', '"b.nc"'), path) and '"b.nc"' in path.read_text()
    assert [p.name for p in path.parent.iterdir()] == ["b.json"]  # no temporary sibling left


def test_batch_command_reads_its_members_from_the_file(tmp_path):
    from slrpipe.cli import main

    bad = tmp_path / "m.json"
    bad.write_text("[{}]")
    assert main(["train-batch", "--members-file", str(bad)]) == 2
    assert main(["train-batch", "--members-file", str(tmp_path / "missing.json")]) == 2


@pytest.mark.slow
def test_every_command_line_is_short_for_every_shipped_config(wf):
    """The dry run of every config in config/: no job's shell command exceeds 8 kB."""
    longest = {}
    for cfg in sorted((wf / "config").glob("*.yaml")):
        out = snakemake(wf, "-n", "-p", "--configfile", f"config/{cfg.name}").stdout
        cmds = [line.removeprefix("Shell command: ") for line in out.splitlines() if line.startswith("Shell command: ")]
        assert cmds, f"{cfg.name}: no shell command in the dry run"
        longest[cfg.name] = max(len(c.encode()) for c in cmds)
    print("longest shell command per config:", longest)
    assert max(longest.values()) <= MAX_COMMAND, longest


def test_profiles_keep_to_their_layer_and_no_rule_reads_snakemake_internals():
    """The workflow profile sets no resource key (Snakemake's per-key merge would hide a site's);
    the slurm profile no memory or runtime (the rules' laws); the rules read no private state."""
    default = yaml.safe_load((REPO / "profiles" / "default" / "config.yaml").read_text())
    assert not {"set-resources", "default-resources", "set-threads", "resources"} & set(default)
    slurm = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    for entry in [slurm["default-resources"], *slurm["set-resources"].values()]:
        assert not {"mem_mb", "runtime"} & set(entry), entry
    for smk in [REPO / "Snakefile", *(REPO / "workflow" / "rules").glob("*.smk")]:
        text = smk.read_text()
        assert "resource_settings" not in text and "._value" not in text and "workflow._" not in text, smk


def test_a_sentinel_is_stale_only_for_its_own_member_list(tmp_path):
    from slrpipe.manifests import stale_sentinel

    member, done = tmp_path / "a.nc", tmp_path / "b.done"
    assert not stale_sentinel(done, "d1", [member])  # no sentinel: nothing to remove
    done.write_text("d1\n")
    assert stale_sentinel(done, "d1", [member])  # made with these members, one missing
    assert not stale_sentinel(done, "d2", [member])  # another member list: its digest param reruns it
    member.write_text("x")
    assert not stale_sentinel(done, "d1", [member])


def test_a_sentinel_follows_its_newest_member(tmp_path):
    from slrpipe.manifests import follow_members, stale_sentinel

    member, done = tmp_path / "a.nc", tmp_path / "b.done"
    member.write_text("x")
    assert not follow_members(done, [member])  # no sentinel
    done.write_text("d1\n")
    later = done.stat().st_mtime_ns + 10**9
    os.utime(member, ns=(later, later))  # edited after its batch
    assert follow_members(done, [member]) and done.read_text() == f"d1\nmember modified {later}\n"
    assert stale_sentinel(done, "d1", [tmp_path / "gone.nc"])  # the digest line still counts
    assert not follow_members(done, [member, tmp_path / "missing.nc"])
