"""Fig. 2: optimal population risk vs ν, one panel per setting (model.md §4, §7)."""

from __future__ import annotations

import numpy as np

from .style import COLORS, LABELS, legend_below, ordered, panels, save, setting_title


def nu_axis(nu: np.ndarray):
    """x positions for a ν grid that may end in ∞: ∞ is drawn one grid step past the largest finite ν."""
    nu = np.asarray(nu, float)
    finite = nu[np.isfinite(nu)]
    x = nu.copy()
    if (~np.isfinite(nu)).any():
        step = np.diff(np.unique(finite)).mean() if finite.size > 1 else 1.0
        x[~np.isfinite(nu)] = finite.max() + 1.5 * step
    return x


def draw_panel(ax, node, log_y=False):
    """The optimal population risk vs ν of every σ of a population node (dims (sigma, nu)) on
    ``ax``; ν = ∞ (max-SLR) drawn as star markers at the right edge (:func:`nu_axis`); ``log_y``:
    a log risk axis. Source: docs/model.md §4."""
    x = nu_axis(node["nu"].values)
    inf = ~np.isfinite(node["nu"].values)
    for s in ordered(node["sigma"].values):
        r = node["risk"].sel(sigma=s).values
        style = dict(color=COLORS.get(s), label=LABELS.get(s, s))
        if s == "bayes":
            style.update(ls="--", lw=1.2, zorder=5)
        ax.plot(x[~inf], r[~inf], **style)
        if inf.any():
            ax.plot(x[inf], r[inf], ls="none", marker="*", ms=7, color=COLORS.get(s))
    if inf.any():
        ticks = [t for t in ax.get_xticks() if 0 <= t <= x[~inf].max()]
        ax.set_xticks(ticks + [x[inf][0]], [f"{t:g}" for t in ticks] + ["∞"])
        ax.axvline(x[~inf].max() + 0.5 * (x[inf][0] - x[~inf].max()), color="grey", lw=0.6, ls=":")
    ax.set_xlabel("signal strength ν")
    ax.set_ylabel("optimal risk  R*")
    ax.set_title(setting_title(node))
    if log_y:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)


def plot(tree, experiments, out_stem):
    """Fig. 2 of the paper: one panel per population experiment (:func:`draw_panel`), one legend
    below. ``out_stem``: output path without extension. Returns the written [pdf, png] paths.
    Raises KeyError for an experiment not in the store."""
    fig, axes = panels(len(experiments))
    for ax, name in zip(axes, experiments):
        draw_panel(ax, tree[f"population/{name}"].to_dataset())
    for ax in axes[1:]:
        ax.set_ylabel("")
    legend_below(fig, axes)
    return save(fig, out_stem)
