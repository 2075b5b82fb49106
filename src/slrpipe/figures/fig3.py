"""Fig. 3: test error vs α — replica theory (lines), ERM (markers), Bayes-optimal (model.md §6–§7;
its uninformed state-evolution branch dotted where it differs, docs/theory.md §8).

ERM markers are the population risk at the learned (k, v) (``test_error_pop``, mean ± s.e. over
seeds) when the store has it — the quantity the theory predicts, free of test-set noise — else
the finite-test-set error. Where the RS equations have a second fixed point (``n_branches = 2``,
docs/theory.md §10) its test error is drawn as small open diamonds. Theory lines are the mean
over the Monte Carlo draws of the channel where the sweep made several (``mc_seeds``); points
whose Monte Carlo s.d. exceeds the validation's ``max_theory_rel_sd`` of the value (from the
config the store carries; near a fold, where the RS prediction is ill-conditioned and not
enforced by the validation) get a cross.

With a λ grid (two or more λ), each σ is also drawn at its best λ per α, as the paper's figure is
(:mod:`slrpipe.store.tuning`): the theory's minimum over the grid as a thick line, ERM at the λ of
lowest validation (finite-test-set) error as stars; the fixed-λ lines stay, thinner.
"""

from __future__ import annotations

import json

import numpy as np

from slrpipe.store.ground import reference
from slrpipe.store.ladder import largest_D
from slrpipe.store.tuning import at_best_lam
from slrpipe.store.validation import max_theory_rel_sd

from .erm_vs_population import draw_erm, mean_se
from .style import COLORS, LABELS, legend_below, log_alpha_axis, log_error_axis, ordered, panels, save, setting_title

LAM_STYLES = ["-", "--", "-.", ":"]


def plot(tree, experiments, out_stem):
    fig, axes = panels(len(experiments), width=3.6, height=2.9)
    rel_sd = max_theory_rel_sd(json.loads(tree.attrs.get("config", "{}")))
    for ax, name in zip(axes, experiments):
        rep = tree[f"replica/{name}"].to_dataset()
        alpha = rep["alpha"].values
        tuned = "lam" in rep.dims and rep.sizes["lam"] > 1
        for s in ordered(rep["sigma"].values) if "sigma" in rep.dims else []:
            if tuned:
                ax.plot(alpha, rep["test_error_opt_lam"].sel(sigma=s), color=COLORS.get(s), lw=2.4, alpha=0.8,
                        label=f"theory {LABELS.get(s, s)}, best λ per α")
            for i, lam in enumerate(rep["lam"].values):
                err = rep["test_error"].sel(sigma=s, lam=lam)
                if "test_error_seed_mean" in rep:  # the mean over Monte Carlo draws, where measured
                    err = rep["test_error_seed_mean"].sel(sigma=s, lam=lam).fillna(err)
                conv = rep["converged"].sel(sigma=s, lam=lam).astype(bool) if "converged" in rep else True
                ax.plot(alpha, err.where(conv), color=COLORS.get(s), ls=LAM_STYLES[i % 4], lw=0.9 if tuned else 1.5,
                        label=f"theory {LABELS.get(s, s)}, λ = {lam:g}")
                if "test_error_mc_sd" in rep:
                    ill = rep["test_error_mc_sd"].sel(sigma=s, lam=lam) > rel_sd * abs(err)
                    if bool((ill & conv).any()):
                        ax.plot(alpha, err.where(ill & conv), ls="none", marker="x", ms=5, color=COLORS.get(s),
                                label=f"theory {LABELS.get(s, s)}: MC s.d. > {rel_sd:.0%} (near a fold)")
                if "n_branches" in rep and bool((rep["n_branches"].sel(sigma=s, lam=lam) > 1).any()):
                    ax.plot(alpha, rep["test_error_alt"].sel(sigma=s, lam=lam), ls="none", marker="d", ms=3,
                            fillstyle="none", color=COLORS.get(s), label=f"second RS fixed point, {LABELS.get(s, s)}")
        if "bayes_optimal_test_error" in rep:
            ax.plot(alpha, rep["bayes_optimal_test_error"], color="black", lw=1.2, label="Bayes-optimal")
            # first-order transition: where the branch reached from an uninformed start differs
            # visibly (> 1e-3; the two solves of one branch differ by rounding only)
            unf = rep["bayes_optimal_test_error_uninformed"]
            differs = abs(unf - rep["bayes_optimal_test_error"]) > 1e-3
            if bool(differs.any()):
                ax.plot(alpha, unf.where(differs), color="black", lw=1, ls=":", marker=".", ms=3,
                        label="Bayes-optimal SE, uninformed branch")
        erm_name = json.loads(rep.attrs.get("erm", "null"))
        if erm_name and erm_name in tree.get("erm", {}):
            erm = reference(largest_D(tree[f"erm/{erm_name}"].to_dataset()))  # informed start, largest D of a ladder
            pop = "test_error_pop" in erm and bool(erm["test_error_pop"].notnull().any())
            var = "test_error_pop" if pop else "test_error"
            draw_erm(ax, erm, var=var, label_suffix=" (R at learned k, v)" if pop else "")
            if erm.sizes["lam"] > 1:
                best = at_best_lam(erm, report=var)
                for s in ordered(best["sigma"].values):
                    m, se = mean_se(best.sel(sigma=s))
                    ax.errorbar(erm["alpha"].values, m.values, yerr=se.values, ls="none", marker="*", ms=8,
                                capsize=2, color=COLORS.get(s), mec="black", mew=0.5,
                                label=f"ERM {LABELS.get(s, s)}, best λ (validation error)")
        log_alpha_axis(ax)
        log_error_axis(ax)
        ax.set_title(setting_title(rep.attrs))
    legend_below(fig, axes)
    return save(fig, out_stem)
