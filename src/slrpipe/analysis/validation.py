"""The ERM-vs-theory check: :func:`validate_store` compares a store
(:func:`slrpipe.analysis.comparison.compare`), writes the rows (``results/validation.json``) and
their text table (slrpipe.analysis.render, ``results/validation.txt``), and fails on enforced
disagreement (:func:`failures`).
"""

from __future__ import annotations

from slrpipe.analysis.comparison import compare
from slrpipe.analysis.render import format_table
from slrpipe.analysis.rows import Row, to_json
from slrpipe.io import write_text


def failures(rows: list[Row]) -> list[Row]:
    """The rows of :func:`compare` that are enforced and disagree (the ones that fail the check)."""
    return [r for r in rows if r.enforced and not r.agrees]


class ValidationFailed(RuntimeError):
    """ERM disagrees with the replica theory where the theory is expected to hold."""


def validate_store(store, config: dict, out) -> list[Row]:
    """Compare, write ``out`` (text table) and ``out``.json (rows); raise on enforced disagreement.

    The table is written in both cases (a failed check leaves ``<out>.failed.txt`` instead of
    ``out``, so Snakemake sees no output and reruns the check next time).

    Raises:
        ValidationFailed: one line listing the disagreeing points, when ``validation.fail`` is true.
    """
    from pathlib import Path

    from slrpipe.analysis.aggregate import open_store

    rows = compare(open_store(store), config)
    table = format_table(rows)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text(to_json(rows), out.with_suffix(".json"))
    v = config.get("validation", {})
    bad = failures(rows)
    if bad and v.get("fail", True):
        write_text(table + "\n", out.with_suffix(".failed.txt"))
        raise ValidationFailed(
            f"{len(bad)} of {sum(r.enforced for r in rows)} enforced ERM points disagree with the replica theory "
            f"(|z| > {v.get('max_abs_z', 4.0)} and relative difference > {v.get('rel_tol', 0.05)}); table in "
            f"{out.with_suffix('.failed.txt')}: "
            + "; ".join(
                f"{r.experiment} {r.sigma} λ={r.lam:g} α={r.alpha:g} "
                f"(ERM {r.erm_mean:.4f} ± {r.erm_se:.4f} vs theory {r.theory:.4f})"
                for r in bad
            )
        )
    out.with_suffix(".failed.txt").unlink(missing_ok=True)  # a failure of an earlier run
    write_text(table + "\n", out)
    return rows
