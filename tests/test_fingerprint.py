"""Source fingerprints: a rule's fingerprint covers exactly the slrpipe modules its command imports."""

from __future__ import annotations

import shutil

from slrpipe import fingerprint as fp


def test_closure_follows_imports_and_excludes():
    files = {p.name for p in fp.closure(["slrpipe.figures.fig3"])}
    assert {"fig3.py", "erm_vs_population.py", "style.py", "__init__.py"} <= files
    names = {
        str(p.relative_to(fp.ROOT)) for p in fp.closure(["slrpipe.analysis.aggregate"], exclude=["slrpipe.theory"])
    }
    assert "io.py" in names and not any(n.startswith("theory/") for n in names)


def _forget():
    """Drop the per-process caches of parsed sources (files are edited between fingerprints here)."""
    fp._analyse.cache_clear()


def test_fingerprint_changes_with_imported_source(tmp_path, monkeypatch):
    pkg = tmp_path / "slrpipe"
    shutil.copytree(fp.ROOT, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(fp, "ROOT", pkg)
    _forget()
    before_fig, before_io = fp.fingerprint(["slrpipe.figures.fig3"]), fp.fingerprint(["slrpipe.io"])
    style = pkg / "figures" / "style.py"
    # documentation only (a comment, a docstring): nothing reruns
    src = style.read_text()
    style.write_text(src.replace('"""', '"""Edited. ', 1) + "\n# edited\n")
    _forget()
    assert fp.fingerprint(["slrpipe.figures.fig3"]) == before_fig
    # code: what imports it reruns
    with open(style, "a") as f:
        f.write("\nEDITED = 1\n")
    _forget()
    assert fp.fingerprint(["slrpipe.figures.fig3"]) != before_fig  # fig3 imports style
    assert fp.fingerprint(["slrpipe.io"]) == before_io  # io does not
