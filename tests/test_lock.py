"""constraints.txt is a resolver's lock of pyproject.toml (the command in its header) and pins every
requirement there; .ci/lock_check.py, the CI step after the fresh install, fails on any package or
version that differs between ``pip freeze`` and the lock."""

from __future__ import annotations

import subprocess
import sys
import tomllib

from conftest import REPO, load_file_module
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

check = load_file_module(".ci/lock_check.py")


def test_the_lock_is_generated_from_pyproject_and_pins_every_requirement():
    text = (REPO / "constraints.txt").read_text()
    assert "uv pip compile pyproject.toml --extra test --python-version 3.11" in text.splitlines()[1]
    pins = check.pins(text.splitlines())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    for req in map(Requirement, [*project["dependencies"], *project["optional-dependencies"]["test"]]):
        name = canonicalize_name(req.name)
        assert name in pins and req.specifier.contains(pins[name]), f"{req} not pinned by constraints.txt"
    assert (REPO / "constraints.txt").resolve() == REPO / "src" / "slrpipe" / "resources" / "constraints.txt"


def test_lock_check_fails_on_a_differing_environment(tmp_path):
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable"], capture_output=True, text=True, check=True
    ).stdout
    name, version = next(line for line in frozen.splitlines() if "==" in line).split("==")
    lock = tmp_path / "lock.txt"
    lock.write_text(f"# header\n{frozen}")  # the environment itself: equal
    assert check.main([str(lock)]) == 0
    lock.write_text(frozen.replace(f"{name}=={version}", f"{name}=={version}.post99") + "notinstalled==1.0\n")
    assert check.main([str(lock)]) == 1
    assert check.pins(["Foo_Bar==1.0  # via x", "", "# c"]) == {"foo-bar": "1.0"}


def test_the_gpu_lock_is_the_cpu_lock_plus_the_cuda_packages():
    cpu = check.pins((REPO / "constraints.txt").read_text().splitlines())
    text = (REPO / "constraints-cuda.txt").read_text()
    assert "--extra test --extra cuda -c constraints.txt" in text.splitlines()[1]
    gpu = check.pins(text.splitlines())
    assert {k: gpu[k] for k in cpu} == cpu  # the same versions of every CPU package
    extra = set(gpu) - set(cpu)
    assert {"jax-cuda12-plugin", "jax-cuda12-pjrt"} <= extra and gpu["jax-cuda12-plugin"] == cpu["jaxlib"]
    assert all(k.startswith(("jax-cuda12-", "nvidia-")) for k in extra), extra
