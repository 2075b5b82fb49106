"""Figure ``optimization``: what gradient-based training reaches from random starts.

The figure's experiments are read as one study of one data setting (same model, ν, L, Δ; the first
λ of each): those with L-BFGS runs give panels (a) and (c), those with first-order runs (gd, sgd,
adam) panel (b).

(a) test error vs α, mean ± s.e. over seeds, for each σ: the informed start (filled) and the best
    of the random starts — per seed the random start with the lowest final objective J (open); the
    replica prediction of the same σ and λ (solid, when the store has a replica experiment of this
    setting) and the Bayes-optimal error (black: the state evolution when stored, else the Bayes
    risk at α = ∞ from the population sweep, dotted). The error is the population risk at the
    learned weights where the store has it (``test_error_pop``), else the finite-test-set error.
(b) population risk R(σ; Gram_t) along the first-order trajectories (``traj_test_error_pop``,
    slrpipe.analysis.trajectory) from every random start, at the smallest and largest α of those runs,
    one panel each; horizontal lines: the informed start's final value (dashed) and the replica
    value (dotted).
(c) fraction of random starts whose final objective is within ``RTOL`` (relative) of the informed
    start's or below it (slrpipe.analysis.ground.reached), over restarts and seeds, vs α.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from slrpipe.analysis.ground import reached, reference
from slrpipe.analysis.ladder import largest_D
from slrpipe.analysis.replica import replica_at, replica_node, setting
from slrpipe.analysis.seeds import mean_se
from slrpipe.vocabulary import FIRST_ORDER

from .style import COLORS, LABELS, MARKERS, legend_below, log_alpha_axis, ordered, panels, save, setting_title

#: relative tolerance on the final objective J for "reached the informed minimum" (panel c): far
#: above the spread of J at one minimum (|∇J| < 1e-5: relative changes ≲ 1e-6) and below the gaps
#: between distinct minima seen at small α (≳ 5·10⁻³ relative)
RTOL = 1e-3


def best_random(node: xr.Dataset, var: str, optimizer: str) -> xr.DataArray:
    """Per (σ, λ, α, seed): ``var`` at the random start (any restart) of ``optimizer`` with the lowest
    final objective; NaN where there is none."""
    runs = node.sel(init="random", optimizer=optimizer)
    loss = runs["train_loss"].where(np.isfinite(runs["train_loss"]))
    has = loss.notnull().any("restart")
    best = loss.fillna(np.inf).argmin("restart")
    return runs[var].isel(restart=best).where(has)


def _err_var(ds) -> str:
    return "test_error_pop" if "test_error_pop" in ds and bool(ds["test_error_pop"].notnull().any()) else "test_error"


def plot(tree, experiments, out_stem):
    """The figure 'optimization' (module docstring): panels (a) informed vs best random start vs α
    against the replica line, (b) the population risk along first-order training from random
    starts, (c) the fraction of random starts at the informed minimum.

    ``experiments``: ERM experiment names of one setting (model, L, ν, Δ), e.g. an L-BFGS sweep
    with random starts and a GD run with trajectories. ``out_stem``: output path without
    extension. Returns the written [pdf, png] paths.

    Raises:
        ValueError: no experiment, or experiments of different settings.
    """
    nodes = _one_setting(tree, experiments)
    sweeps = [ds for ds in nodes if "lbfgs" in ds["optimizer"].values and "random" in ds["init"].values]
    dyn = [
        ds for ds in nodes if any(o in FIRST_ORDER for o in ds["optimizer"].values) and "random" in ds["init"].values
    ]
    rep = replica_node(tree, setting(nodes[0]))
    fig, axes = panels(4, width=3.3, height=2.9)
    ax_a, ax_b1, ax_b2, ax_c = axes
    _panel_starts(ax_a, sweeps, rep, _bayes_risk(tree, experiments))
    if dyn:
        _panels_trajectories((ax_b1, ax_b2), dyn[0], rep)
    else:
        for ax in (ax_b1, ax_b2):
            ax.set_visible(False)
    _panel_reached(ax_c, sweeps)
    legend_below(fig, axes)
    return save(fig, out_stem)


def _one_setting(tree, experiments) -> list[xr.Dataset]:
    """The ERM nodes of ``experiments`` (largest D of a ladder), checked to share one setting.

    Raises:
        ValueError: no experiment, or experiments of different settings.
    """
    nodes = [largest_D(tree[f"erm/{name}"].to_dataset()) for name in experiments]  # largest D of a ladder
    if not nodes:
        raise ValueError("experiments: the optimization figure needs at least one erm experiment")
    first = setting(nodes[0])
    for name, ds in zip(experiments, nodes):
        if setting(ds) != first:
            raise ValueError(f"experiments: {name} has setting {setting(ds)}, not {first}; one setting per figure")
    return nodes


def _bayes_risk(tree, experiments) -> float | None:
    """The Bayes risk (α = ∞) of the last experiment with a ``population/at_<name>`` node, or None."""
    bayes_pop = None
    for name in experiments:
        if f"at_{name}" in (tree.get("population") or {}):
            bayes_pop = float(tree[f"population/at_{name}"].to_dataset()["risk"].sel(sigma="bayes").values[0])
    return bayes_pop


def _panel_starts(ax, sweeps, rep, bayes_pop) -> None:
    """Panel (a): per L-BFGS sweep (at its first λ) and σ, the informed and the best random start
    vs α with the replica line; the Bayes-optimal reference and the axes."""
    for ds in sweeps:
        var, lam = _err_var(ds), float(ds["lam"].values[0])
        ds = ds.sel(lam=lam)
        for s in ordered(ds["sigma"].values):
            _draw_starts(ax, ds, s, var)
            _draw_replica_line(ax, rep, s, lam)
        ax.set_title(f"(a) {setting_title(ds)}, λ = {lam:g}")
        _bayes(ax, rep, bayes_pop)
        _plain_log(ax.yaxis)
        ax.set_ylabel(f"test error ({'R at learned k, v' if var == 'test_error_pop' else 'test set'})")
        log_alpha_axis(ax)


def _draw_starts(ax, ds, s: str, var: str) -> None:
    """Mean ± s.e. over seeds of ``var`` for σ = ``s`` of one λ: the informed start (filled) and
    the best random start (open, shifted ×1.04 in α so that the two do not cover each other)."""
    c, mk = COLORS.get(s), MARKERS.get(s, "o")
    alpha = ds["alpha"].values
    m, se = mean_se(reference(ds)[var].sel(sigma=s))
    ax.errorbar(alpha, m, yerr=se, ls="none", marker=mk, color=c, ms=4, label=f"{LABELS.get(s, s)}, informed start")
    m, se = mean_se(best_random(ds, var, "lbfgs").sel(sigma=s))
    ax.errorbar(
        alpha * 1.04,
        m,
        yerr=se,
        ls="none",
        marker=mk,
        mfc="none",
        color=c,
        ms=6,
        label=f"{LABELS.get(s, s)}, best random start",
    )


def _draw_replica_line(ax, rep, s: str, lam: float) -> None:
    """The replica test error of (σ, λ) vs α (converged points only) where the node has them."""
    if rep is None or s not in rep["sigma"].values or not np.isclose(rep["lam"].values, lam).any():
        return
    r = rep["test_error"].sel(sigma=s).isel(lam=int(np.argmax(np.isclose(rep["lam"].values, lam))))
    r = r.where(rep["converged"].sel(sigma=s, lam=r["lam"])) if "converged" in rep else r
    ax.plot(rep["alpha"].values, r.values, color=COLORS.get(s), lw=1, label=f"{LABELS.get(s, s)}, replica (RS)")


def _panels_trajectories(axes, ds, rep) -> None:
    """Panels (b): the population risk along the first-order trajectories of ``ds`` (its first
    first-order optimizer and λ) at its smallest and largest α, one panel each of ``axes``."""
    opt = next(o for o in ds["optimizer"].values if o in FIRST_ORDER)
    lam = float(ds["lam"].values[0])
    alphas = ds["alpha"].values
    lr = float(ds["lr"].sel(optimizer=opt).max()) if "lr" in ds else np.nan
    for ax, a in zip(axes, (alphas.min(), alphas.max())):
        pt = ds.sel(lam=lam, alpha=a, optimizer=opt)
        for s in ordered(pt["sigma"].values):
            _draw_trajectories(ax, pt, s, opt, replica_at(rep, s, lam, a))
        _plain_log(ax.xaxis)
        _plain_log(ax.yaxis)
        ax.set_xlabel(f"{opt} steps (step size {lr:g}·D on k, v)" if opt != "adam" else f"adam steps (lr {lr:g})")
        ax.set_ylabel("population risk R(σ; k_t, v_t)")
        ax.set_title(f"(b) α = {a:.3g}, λ = {lam:g}")


def _draw_trajectories(ax, pt, s: str, opt: str, replica: float) -> None:
    """At one (λ, α, optimizer): every random start's trajectory of σ = ``s`` (step 0 left out: log
    axis), the informed start's final value (dashed) and the ``replica`` value (dotted, if finite)."""
    c = COLORS.get(s)
    steps = pt["step"].values
    keep = steps > 0
    runs = pt["traj_test_error_pop"].sel(sigma=s, init="random").stack(run=("seed", "restart"))
    first = True  # one legend entry for all runs
    for i in range(runs.sizes["run"]):
        y = runs.isel(run=i).values
        if np.isfinite(y[keep]).any():
            ax.plot(
                steps[keep],
                y[keep],
                color=c,
                lw=0.8,
                alpha=0.7,
                label=f"{LABELS.get(s, s)}, {opt} from random starts" if first else None,
            )
            first = False
    if "informed" in pt["init"].values:
        inf = pt["test_error_pop"].sel(sigma=s, init="informed", restart=0).mean("seed")
        ax.axhline(float(inf), color=c, ls="--", lw=1, label=f"{LABELS.get(s, s)}, informed start ({opt}, end)")
    if np.isfinite(replica):
        ax.axhline(replica, color=c, ls=":", lw=1.2, label=f"{LABELS.get(s, s)}, replica (RS) at this α")


