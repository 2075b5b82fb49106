"""scripts/: thin command lines over library functions — none imports another script or a private
name of the package, and scripts/README.md lists exactly the scripts there; benchmarks/ import no
private name of the package either, nor does one module of the package from another."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
BENCHMARKS = SCRIPTS.parent / "benchmarks"


def problems(path: Path, scripts: set[str]) -> list[str]:
    """What ``path`` imports that a script may not: another script of ``scripts`` (their stems) or a
    private name (``_x``) of the package, imported or read as an attribute of an imported module."""
    bad, modules = [], set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in scripts:
                    bad.append(f"imports the script {a.name}")
                if a.name.startswith("slrpipe"):
                    modules.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in scripts:
                bad.append(f"imports the script {node.module}")
            if node.module.startswith("slrpipe"):
                bad += [
                    f"imports the private name {node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
                modules.update(a.asname or a.name for a in node.names)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if isinstance(node.value, ast.Name) and node.value.id in modules:
                bad.append(f"reads the private name {node.value.id}.{node.attr}")
    return bad


@pytest.mark.parametrize("path", sorted(SCRIPTS.glob("*.py")), ids=lambda p: p.name)
def test_a_script_imports_no_script_and_no_private_name(path):
    assert problems(path, {p.stem for p in SCRIPTS.glob("*.py")}) == []


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("*.py")), ids=lambda p: p.name)
def test_a_benchmark_imports_no_private_name(path):
    assert problems(path, {p.stem for p in SCRIPTS.glob("*.py")}) == []


@pytest.mark.parametrize(
    "path", sorted((SCRIPTS.parent / "src" / "slrpipe").rglob("*.py")), ids=lambda p: str(p.relative_to(SCRIPTS.parent))
)
def test_a_package_module_imports_no_private_name_of_another(path):
    assert problems(path, set()) == []


def test_the_check_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from other import f\nfrom slrpipe.figures.optimization import _setting\n"
        "from slrpipe.theory.replica import rsb1\nrsb1._scan(1)\n"
    )
    assert problems(bad, {"other", "bad"}) == [
        "imports the script other",
        "imports the private name slrpipe.figures.optimization._setting",
        "reads the private name rsb1._scan",
    ]


def test_the_readme_lists_exactly_the_scripts():
    listed = set(re.findall(r"^\| `(\w+\.py)", (SCRIPTS / "README.md").read_text(), re.M))
    assert listed == {p.name for p in SCRIPTS.glob("*.py")}
