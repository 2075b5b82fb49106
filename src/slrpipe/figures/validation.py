"""Figure 'validation': the verdict of every (setting, σ, λ, α) point at a glance.

One panel per replica experiment that names an ERM experiment (``erm:``): one row per (σ, λ), one
column per α of the ERM grid; each cell is coloured by the point's verdict
(:func:`slrpipe.analysis.verdict.verdict`, docs/results.md §2) and carries the relative gap
(ERM − theory) / theory in percent, with ✓ / ✗ where the enforced check agrees / fails. The rows
are those the workflow's rule ``validate`` wrote (``results/validation.json``,
:func:`slrpipe.analysis.comparison.compare`); the figure reads them, it does not compare again.
"""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Patch

from slrpipe.analysis.rows import Row
from slrpipe.analysis.verdict import MISSING, UNMEASURED, VERDICTS
from slrpipe.figures.style import plt, save

#: cell colour of each verdict (colour-blind-safe Okabe–Ito hues, light enough for black text)
VERDICT_COLORS = {
    VERDICTS[0]: "#8fd19e",  # agrees
    VERDICTS[1]: "#9ecae1",  # agrees after D → ∞
    VERDICTS[2]: "#f6c85f",  # ERM not at its ground state
    VERDICTS[3]: "#e7b7d3",  # ERM not at a minimum
    VERDICTS[4]: "#c7e9c0",  # 1RSB agrees
    VERDICTS[5]: "#d9d9d9",  # 1RSB not judged
    VERDICTS[6]: "#bdbdbd",  # Monte Carlo not converged
    VERDICTS[7]: "#b9a9d9",  # RS unstable
    VERDICTS[8]: "#f4a582",  # 1RSB does not close the gap
    VERDICTS[9]: "#e8776f",  # unexplained
    UNMEASURED: "#f4a582",
    MISSING: "#dddddd",
}


def verdict_grid(rows: list[Row]) -> tuple[list[tuple[str, float]], list[float], dict]:
    """The rows of one experiment on a grid: the (σ, λ) row labels, the α columns (sorted) and
    {(row, column): comparison row}. A (σ, λ, α) without an ERM point is absent from the dict."""
    keys = list(dict.fromkeys((r.sigma, r.lam) for r in rows))
    alphas = sorted({r.alpha for r in rows})
    cells = {(keys.index((r.sigma, r.lam)), alphas.index(r.alpha)): r for r in rows}
    return keys, alphas, cells


def _cell_text(r: Row) -> str:
    """'−4.0 %' and the enforced check (✓ agrees, ✗ fails; nothing where not enforced)."""
    rel = r.rel_diff
    if rel is None or not np.isfinite(rel):
        return "—"
    mark = (" ✓" if r.agrees else " ✗") if r.enforced else ""
    return f"{100 * rel:+.1f} %{mark}"


def _dimension_text(rows: list[Row]) -> str:
    """' at D = 600' or, where the ERM grid varies D with α (fixed √(nD)), ' at D = 424–1897'."""
    Ds = sorted({int(r.D) for r in rows if r.D and r.D > 0})
    if not Ds:
        return ""
    return f" at D = {Ds[0]}" if len(Ds) == 1 else f" at D = {Ds[0]}–{Ds[-1]}"


def draw_panel(ax, name: str, rows: list[Row]) -> None:
    """One experiment's cells on ``ax`` (rows (σ, λ), columns α), verdict colours, gap text."""
    keys, alphas, cells = verdict_grid(rows)
    for (i, j), r in cells.items():
        ax.add_patch(
            plt.Rectangle((j, i), 1, 1, facecolor=VERDICT_COLORS.get(r.verdict, "white"), edgecolor="white", lw=1.5)
        )
        ax.text(j + 0.5, i + 0.5, _cell_text(r), ha="center", va="center", fontsize=7)
    ax.set_xlim(0, len(alphas))
    ax.set_ylim(len(keys), 0)
    ax.set_xticks(np.arange(len(alphas)) + 0.5, [f"{a:.3g}" for a in alphas])  # the realised n/D, to 3 digits
    ax.set_yticks(np.arange(len(keys)) + 0.5, [f"{s}, λ = {lam:g}" for s, lam in keys])
    ax.tick_params(length=0)
    ax.grid(False)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_title(f"{name}: (ERM − theory) / theory{_dimension_text(rows)}", loc="left")
    ax.set_xlabel("sample complexity α = n/D")


def plot(tree, experiments, out_stem, rows: list[Row] | None = None):
    """Draw the panels of ``experiments`` (replica experiment names) and write ``out_stem``.pdf/.png.

    ``rows``: the comparison's rows (``results/validation.json``, slrpipe.analysis.rows.read_rows); ``tree``: unused (every figure's signature; the rows hold what is drawn).
    Returns the written paths.

    Raises:
        ValueError: no rows given, or none for an experiment (it names no ERM experiment, or ERM has
            no points there).
    """
    if rows is None:
        raise ValueError("figure validation: the comparison's rows are required (results/validation.json)")
    groups = []
    for name in experiments:
        mine = [r for r in rows if r.experiment == name]
        if not mine:
            raise ValueError(
                f"figure validation: replica experiment {name!r} has no linked ERM points "
                "(set erm: <an ERM experiment> in its config)"
            )
        groups.append((name, mine))
    heights = [len(verdict_grid(g)[0]) for _, g in groups]
    width = max(len(verdict_grid(g)[1]) for _, g in groups)
    fig, axes = plt.subplots(
        len(groups),
        1,
        figsize=(2.2 + 0.8 * width, 0.9 + 0.42 * sum(heights) + 0.6 * len(groups)),
        gridspec_kw={"height_ratios": heights},
        squeeze=False,
    )
    for ax, (name, g) in zip(axes[:, 0], groups):
        draw_panel(ax, name, g)
    seen = {r.verdict for _, g in groups for r in g}
    handles = [Patch(facecolor=c, label=v) for v, c in VERDICT_COLORS.items() if v in seen]
    fig.tight_layout()
    fig.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=min(3, len(handles)),
        frameon=False,
        title="verdict (✓ / ✗: enforced check agrees / fails)",
        title_fontsize=7.5,
    )
    return save(fig, out_stem)
