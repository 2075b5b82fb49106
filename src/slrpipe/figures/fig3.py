"""Fig. 3: test error vs α — replica theory (lines), ERM (markers), Bayes-optimal (model.md §6–§7;
its uninformed state-evolution branch dotted where it differs, docs/theory.md §8).

ERM markers are the population risk at the learned (k, v) (``test_error_pop``, mean ± s.e. over
seeds) when the store has it — the quantity the theory predicts, free of test-set noise — else
the finite-test-set error. Where the RS equations have a second fixed point (``n_branches = 2``,
docs/validation.md §1 (v)) its test error is drawn as small open diamonds. Theory lines are the mean
over the Monte Carlo draws of the channel where the sweep made several (``mc_seeds``); points
whose Monte Carlo s.d. exceeds the validation's ``max_theory_rel_sd`` of the value (from the
config the store carries; near a fold, where the RS prediction is ill-conditioned and not
enforced by the validation) get a cross.

1RSB (docs/theory.md §13), where the replica experiment solved it (``ansatz: [rs, rsb1]``): the
test error of a typical ground-state minimum at s* as open squares; where Σ(s) does not cross zero
on the s grid, RS on the 1RSB samples as open circles (no ground state claimed).

RS stability (docs/theory.md §11): a theory line is solid between two grid points where the RS
fixed point is stable (``rs_stable`` 1, or not checked) and dashed on every interval touching a
point where it is unstable (``rs_stable`` 0) — there the replica-symmetric prediction need not be
exact. λ values are told apart by line width (legend), not by dashes.

With a λ grid (two or more λ), each σ is also drawn at its best λ per α, as the paper's figure is
(:mod:`slrpipe.analysis.tuning`): the theory's minimum over the grid as a wide translucent band, ERM
at the λ of lowest validation (finite-test-set) error as stars; the fixed-λ lines stay on top.
For an ERM experiment with a D ladder the markers are its largest D (slrpipe.analysis.ladder).
"""

from __future__ import annotations

import json

import numpy as np

from slrpipe.analysis.comparison import max_theory_rel_sd
from slrpipe.analysis.ground import reference
from slrpipe.analysis.ladder import largest_D
from slrpipe.analysis.seeds import mean_se
from slrpipe.analysis.tuning import at_best_lam

from .erm_vs_population import draw_erm
from .style import COLORS, LABELS, legend_below, log_alpha_axis, log_error_axis, ordered, panels, save, setting_title

#: line width of the i-th λ of the grid (dashes are reserved for RS-unstable stretches)
LAM_WIDTHS = [1.6, 0.8, 2.4, 1.2]


def draw_theory(ax, alpha, err, stable, **kw) -> bool:
    """Plot ``err`` (α grid, NaN = no point) solid between RS-stable neighbours and dashed on each
    interval with an RS-unstable end (``stable``: per-point bool, or None for all stable). ``kw``:
    line properties (label goes on the solid part). Returns whether a dashed interval was drawn."""
    err = np.asarray(err, float)
    unstable = np.zeros(err.shape, bool) if stable is None else ~np.asarray(stable, bool)
    ax.plot(alpha, np.where(unstable, np.nan, err), ls="-", **kw)
    kw = {k: v for k, v in kw.items() if k != "label"}
    dashed = False
    for i in range(len(err) - 1):
        if (unstable[i] or unstable[i + 1]) and np.isfinite(err[i : i + 2]).all():
            ax.plot(alpha[i : i + 2], err[i : i + 2], ls=(0, (3, 2)), **kw)
            dashed = True
    lone = unstable & np.isfinite(err)  # an unstable point without a finite neighbour still shows
    lone &= ~(np.isfinite(np.r_[np.nan, err[:-1]]) | np.isfinite(np.r_[err[1:], np.nan]))
    if lone.any():
        ax.plot(alpha[lone], err[lone], ls="none", marker="_", ms=8, **{k: v for k, v in kw.items() if k != "lw"})
        dashed = True
    return dashed