def _panel_reached(ax, sweeps) -> None:
    """Panel (c): per L-BFGS sweep (first λ), the fraction of random starts whose final J is within
    ``RTOL`` of the informed start's (slrpipe.analysis.ground.reached) vs α, per σ."""
    for ds in sweeps:
        ds = ds.sel(lam=ds["lam"].values[0])
        hit = reached(ds, RTOL).sel(init="random", optimizer="lbfgs")
        exists = ds["train_loss"].sel(init="random", optimizer="lbfgs").notnull()
        frac = hit.where(exists).sum(("restart", "seed")) / exists.sum(("restart", "seed"))
        for i, s in enumerate(ordered(ds["sigma"].values)):
            # σ side by side (×1.04 per σ on the log axis): equal fractions would hide each other
            ax.plot(
                ds["alpha"].values * 1.04**i,
                frac.sel(sigma=s).values,
                marker=MARKERS.get(s, "o"),
                color=COLORS.get(s),
                ms=4,
                ls="-" if i == 0 else "--",
                label=None,
            )
        n = int(exists.sum(("restart", "seed")).max())
        ax.set_title("(c) random starts reaching the informed minimum")
        ax.set_ylabel(f"fraction of {n} with J ≤ (1 + {RTOL:g}) J_informed")
    ax.set_ylim(-0.05, 1.05)
    log_alpha_axis(ax)


def _plain_log(axis):
    """Log scale with plain-number labels (0.3, 0.5, 1, 2, … and 100, 1000 steps)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.axes.set_xscale("log") if axis is axis.axes.xaxis else axis.axes.set_yscale("log")
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    axis.set_minor_formatter(NullFormatter())


def _bayes(ax, rep, bayes_pop):
    if rep is not None and "bayes_optimal_test_error" in rep:
        ax.plot(
            rep["alpha"].values,
            rep["bayes_optimal_test_error"].values,
            color="black",
            lw=1.2,
            label="Bayes-optimal (state evolution)",
        )
    elif bayes_pop is not None:
        ax.axhline(bayes_pop, color="black", ls=":", lw=1, label="Bayes risk (α = ∞)")
