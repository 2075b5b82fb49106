"""The package works as a plain (non-editable) install: its schema, constraints and Slurm profile are
package data (importlib.resources), so the workflow runs with the package installed into a folder of
its own and no source tree on the path. The config is a cut-down smoke config (one ERM point, one
replica point, one population sweep: every step and the package data each needs); the full
config/smoke.yaml ran the same way by hand (``SLRPIPE_INSTALL_CONFIG=config/smoke.yaml``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import xarray as xr
import yaml
from conftest import WORKFLOW_PARTS, copy_workflow, share_jax_cache

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


#: one point of each kind: the ERM point and the replica point share their setting and grids; the
#: sizes are config/smoke.yaml's (D, n, channel samples), so that its XLA programs are shared
#: through the session's compilation cache (conftest.share_jax_cache)
_POINT = {"model": "spiked", "L": 2, "nu": 2.0, "sigmas": ["softmax"], "alphas": [2.0], "lams": [0.1]}
MINI = {
    "population": {"p": {"model": "spiked", "L": 2, "nu": [2.0], "sigmas": ["bayes", "softmax"]}},
    "erm": {"e": dict(_POINT, seeds=[0], D=40, max_iter=50, n_test=500, store_data=False)},
    "replica": {"e": dict(_POINT, n_samples=512, erm="e")},
    "validation": {"fail": False},
    "figures": {"fig2": ["p"], "fig3": ["e"]},
}


def test_non_editable_install_runs_the_workflow(tmp_path):
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(REPO)],
        check=True,
        capture_output=True,
        text=True,
    )
    pkg = site / "slrpipe"
    for data in ("resources/config.schema.yaml", "resources/constraints.txt", "resources/profiles/slurm/config.yaml"):
        assert (pkg / data).is_file(), f"{data} is not installed with the package"
    wd = tmp_path / "wf"  # the workflow's files, no src/
    wd.mkdir()
    copy_workflow(wd, parts=[p for p in WORKFLOW_PARTS if p != "src"])
    share_jax_cache(wd)
    config = os.environ.get("SLRPIPE_INSTALL_CONFIG")
    if config is None:
        config = "config/mini.yaml"
        (wd / config).write_text(yaml.safe_dump(MINI))
    env = dict(
        os.environ,
        PYTHONPATH=str(site),
        PYTHONUNBUFFERED="1",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "snakemake"), "--cores", "2", "--configfile", config],
        cwd=wd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    # every job imported the installed package, not a source tree
    probe = subprocess.run(
        [sys.executable, "-c", "import slrpipe; print(slrpipe.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=wd,
    )
    assert probe.stdout.strip().startswith(str(site))
    tree = xr.open_datatree(wd / "results" / "slr.zarr", engine="zarr", consolidated=False)
    assert "erm" in tree.children and (wd / "results" / "figures" / "fig3.png").stat().st_size > 5000
    assert tree.attrs["constraints_sha256"] != "unknown"  # the shipped constraints.txt was found
