"""The markdown tables of a run (slrpipe.analysis.tables, ``slrpipe tables``, rule ``tables``)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from conftest import comparison_row

from slrpipe.analysis import tables
from slrpipe.analysis.rows import Row, read_rows, to_json
from slrpipe.analysis.verdict import VERDICTS
from slrpipe.cli import main

REPO = Path(__file__).resolve().parents[1]
NAN = math.nan


def _row(verdict=VERDICTS[0], alpha=2.0, **extra) -> Row:
    """One comparison row with the values the tables read."""
    return comparison_row(
        experiment="spiked_L2", alpha=alpha, theory=0.5, theory_mc_se=0.01, erm_mean=0.51, ground_mean=0.505,
        rs_stable=1.0, replicon=0.46, verdict=verdict, **extra,
    )  # fmt: skip


RSB1 = {
    "rsb1_s_star": 2.0,
    "rsb1_s_reported": 2.0,
    "rsb1_bracketed": 1.0,
    "rsb1_checked": 1.0,
    "rsb1_lower_bound": 0.0,
    "rsb1_objective": 0.3012,
    "rsb1_objective_se": 0.002,
    "rsb1_objective_batch_se": 0.001,
    "rsb1_complexity": 0.0,
    "rsb1_complexity_se": NAN,
    "rsb1_rs_objective": 0.3,
    "rsb1_erm_objective": 0.31,
    "rsb1_erm_objective_se": 0.002,
    "rsb1_erm_ref": "ground",
    "gap_closed_objective": 0.12,
    "gap_closed_objective_se": 0.1,
    "gap_z_objective": 5.0,
    "gap_closed_test": NAN,
    "gap_closed_test_se": NAN,
    "gap_z_test": 1.0,
    "rsb1_star_sigma": 0.004,
    "rsb1_star_sigma_se": 0.01,
    "rsb1_star_sigma_fd": -0.002,
    "rsb1_star_sigma_fd_se": 0.012,
    "rsb1_n0_drift_objective": 0.0031,
    "rsb1_n0_drift_test": 0.0012,
}


def _named_in_docs() -> set[str]:
    texts = [p.read_text() for p in sorted((REPO / "docs").glob("*.md"))] + [(REPO / "README.md").read_text()]
    return {m for t in texts for m in re.findall(r"results/tables/([\w.-]+)\.md", t)}


def test_every_table_a_doc_names_is_written_by_the_rule():
    """Each results/tables/<name>.md of docs/*.md and README.md is a table ``slrpipe tables`` writes,
    and the rule's outputs are exactly those tables (workflow/rules/tables.smk, from TABLES)."""
    assert _named_in_docs() <= set(tables.TABLES), sorted(_named_in_docs() - set(tables.TABLES))
    rule = (REPO / "workflow" / "rules" / "tables.smk").read_text()
    assert "from slrpipe.analysis.tables import TABLES as TABLE_NAMES" in rule
    assert 'TABLES = [f"results/tables/{name}.md" for name in TABLE_NAMES]' in rule
    assert re.search(r"output:\s+TABLES,", rule) and "--out results/tables" in rule
    assert "TABLES," in (REPO / "Snakefile").read_text()  # a target of rule all
    assert set(tables.RENDERERS) == set(tables.TABLES)


def test_the_command_writes_every_table_from_the_rows(tmp_path):
    rows = [_row(), _row(VERDICTS[5], alpha=8.0, **RSB1), _row(VERDICTS[5], alpha=20.0)]
    (tmp_path / "validation.json").write_text(to_json(rows))
    assert main(["tables", "--validation", str(tmp_path / "validation.json"), "--out", str(tmp_path / "t")]) == 0
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == sorted(f"{n}.md" for n in tables.TABLES)
    md = {n: (tmp_path / "t" / f"{n}.md").read_text() for n in tables.TABLES}
    assert all(t.endswith("\n") for t in md.values())
    # per point: one line each, with its verdict
    points = [line for line in md["validation"].splitlines() if line.startswith("| spiked_L2")]
    assert len(points) == 3 and points[1].endswith(f"| {VERDICTS[5]} |")
    assert "0.5000 ± 0.0100" in points[0]
    # the count per verdict, in the verdict module's order, and the total
    assert md["verdicts"].splitlines()[2:] == [f"| {VERDICTS[0]} | 1 |", f"| {VERDICTS[5]} | 2 |", "| all | 3 |"]
    # the one 1RSB point: s*, Φ ± its batch-means s.e., Σ = 0 at s*, gap closed ± s.e., 'no gap' for the test
    # error, Σ(s*) by both estimators, the N₀ drift and the verdict
    lines = md["rsb1"].splitlines()
    assert len(lines) == 3
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[3:] == [
        "8",
        "s* = 2",
        "0.3012 ± 0.0010",
        "0.0000",
        "0.3000",
        "0.3100 ± 0.0020",
        "0.12 ± 0.10",
        "no gap",
        "ground",
        "0.0040 ± 0.0100 / -0.0020 ± 0.0120",
        "0.0031 / 0.0012",
        VERDICTS[5],
    ]


def test_a_largest_phi_state_is_a_lower_bound_with_its_complexity():
    r = _row(
        **RSB1
        | {"rsb1_lower_bound": 1.0, "rsb1_bracketed": 0.0, "rsb1_s_star": NAN, "rsb1_s_reported": 0.5}
        | {"rsb1_complexity": 0.0123, "rsb1_complexity_se": 0.004, "rsb1_objective_batch_se": NAN}
    )
    cells = [c.strip() for c in tables.rsb1([r]).splitlines()[2].strip("|").split("|")]
    assert cells[4:7] == ["largest Φ at 0.5 (lower bound)", "0.3012 ± 0.0020", "0.0123 ± 0.0040"]
    assert cells[12] == "—"  # no Σ(s*) without a bracketed s*
    failed = _row(**RSB1 | {"rsb1_checked": 0.0})  # s* bracketed, a check of it failed
    assert tables.rsb1([failed]).splitlines()[2].split("|")[5].strip() == "s* = 2 (check failed)"
    lost = _row(
        **RSB1 | {"rsb1_lower_bound": 1.0, "rsb1_bracketed": 0.0, "rsb1_s_reported": 2.0, "rsb1_branch_lost": 1.0}
    )
    assert (
        tables.rsb1([lost]).splitlines()[2].split("|")[5].strip() == "largest Φ at 2 (lower bound, branch lost above)"
    )


def test_sigma_cells_say_when_their_se_carry_the_estimators_disagreement():
    """S > 1 (slrpipe.theory.replica.rsb1.estimators) is shown beside Σ(s*), and beside '—' without
    a bracket; S = 1 and a store without the column show nothing."""
    for extra, cell in (
        ({"rsb1_sigma_scale": 2.345}, "0.0040 ± 0.0100 / -0.0020 ± 0.0120; s.e. × 2.3"),
        ({"rsb1_sigma_scale": 1.0}, "0.0040 ± 0.0100 / -0.0020 ± 0.0120"),
        ({"rsb1_sigma_scale": 1.7, "rsb1_bracketed": 0.0, "rsb1_lower_bound": 1.0}, "—; s.e. × 1.7"),
    ):
        assert tables.rsb1([_row(**RSB1 | extra)]).splitlines()[2].split("|")[13].strip() == cell


def test_empty_tables_say_why():
    for name in tables.TABLES:
        assert tables.RENDERERS[name]([]) == tables.NO_COMPARISON
    assert tables.rsb1([_row()]).startswith("No 1RSB point:")


def test_a_run_without_a_comparison_writes_each_table_as_a_sentence(tmp_path):
    assert main(["tables", "--out", str(tmp_path)]) == 0
    assert {p.read_text() for p in tmp_path.iterdir()} == {tables.NO_COMPARISON + "\n"}
    assert len(list(tmp_path.iterdir())) == len(tables.TABLES)


def test_an_unknown_verdict_or_column_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="unknown verdict"):
        tables.verdicts([_row("looks fine")])
    import json

    rows = _row(**RSB1).to_dict()
    (tmp_path / "v.json").write_text(to_json([_row(**RSB1)]))  # read back as written (NaN ≠ NaN: as text)
    assert to_json(read_rows(tmp_path / "v.json")) == to_json([_row(**RSB1)])

    (tmp_path / "v.json").write_text(json.dumps([rows | {"erm_meen": 0.5}]))
    with pytest.raises(ValueError, match="unknown columns \\['erm_meen'\\]"):
        read_rows(tmp_path / "v.json")
    (tmp_path / "v.json").write_text(json.dumps([{k: v for k, v in rows.items() if k != "verdict"}]))
    with pytest.raises(ValueError, match="missing columns \\['verdict'\\]"):
        read_rows(tmp_path / "v.json")