def plot(tree, experiments, out_stem):
    """Fig. 3 of the paper (module docstring): one panel per replica experiment, the theory lines of
    each (σ, λ), the ERM markers of its linked experiment and the Bayes-optimal error.

    ``tree``: the store; its root ``config`` attribute gives ``validation.max_theory_rel_sd``
    (the ill-conditioning crosses). ``out_stem``: output path without extension. Returns the
    written [pdf, png] paths. Raises KeyError for an experiment not in the store."""
    fig, axes = panels(len(experiments), width=3.6, height=2.9)
    rel_sd = max_theory_rel_sd(json.loads(tree.attrs.get("config", "{}")))
    for ax, name in zip(axes, experiments):
        draw_panel(ax, tree, tree[f"replica/{name}"].to_dataset(), rel_sd)
    legend_below(fig, axes)
    return save(fig, out_stem)


def draw_panel(ax, tree, rep, rel_sd: float) -> None:
    """One panel of the replica node ``rep``: its theory lines, its Bayes-optimal error and the
    markers of its linked ERM experiment (from ``tree``), log axes and the setting as title;
    ``rel_sd``: the validation's ``max_theory_rel_sd`` (the ill-conditioning crosses)."""
    # layers in drawing order (it fixes the stacking and the legend's order)
    _draw_replica(ax, rep, rel_sd)
    _draw_rsb1(ax, rep)
    _draw_bayes_optimal(ax, rep)
    _draw_linked_erm(ax, tree, rep)
    log_alpha_axis(ax)
    log_error_axis(ax)
    ax.set_title(setting_title(rep))


def _draw_replica(ax, rep, rel_sd: float) -> None:
    """The replica layer of one panel: per σ the best-λ band (λ grid only) and each λ's line with
    its ill-conditioning crosses and second-fixed-point diamonds; one legend entry for the dashes
    when any stretch is RS-unstable."""
    tuned = "lam" in rep.dims and rep.sizes["lam"] > 1
    any_unstable = False
    for s in ordered(rep["sigma"].values) if "sigma" in rep.dims else []:
        if tuned:
            ax.plot(
                rep["alpha"].values,
                rep["test_error_opt_lam"].sel(sigma=s),
                color=COLORS.get(s),
                lw=5,
                alpha=0.25,
                solid_capstyle="round",
                label=f"theory {LABELS.get(s, s)}, best λ per α",
            )
        for i, lam in enumerate(rep["lam"].values):
            any_unstable |= _draw_replica_line(ax, rep, s, lam, LAM_WIDTHS[i % 4], rel_sd)
    if any_unstable:
        ax.plot([], [], color="grey", ls=(0, (3, 2)), lw=1.2, label="theory where RS is unstable (docs/theory.md §11)")


def _draw_replica_line(ax, rep, s: str, lam, lw: float, rel_sd: float) -> bool:
    """The theory line of (σ, λ) (:func:`draw_theory`, converged points only), crosses where its
    Monte Carlo s.d. exceeds ``rel_sd`` of the value and diamonds at a second RS fixed point.
    Returns whether a dashed (RS-unstable) stretch was drawn."""
    alpha = rep["alpha"].values
    err = rep["test_error"].sel(sigma=s, lam=lam)
    if "test_error_seed_mean" in rep:  # the mean over Monte Carlo draws, where measured
        err = rep["test_error_seed_mean"].sel(sigma=s, lam=lam).fillna(err)
    conv = rep["converged"].sel(sigma=s, lam=lam).astype(bool) if "converged" in rep else True
    # rs_stable: 1/0, NaN where not checked (drawn as stable)
    stable = rep["rs_stable"].sel(sigma=s, lam=lam).values != 0 if "rs_stable" in rep else None
    label = f"theory {LABELS.get(s, s)}, λ = {lam:g}"
    unstable = draw_theory(ax, alpha, err.where(conv).values, stable, color=COLORS.get(s), lw=lw, label=label)
    if "test_error_mc_sd" in rep:
        ill = rep["test_error_mc_sd"].sel(sigma=s, lam=lam) > rel_sd * abs(err)
        if bool((ill & conv).any()):
            ax.plot(
                alpha,
                err.where(ill & conv),
                ls="none",
                marker="x",
                ms=5,
                color=COLORS.get(s),
                label=f"theory {LABELS.get(s, s)}: MC s.d. > {rel_sd:.0%} (near a fold)",
            )
    if "n_branches" in rep and bool((rep["n_branches"].sel(sigma=s, lam=lam) > 1).any()):
        ax.plot(
            alpha,
            rep["test_error_alt"].sel(sigma=s, lam=lam),
            ls="none",
            marker="d",
            ms=3,
            fillstyle="none",
            color=COLORS.get(s),
            label=f"second RS fixed point, {LABELS.get(s, s)}",
        )
    return unstable


