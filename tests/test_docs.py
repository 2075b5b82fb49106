"""The repository stands alone: every section reference resolves, docs cite nothing outside it.

Cheap text checks over the tracked sources; they fail on a dangling "docs/model.md §n", a link to a
file outside the repository, or a repository path named in the docs that does not exist.
"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("model.md", "theory.md", "validation.md", "results.md")
TEXT_SUFFIXES = {".py", ".md", ".smk", ".yaml", ".yml", ".rst", ".toml", ".txt", ""}


def _tracked_text_files():
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    files = [ROOT / f for f in out if Path(f).suffix in TEXT_SUFFIXES]
    return [f for f in files if f.is_file() and f.name != "test_docs.py"]


def _sections(doc):
    """Top-level section numbers of docs/<doc> ('## 4. Title' → '4')."""
    text = (ROOT / "docs" / doc).read_text()
    return set(re.findall(r"^## (\d+)\.", text, flags=re.M))


def test_section_references_resolve():
    sections = {doc: _sections(doc) for doc in DOCS}
    assert all(sections.values()), f"each of {DOCS} must have numbered sections"
    pattern = re.compile(r"(model|theory|validation|results)\.md\s+§+\s*(\d+)(?:\s*[–-]\s*(\d+))?")
    dangling, count = [], 0
    for path in _tracked_text_files():
        for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for doc, first, last in pattern.findall(line):
                count += 1
                for n in range(int(first), int(last or first) + 1):
                    if str(n) not in sections[f"{doc}.md"]:
                        dangling.append(f"{path.relative_to(ROOT)}:{lineno}: {doc}.md §{n}")
    assert count > 50, f"only {count} section references found: has the pattern drifted?"
    assert not dangling, "dangling section references:\n" + "\n".join(dangling)


def _section_bodies(doc):
    """{'N': the text of section N} of docs/<doc> (from its '## N.' heading to the next one)."""
    text = (ROOT / "docs" / doc).read_text()
    parts = re.split(r"^## (\d+)\.[^\n]*$", text, flags=re.M)
    return {parts[i]: " ".join(parts[i + 1].split()) for i in range(1, len(parts), 2)}


#: a citation "docs/<file>.md §N": a chain of sections (§a, §b–§c, §d and §e), each optionally with a
#: regime "(ii)", and optionally a named paragraph ', "Title"' after the chain
_CHAIN = re.compile(
    r"docs/(\w+)\.md((?:(?:\s*,\s*|\s+and\s+|\s*)§+\s*\d+(?:\s*[–-]\s*§*\s*\d+)?(?:\s*\((?:[ivx]+|0)\))?)+)"
    r'(?:,\s*"([^"]+)")?'
)
_ITEM = re.compile(r"§+\s*(\d+)(?:\s*[–-]\s*§*\s*(\d+))?(?:\s*\(([ivx]+|0)\))?")
#: where code and config cite the docs (CHANGELOG.md, a record, may cite what no longer exists)
CITING = ("src", "workflow", "scripts", "benchmarks", "tests", "config", "docs", "README.md", "Snakefile")


def test_doc_citations_in_code_resolve_to_headings():
    """Every "docs/<file>.md §N" in the sources, workflow, scripts, benchmarks, tests, configs and
    docs names a file of docs/ and an existing "## N." heading of it (each section of a chain and a
    range), a cited regime "§N (ii)" appears in that section, and a cited paragraph
    '§N, "Title"' is named in it (case-insensitive). Line breaks inside a citation are allowed."""
    bodies = {p.stem: _section_bodies(p.name) for p in (ROOT / "docs").glob("*.md")}
    bad, count = [], 0
    for path in _tracked_text_files():
        rel = path.relative_to(ROOT)
        if rel.parts[0] not in CITING:
            continue
        text = " ".join(path.read_text(errors="replace").split())  # a citation may wrap
        for m in _CHAIN.finditer(text):
            doc, chain, title = m.group(1), m.group(2), m.group(3)
            where = f"{rel}: docs/{doc}.md{chain}" + (f', "{title}"' if title else "")
            if doc not in bodies:
                bad.append(f"{where}: no docs/{doc}.md")
                continue
            items = _ITEM.findall(chain)
            for first, last, regime in items:
                count += 1
                for n in range(int(first), int(last or first) + 1):
                    if str(n) not in bodies[doc]:
                        bad.append(f"{where}: no heading '## {n}.'")
                if regime and str(int(first)) in bodies[doc] and f"({regime})" not in bodies[doc][first]:
                    bad.append(f"{where}: no ({regime}) in §{first}")
            if title and items:
                section = bodies[doc].get(items[-1][0], "")
                if " ".join(title.split()).lower() not in section.lower():
                    bad.append(f"{where}: no paragraph named {title!r} in §{items[-1][0]}")
    assert count > 150, f"only {count} section citations found: has the pattern drifted?"
    assert not bad, "citations that do not resolve:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "forbidden",
    [r"/w[o]rk/", r"\.\./shared", r"task brief", r"seed document", r"file://", r"/home/\w+"],
)
def test_nothing_cited_outside_the_repository(forbidden):
    hits = []
    for path in _tracked_text_files():
        if path.parts[-2:-1] == ("tests",) and path.name.startswith("test_slurm"):
            continue  # the Slurm test names container paths of its own cluster
        for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if re.search(forbidden, line, flags=re.I):
                hits.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()[:100]}")
    assert not hits, f"{forbidden!r} found:\n" + "\n".join(hits)


def test_paths_named_in_the_docs_exist():
    pattern = re.compile(r"`((?:config|docs|benchmarks|scripts|profiles|src|workflow|tests)/[^`\s*<>{}]+)`")
    missing = []
    for doc in [
        ROOT / "README.md",
        ROOT / "config" / "README.md",
        ROOT / "scripts" / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
    ]:
        for name in pattern.findall(doc.read_text()):
            if not (ROOT / name.rstrip("/")).exists():
                missing.append(f"{doc.relative_to(ROOT)}: {name}")
    assert not missing, "named in the docs but absent:\n" + "\n".join(missing)


def _schema_keys(node, keys):
    """Every property name of the config schema, at any depth ($defs included)."""
    if isinstance(node, dict):
        keys.update(node.get("properties", {}) if isinstance(node.get("properties"), dict) else {})
        for v in node.values():
            _schema_keys(v, keys)
    elif isinstance(node, list):
        for v in node:
            _schema_keys(v, keys)
    return keys


def test_every_config_key_is_described_in_config_readme():
    import yaml

    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    keys = _schema_keys(schema, set())
    assert {"population", "erm", "replica", "validation", "max_abs_z", "gd", "uniform"} <= keys
    text = (ROOT / "config" / "README.md").read_text()
    missing = sorted(k for k in keys if f"`{k}`" not in text)
    assert not missing, "config keys not described in config/README.md: " + ", ".join(missing)


def test_every_figure_has_one_readme_line_and_a_caption():
    from slrpipe.figures import REGISTRY

    readme = (ROOT / "README.md").read_text()
    results = (ROOT / "docs" / "results.md").read_text()
    for fig in REGISTRY:
        assert len(re.findall(rf"^- `{fig}` — .*`figures\.{fig}`", readme, flags=re.M)) == 1, fig
        assert f"**`{fig}`**" in results, fig
        assert (ROOT / "workflow" / "report" / f"{fig}.rst").is_file(), fig


#: a dated entry (a run log) or a history marker; reference text has none
DATED = re.compile(r"20\d\d-[01]\d-[0-3]\d|Status then|[Ss]uperseded")


def test_no_dated_entries_in_readme_docs_and_config():
    """README, docs and config are the reference, not the record: no dates of runs, no "Status
    then", nothing "superseded" (history lives in git and CHANGELOG.md)."""
    paths = [ROOT / "README.md", *sorted((ROOT / "config").glob("*")), *sorted((ROOT / "docs").glob("*.md"))]
    hits = []
    for path in paths:
        if not path.is_file():
            continue
        for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if DATED.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()[:100]}")
    assert not hits, "dated entries:\n" + "\n".join(hits)


def test_no_ticket_numbers_in_sources_and_docs():
    """Docs and code say what a change does, not which ticket asked for it."""
    hits = []
    for path in _tracked_text_files():
        rel = path.relative_to(ROOT)
        if not (rel.parts[0] in ("src", "docs", "workflow") or str(rel) == "README.md"):
            continue
        for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if re.search(r"issue[- ]?#?[0-9]+", line, flags=re.I) and "https://" not in line:
                hits.append(f"{rel}:{lineno}: {line.strip()[:100]}")
    assert not hits, "ticket numbers:\n" + "\n".join(hits)
