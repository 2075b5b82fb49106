"""The markdown tables of a run, ``results/tables/<name>.md`` (docs/results.md §2), from the rows of
the ERM-vs-theory comparison (``results/validation.json``, :func:`slrpipe.analysis.comparison.compare`).

One table per entry of :data:`TABLES`, each rendered by the function of the same name here:

- ``validation``: per (experiment, σ, λ, α) point the theory, ERM (informed start and ground state
  per D, their D → ∞ limits), RS stability and the verdict (slrpipe.analysis.verdict);
- ``verdicts``: how many points have each verdict;
- ``rsb1``: per point where the replica experiment solved 1RSB the state reported (s*, else the
  largest Φ; slrpipe.analysis.rsb1), its Φ and complexity Σ ± s.e. and the fraction of the RS–ERM
  gap it closes ± s.e., objective and test error.

A run without a comparison (no replica experiment names an ERM experiment) or without a 1RSB
point still writes every table: one sentence saying why it is empty. The workflow's rule
``tables`` (workflow/rules/tables.smk) runs ``slrpipe tables``, which calls :func:`write_tables`.
"""

from __future__ import annotations

import collections
from pathlib import Path

from slrpipe.analysis.render import LAWS, finite, pm
from slrpipe.analysis.rows import Row
from slrpipe.analysis.verdict import MISSING, UNMEASURED, VERDICTS
from slrpipe.io import write_text

#: the tables ``slrpipe tables`` writes, ``results/tables/<name>.md`` (the workflow's rule outputs)
TABLES = ("validation", "verdicts", "rsb1")

#: the sentence of every table of a run without a comparison
NO_COMPARISON = "No point compared: no replica experiment of this config names an ERM experiment (`erm:`)."


def validation(rows: list[Row]) -> str:
    """The verdict table as markdown: per point the theory ± its Monte Carlo error, ERM from the
    informed start and the ground state at each D of the ladder, the D → ∞ limit of each (law; z
    against the theory), RS stability (replicon, prox ties among the theory's samples) and the
    verdict. ``rows``: those of ``results/validation.json`` (slrpipe.analysis.rows.read_rows)."""
    if not rows:
        return NO_COMPARISON

    def num(x, digits=3):
        return pm(x, None, digits)

    def limit(r, who):
        if not finite(getattr(r, f"{who}_limit")):
            return "—"
        z = getattr(r, "z_limit" if who == "erm" else "z_ground_limit")
        return f"{num(getattr(r, f'{who}_limit'))} ± {num(getattr(r, f'{who}_limit_se'))} ({LAWS.get(getattr(r, f'{who}_law'), getattr(r, f'{who}_law'))}; {z:+.1f})"

    def rs(r):
        if not finite(r.rs_stable):
            return "—"
        tie = f", {int(r.prox_ties)}" if finite(r.prox_ties) else ""
        return f"{'stable' if r.rs_stable else 'unstable'} ({r.replicon:.2f}{tie})"

    Ds = " / ".join(map(str, rows[0].ladder_D or [rows[0].D]))
    out = [
        (
            f"| setting | σ | λ | α | theory | informed D = {Ds} | ground D = {Ds} | informed D → ∞ (law; z) "
            "| ground D → ∞ (law; z) | RS (replicon, ties) | verdict |"
        ),
        "|" + "---|" * 11,
    ]
    for r in rows:
        per_D = {
            w: " / ".join(map(num, getattr(r, f"ladder_{w}") or [getattr(r, f"{w}_mean")])) for w in ("erm", "ground")
        }
        out.append(
            f"| {r.experiment} | {r.sigma} | {r.lam:g} | {r.alpha:g} | "
            f"{pm(r.theory, r.theory_mc_se)} | {per_D['erm']} | {per_D['ground']} | {limit(r, 'erm')} | "
            f"{limit(r, 'ground')} | {rs(r)} | {r.verdict} |"
        )
    return "\n".join(out)


def verdicts(rows: list[Row]) -> str:
    """How many points have each verdict (slrpipe.analysis.verdict, in its order; verdicts no point
    has are left out), and the total."""
    if not rows:
        return NO_COMPARISON
    counts = collections.Counter(r.verdict for r in rows)
    unknown = sorted(set(counts) - {*VERDICTS, UNMEASURED, MISSING})
    if unknown:
        raise ValueError(f"verdicts: unknown verdict(s) {unknown} in the rows (slrpipe.analysis.verdict)")
    out = ["| verdict | points |", "|---|---|"]
    out += [f"| {v} | {counts[v]} |" for v in (*VERDICTS, UNMEASURED, MISSING) if counts[v]]
    out.append(f"| all | {len(rows)} |")
    return "\n".join(out)


