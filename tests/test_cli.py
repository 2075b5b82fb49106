"""``python -m slrpipe`` as the workflow runs it: its exit status and its output survive the fast
exit (``os._exit`` after the exit handlers, slrpipe/__main__.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from slrpipe.cli import COMMANDS


def _run(*args):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout block-buffered, as in a pipe
    return subprocess.run([sys.executable, "-m", "slrpipe", *args], capture_output=True, text=True, env=env)


def test_help_reaches_a_pipe_whole_with_status_0():
    # the usage text sits in stdout's buffer until the exit flushes it
    r = _run("--help")
    assert r.returncode == 0, r.stderr
    assert all(name in r.stdout for name in COMMANDS)


def test_a_bad_parameter_is_one_line_and_status_2(tmp_path):
    r = _run(
        "replica", "--model", "spiked", "--nu", "-1", "--L", "3", "--alpha-grid", "1", "--out", str(tmp_path / "x.nc")
    )
    assert r.returncode == 2
    assert "nu: must be ≥ 0" in r.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "x.nc").exists()


def test_an_uncaught_error_keeps_its_traceback_and_status_1(tmp_path):
    # no store there: FileNotFoundError is not a parameter error, so it propagates as a traceback
    r = _run(
        "figure", "fig2", "--store", str(tmp_path / "none.zarr"), "--experiments", "a", "--out", str(tmp_path / "f")
    )
    assert r.returncode == 1
    assert "Traceback" in r.stderr and r.stderr.strip().splitlines()[-1].startswith("FileNotFoundError: no store at")
