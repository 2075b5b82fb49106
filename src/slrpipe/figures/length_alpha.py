"""Finite α at several sequence lengths: test error vs α, one panel per L (docs/theory.md §12).

Each panel is a replica experiment drawn as in Fig. 3 (:func:`slrpipe.figures.fig3.draw_panel`:
replica lines, dashed where RS is unstable; ERM markers, the population risk at the learned
weights, mean ± s.e. over seeds at the largest D; the Bayes-optimal error), plus the n = ∞ limits
as horizontal lines: the population optimum of each σ and the Bayes risk at the same (model, ν,
L, Δ), exact in L (model.md §4), from the store's population point of the linked ERM experiment
(``population/at_<erm>``, which the workflow adds for every ERM experiment). The panels share
their error axis, so that the growth of the softmax–linear gap with L reads across them.
"""

from __future__ import annotations

import json

from slrpipe.analysis.comparison import max_theory_rel_sd

from .fig3 import draw_panel
from .style import COLORS, LABELS, legend_below, ordered, panels, save


def plot(tree, experiments, out_stem):
    """One panel per replica experiment (module docstring), the panels side by side with a
    shared error axis. ``tree``: the store. ``out_stem``: output path without extension.
    Returns the written [pdf, png] paths. Raises KeyError for an experiment not in the store."""
    fig, axes = panels(len(experiments), width=3.4, height=3.0)
    rel_sd = max_theory_rel_sd(json.loads(tree.attrs.get("config", "{}")))
    for ax, name in zip(axes, experiments):
        rep = tree[f"replica/{name}"].to_dataset()
        draw_panel(ax, tree, rep, rel_sd)
        draw_population_limits(ax, tree, rep)
    lo = min(ax.get_ylim()[0] for ax in axes)
    hi = max(ax.get_ylim()[1] for ax in axes)
    for ax in axes:
        ax.set_ylim(lo, hi)
    for ax in axes[1:]:
        ax.set_ylabel("")
    legend_below(fig, axes)
    return save(fig, out_stem)


def draw_population_limits(ax, tree, rep) -> bool:
    """Horizontal lines at the n = ∞ limits of the replica node ``rep``'s setting: the population
    optimum of each σ of the population point of its linked ERM experiment (dotted, σ's colour)
    and the Bayes risk (dotted, black). Returns False (nothing drawn) where the node links no ERM
    experiment or the store has no such population point."""
    erm_name = json.loads(rep.attrs.get("erm", "null"))
    key = f"at_{erm_name}"
    if not erm_name or key not in (tree.get("population") or {}):
        return False
    pop = tree[f"population/{key}"].to_dataset()
    nu = float(rep["nu"].values)
    for s in ordered(pop["sigma"].values):
        risk = float(pop["risk"].sel(sigma=s, nu=nu).values)
        ax.axhline(risk, color=COLORS.get(s, "grey"), ls=":", lw=1.0, label=f"n = ∞: {LABELS.get(s, s)}")
    return True