def _draw_rsb1(ax, rep) -> None:
    """The test error of the 1RSB ground state (a typical minimum at a bracketed s* = argmax Φ:
    slrpipe.theory.replica.rsb1.scan, docs/theory.md §13) where the node has 1RSB points: per (σ, λ)
    large open squares, joined by a dotted line only between neighbours on the α grid (nothing is
    drawn across an α without one), and small open circles for RS on the same (outer) samples where
    1RSB has no ground state (not solved, or no maximum of Φ bracketed: a lower bound only)."""
    if "rsb1_test_error" not in rep:
        return
    alpha = rep["alpha"].values
    for s in ordered(rep["sigma"].values):
        for lam in rep["lam"].values:
            gs = rep["rsb1_test_error"].sel(sigma=s, lam=lam)
            if "rsb1_bracketed" in rep:
                gs = gs.where(rep["rsb1_bracketed"].sel(sigma=s, lam=lam) == 1)
            solved = rep["rsb1_rs_test_error"].sel(sigma=s, lam=lam).notnull()
            name = f"{LABELS.get(s, s)}, λ = {lam:g}"
            if bool(gs.notnull().any()):
                ax.plot(  # NaN where not solved: the line breaks there
                    alpha,
                    gs.values,
                    ls=":",
                    lw=1,
                    marker="s",
                    ms=6,
                    fillstyle="none",
                    color=COLORS.get(s),
                    label=f"1RSB (s*) {name}",
                )
            none = (solved & gs.isnull()).values
            if none.any():
                ax.plot(
                    alpha[none],
                    rep["rsb1_rs_test_error"].sel(sigma=s, lam=lam).values[none],
                    ls="none",
                    marker="o",
                    ms=6,
                    fillstyle="none",
                    color=COLORS.get(s),
                    label=f"1RSB not solved (RS, same samples) {name}",
                )


def _draw_bayes_optimal(ax, rep) -> None:
    """The Bayes-optimal error where the node has it, and its uninformed state-evolution branch
    (dotted) where that differs."""
    if "bayes_optimal_test_error" not in rep:
        return
    alpha = rep["alpha"].values
    ax.plot(alpha, rep["bayes_optimal_test_error"], color="black", lw=1.2, label="Bayes-optimal")
    # first-order transition: where the branch reached from an uninformed start differs
    # visibly (> 1e-3; the two solves of one branch differ by rounding only)
    unf = rep["bayes_optimal_test_error_uninformed"]
    differs = abs(unf - rep["bayes_optimal_test_error"]) > 1e-3
    if bool(differs.any()):
        ax.plot(
            alpha,
            unf.where(differs),
            color="black",
            lw=1,
            ls=":",
            marker=".",
            ms=3,
            label="Bayes-optimal SE, uninformed branch",
        )


def _draw_linked_erm(ax, tree, rep) -> None:
    """The markers of the ERM experiment the replica node links (``erm`` attribute), when the store
    has it: informed start at its largest D, and with a λ grid each σ at its best λ (stars)."""
    erm_name = json.loads(rep.attrs.get("erm", "null"))
    if not (erm_name and erm_name in tree.get("erm", {})):
        return
    erm = reference(largest_D(tree[f"erm/{erm_name}"].to_dataset()))  # informed start, largest D of a ladder
    pop = "test_error_pop" in erm and bool(erm["test_error_pop"].notnull().any())
    var = "test_error_pop" if pop else "test_error"
    draw_erm(ax, erm, var=var, label_suffix=" (R at learned k, v)" if pop else "")
    if erm.sizes["lam"] <= 1:
        return
    best = at_best_lam(erm, report=var)
    for s in ordered(best["sigma"].values):
        m, se = mean_se(best.sel(sigma=s))
        ax.errorbar(
            erm["alpha"].values,
            m.values,
            yerr=se.values,
            ls="none",
            marker="*",
            ms=8,
            capsize=2,
            color=COLORS.get(s),
            mec="black",
            mew=0.5,
            label=f"ERM {LABELS.get(s, s)}, best λ (validation error)",
        )