def _s_cell(r: Row) -> str:
    """The s of the state reported: 's* = 1.67' at a bracketed maximum of Φ (' (check failed)' where
    Σ(s*) ≈ 0 or de/ds < 0 does not hold), 'largest Φ at 4 (lower bound)' where no maximum is
    bracketed (', branch lost above' where the continuation left the dominant branch), '—' not
    solved (slrpipe.theory.replica.rsb1.scan)."""
    s = r.rsb1_s_reported
    if not finite(s):
        return "—"
    if r.rsb1_bracketed == 1:
        return f"s* = {s:.3g}" + ("" if r.rsb1_checked == 1 else " (check failed)")
    lost = ", branch lost above" if r.rsb1_branch_lost == 1 else ""
    return f"largest Φ at {s:.3g} (lower bound{lost})"


def _closed(r: Row, which: str) -> str:
    """The fraction of the gap closed ± s.e.; 'no gap' where the RS–ERM gap is unresolved."""
    from slrpipe.analysis.rsb1 import MIN_GAP_Z

    z = getattr(r, f"gap_z_{which}")
    if not finite(getattr(r, f"gap_closed_{which}")) and finite(z) and abs(z) < MIN_GAP_Z:
        return "no gap"
    return pm(getattr(r, f"gap_closed_{which}"), getattr(r, f"gap_closed_{which}_se"), 2)


def _star_sigma(r: Row) -> str:
    """Σ(s*) ± s.e. by the closed form and by s² dΦ/ds, '—' without a bracketed s*; '; s.e. × S'
    where the two estimators disagree on the scan beyond their errors (S > 1, the factor already
    on these s.e.; slrpipe.theory.replica.rsb1.estimators)."""
    scale = f"; s.e. × {r.rsb1_sigma_scale:.2g}" if finite(r.rsb1_sigma_scale) and r.rsb1_sigma_scale > 1 else ""
    if r.rsb1_bracketed != 1 or not finite(r.rsb1_star_sigma):
        return "—" + scale
    return f"{pm(r.rsb1_star_sigma, r.rsb1_star_sigma_se)} / {pm(r.rsb1_star_sigma_fd, r.rsb1_star_sigma_fd_se)}{scale}"


def _drift(r: Row) -> str:
    """The N₀ → 2N₀ drift of the objective and the test error (the larger of RS's and the state's),
    '—' where not checked."""
    if not finite(r.rsb1_n0_drift_objective):
        return "—"
    return f"{pm(r.rsb1_n0_drift_objective, None)} / {pm(r.rsb1_n0_drift_test, None)}"


def rsb1(rows: list[Row]) -> str:
    """Per 1RSB point (a row whose replica experiment solved 1RSB there: RS on the 1RSB samples is
    finite) the state reported (:func:`_s_cell`), its objective Φ = min 𝓛/D ± s.e. (batch means,
    else the outer samples'), its complexity Σ ± s.e. (0 at s*), RS's objective on the same samples,
    the ERM reference (``rsb1_erm_ref``), the fraction of the RS–ERM gap closed ± s.e. for the
    objective and the test error, Σ(s*) by both estimators (the closed form and s² dΦ/ds; '—'
    without a bracketed s*), the larger drift of RS and the state from N₀ to 2N₀ outer samples
    (objective / test error; '—' without ``n0_check``) and the point's verdict (docs/theory.md §13)."""
    points = [r for r in rows if finite(r.rsb1_rs_objective)]
    if not points:
        return (
            "No 1RSB point: no replica experiment of this config with `ansatz: [rs, rsb1]` names an ERM experiment."
            if rows
            else NO_COMPARISON
        )
    out = [
        "| setting | σ | λ | α | state (s) | Φ ± s.e. | Σ ± s.e. | RS objective | ERM objective | gap closed, "
        "objective | gap closed, test error | ERM ref | Σ(s*): closed form / s² dΦ/ds | N₀ → 2N₀ drift: "
        "objective / test error | verdict |",
        "|" + "---|" * 15,
    ]
    for r in points:
        se = r.rsb1_objective_batch_se
        se = se if finite(se) else r.rsb1_objective_se
        out.append(
            f"| {r.experiment} | {r.sigma} | {r.lam:g} | {r.alpha:g} | {_s_cell(r)} | "
            f"{pm(r.rsb1_objective, se)} | {pm(r.rsb1_complexity, r.rsb1_complexity_se)} | "
            f"{pm(r.rsb1_rs_objective, None)} | {pm(r.rsb1_erm_objective, r.rsb1_erm_objective_se)} | "
            f"{_closed(r, 'objective')} | {_closed(r, 'test')} | {r.rsb1_erm_ref or '—'} | {_star_sigma(r)} | "
            f"{_drift(r)} | {r.verdict} |"
        )
    return "\n".join(out)


RENDERERS = {"validation": validation, "verdicts": verdicts, "rsb1": rsb1}


def write_tables(rows: list[Row] | None, out_dir) -> list[Path]:
    """Write ``out_dir``/<name>.md for every name of :data:`TABLES` (atomically, each ending in a
    newline); ``rows``: the comparison's rows, None for a run without a comparison. Returns the
    paths written, in the order of :data:`TABLES`."""
    out_dir = Path(out_dir)
    paths = []
    for name in TABLES:
        text = RENDERERS[name](rows or []) if rows is not None else NO_COMPARISON
        path = out_dir / f"{name}.md"
        write_text(text + "\n", path)
        paths.append(path)
    return paths
