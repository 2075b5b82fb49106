"""ERM test error vs α against the population optimum of the same σ (model.md §4–§5)."""

from __future__ import annotations

from slrpipe.analysis.ground import reference
from slrpipe.analysis.ladder import largest_D
from slrpipe.analysis.seeds import mean_se

from .style import (
    COLORS,
    LABELS,
    MARKERS,
    legend_below,
    log_alpha_axis,
    log_error_axis,
    ordered,
    panels,
    save,
    setting_title,
)

LAM_FILL = {0: "full", 1: "none", 2: "left", 3: "bottom"}


def draw_erm(ax, erm, lam_styles=True, label_suffix="", var="test_error"):
    """ERM markers (mean ± s.e. over seeds of ``var``) for each σ and λ; returns the σ list drawn."""
    sigmas = ordered(erm["sigma"].values)
    lams = erm["lam"].values
    for s in sigmas:
        for i, lam in enumerate(lams):
            m, se = mean_se(erm[var].sel(sigma=s, lam=lam))
            lab = f"ERM {LABELS.get(s, s)}" + (f", λ = {lam:g}" if len(lams) > 1 else "") + label_suffix
            ax.errorbar(
                erm["alpha"].values,
                m.values,
                yerr=se.values,
                ls="none",
                marker=MARKERS.get(s, "o"),
                ms=4,
                capsize=2,
                color=COLORS.get(s),
                fillstyle=LAM_FILL.get(i % 4),
                label=lab,
            )
    return sigmas


def plot(tree, experiments, out_stem):
    """One panel per ERM experiment: its test error (informed start, largest D of a ladder; mean ±
    s.e. over seeds) vs α, the population formula at the learned overlaps (crosses), the
    population optimum of each σ (dashed) and the Bayes risk (dotted), from the store's
    ``population/at_<experiment>`` node (docs/model.md §4–5).

    ``out_stem``: output path without extension. Returns the written [pdf, png] paths. Raises
    KeyError for an experiment (or its ``at_`` population node) not in the store."""
    fig, axes = panels(len(experiments), width=3.6, height=2.9)
    for ax, name in zip(axes, experiments):
        erm = reference(largest_D(tree[f"erm/{name}"].to_dataset()))  # the informed start (largest D of a ladder)
        pop = tree[f"population/at_{name}"].to_dataset()
        sigmas = draw_erm(ax, erm)
        if "test_error_pop" in erm:
            for s in sigmas:
                m, _ = mean_se(erm["test_error_pop"].sel(sigma=s).isel(lam=0))
                ax.plot(erm["alpha"].values, m.values, ls="none", marker="x", ms=4, color=COLORS.get(s), alpha=0.7)
            ax.plot([], [], ls="none", marker="x", color="grey", label="R(σ) at learned overlaps")
        for s in sigmas:
            ax.axhline(
                float(pop["risk"].sel(sigma=s).values[0]),
                color=COLORS.get(s),
                ls="--",
                lw=1,
                label=f"population optimum, {LABELS.get(s, s)}",
            )
        ax.axhline(float(pop["risk"].sel(sigma="bayes").values[0]), color="black", ls=":", lw=1, label="Bayes risk")
        log_alpha_axis(ax)
        # log errors (softmax and a linear interpolation peak differ by decades at large L) unless a
        # reference line is 0 (max-SLR at ν = ∞), which a log axis cannot show
        if bool((pop["risk"] > 0).all()):
            log_error_axis(ax)
        else:
            ax.set_ylabel("test error")
        ax.set_title(setting_title(erm))
    legend_below(fig, axes)
    return save(fig, out_stem)
