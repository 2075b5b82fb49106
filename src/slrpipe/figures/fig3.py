"""Fig. 3: test error vs α — replica theory (lines), ERM (markers), Bayes-optimal (model.md §6–§7;
its uninformed state-evolution branch dotted where it differs, docs/theory.md §8)."""

from __future__ import annotations

import json

import numpy as np

from .erm_vs_population import draw_erm
from .style import COLORS, LABELS, legend_below, log_alpha_axis, ordered, panels, save, setting_title

LAM_STYLES = ["-", "--", "-.", ":"]


def plot(tree, experiments, out_stem, optimal_lam=False):
    fig, axes = panels(len(experiments), width=3.6, height=2.9)
    for ax, name in zip(axes, experiments):
        rep = tree[f"replica/{name}"].to_dataset()
        alpha = rep["alpha"].values
        for s in ordered(rep["sigma"].values) if "sigma" in rep.dims else []:
            if optimal_lam:
                ax.plot(alpha, rep["test_error_opt_lam"].sel(sigma=s), color=COLORS.get(s),
                        label=f"theory {LABELS.get(s, s)}, optimal λ")
                continue
            for i, lam in enumerate(rep["lam"].values):
                err = rep["test_error"].sel(sigma=s, lam=lam)
                conv = rep["converged"].sel(sigma=s, lam=lam).astype(bool) if "converged" in rep else True
                ax.plot(alpha, err.where(conv), color=COLORS.get(s), ls=LAM_STYLES[i % 4],
                        label=f"theory {LABELS.get(s, s)}, λ = {lam:g}")
        if "bayes_optimal_test_error" in rep:
            ax.plot(alpha, rep["bayes_optimal_test_error"], color="black", lw=1.2, label="Bayes-optimal")
            if bool(rep["bayes_optimal_coexistence"].any()):
                # first-order transition: the branch reached from an uninformed start differs
                unf = rep["bayes_optimal_test_error_uninformed"]
                ax.plot(alpha, unf.where(rep["bayes_optimal_test_error"] != unf), color="black", lw=1,
                        ls=":", label="Bayes-optimal SE, uninformed branch")
        erm_name = json.loads(rep.attrs.get("erm", "null"))
        if erm_name and erm_name in tree.get("erm", {}):
            draw_erm(ax, tree[f"erm/{erm_name}"].to_dataset())
        log_alpha_axis(ax)
        ax.set_ylabel("test error")
        ax.set_title(setting_title(rep.attrs))
    legend_below(fig, axes)
    return save(fig, out_stem)
