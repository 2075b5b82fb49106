"""Import direction: layers import only downward (sigmas → vocabulary → setting → data/models/theory →
train → analysis → figures → commands/cli/config/workflow/resource_laws), checked on the syntax tree of every module, imports inside
functions included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "src" / "slrpipe"

#: rank of each top-level part of the package; a module may import parts of rank ≤ its own, and
#: parts of equal rank only within the same part (data, models and theory are independent).
RANK = {
    "sigmas": 0,
    "vocabulary": 0,
    "threads": 0,
    "cf": 0,
    "lengths": 0,
    "setting": 1,
    "io": 1,
    "provenance": 1,
    "fingerprint": 1,
    "scores": 1,
    "job_args": 1,
    "data": 2,
    "models": 2,
    "theory": 2,
    "jobs": 2,
    "train": 3,
    "manifests": 3,
    "analysis": 4,
    "figures": 5,
    "commands": 6,
    "cli": 6,
    "config": 6,
    "workflow": 6,
    "resource_laws": 6,
    "__main__": 6,
}
#: (importer, imported) pairs allowed at equal rank: the vocabulary reads the σ registry (which
#: imports nothing of slrpipe outside itself), the commands validate configs (config) and plan them
#: through the workflow's job tables, which read the validated config, and the CLI dispatches to the commands
ALLOWED_SIDEWAYS = {
    ("vocabulary", "sigmas"),
    ("commands", "config"),
    ("commands", "workflow"),
    ("workflow", "config"),
    ("cli", "commands"),
    ("__main__", "cli"),
}


def _part(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "slrpipe":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path):
    rel = path.relative_to(PKG.parent).with_suffix("")
    me = ".".join(rel.parts).removesuffix(".__init__")
    pkg = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                yield ".".join(base + ([node.module] if node.module else []))
            else:
                yield node.module or ""


def violations() -> list[str]:
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        own = _part(".".join(path.relative_to(PKG.parent).with_suffix("").parts))
        if own == "__init__":
            continue
        assert own in RANK, f"{path}: top-level part {own!r} has no rank in tests/test_layers.py"
        for mod in _imports(path):
            other = _part(mod)
            if other in (None, "__init__", own):
                continue
            if other not in RANK:
                bad.append(f"{path.relative_to(PKG)} imports unknown part {mod}")
            elif RANK[other] > RANK[own] or (RANK[other] == RANK[own] and (own, other) not in ALLOWED_SIDEWAYS):
                bad.append(f"{path.relative_to(PKG)} ({own}) imports {mod} ({other})")
    return bad


def test_layers_import_only_downward():
    assert violations() == []


@pytest.mark.parametrize("layer", ["sigmas", "vocabulary", "data", "models", "theory", "train", "analysis", "figures"])
def test_science_and_storage_never_import_commands_or_workflow(layer):
    files = [PKG / f"{layer}.py"] if (PKG / f"{layer}.py").exists() else sorted((PKG / layer).rglob("*.py"))
    assert files
    for path in files:
        for mod in _imports(path):
            assert _part(mod) not in ("commands", "cli", "config", "workflow", "resource_laws"), (
                f"{path.relative_to(PKG)} imports {mod}"
            )


def test_the_check_can_fail(tmp_path, monkeypatch):
    """The checker itself flags an upward import (an analysis module importing the workflow)."""
    fake = tmp_path / "slrpipe"
    (fake / "analysis").mkdir(parents=True)
    (fake / "analysis" / "bad.py").write_text("def f():\n    from slrpipe.workflow import plan\n")
    monkeypatch.setattr(__import__(__name__), "PKG", fake)
    assert violations() == ["analysis/bad.py (analysis) imports slrpipe.workflow (workflow)"]


def _vocabulary_words() -> dict[str, set[str]]:
    from slrpipe import vocabulary as voc

    return {
        "model": set(voc.MODELS),
        "sigma": set(voc.SIGMAS),
        "start": set(voc.INITS),
        "optimizer": set(voc.OPTIMIZERS),
    }


def vocabulary_redefinitions(pkg: Path = PKG) -> list[str]:
    """Places outside vocabulary.py that define a domain word list (a module-level name bound to a
    literal tuple/list/set of two or more model, σ, start or optimiser names) or the Bayes key scale
    c_ν (a module-level function ``c_nu``). A condition such as ``sigma in ("erf", "linear")`` is a
    use of the words, not a definition."""
    words, bad = _vocabulary_words(), []
    for path in sorted(pkg.rglob("*.py")):
        if path.name == "vocabulary.py":
            continue
        for node in ast.parse(path.read_text(), filename=str(path)).body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
                names = {e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                for kind, vocab in words.items():
                    if len(names & vocab) >= 2:
                        bad.append(f"{path.relative_to(pkg)}:{node.lineno} lists {kind} names {sorted(names & vocab)}")
            elif isinstance(node, ast.FunctionDef) and node.name == "c_nu":
                bad.append(f"{path.relative_to(pkg)}:{node.lineno} defines c_nu")
    return bad


def test_domain_words_are_defined_once_in_vocabulary():
    assert vocabulary_redefinitions() == []


def test_the_vocabulary_check_can_fail(tmp_path):
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "bad.py").write_text('ORDER = ("softmax", "linear")\ndef c_nu(m, nu):\n    return nu\n')
    assert vocabulary_redefinitions(tmp_path) == [
        "figures/bad.py:1 lists sigma names ['linear', 'softmax']",
        "figures/bad.py:2 defines c_nu",
    ]
