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
    slrpipe.store.trajectory) from every random start, at the smallest and largest α of those runs,
    one panel each; horizontal lines: the informed start's final value (dashed) and the replica
    value (dotted).
(c) fraction of random starts whose final objective is within ``RTOL`` (relative) of the informed
    start's or below it (slrpipe.store.ground.reached), over restarts and seeds, vs α.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from slrpipe.store.ground import reached, reference
from slrpipe.store.ladder import largest_D
from slrpipe.vocabulary import FIRST_ORDER

from .style import COLORS, LABELS, MARKERS, legend_below, log_alpha_axis, ordered, panels, save, setting_title

#: relative tolerance on the final objective J for "reached the informed minimum" (panel c): far
#: above the spread of J at one minimum (|∇J| < 1e-5: relative changes ≲ 1e-6) and below the gaps
#: between distinct minima seen at small α (≳ 5·10⁻³ relative)
RTOL = 1e-3
SETTING = ("model", "nu", "L", "delta")


def _setting(ds) -> tuple:
    return tuple(str(ds[k].values) if k in ds.coords else None for k in SETTING)


def _replica(tree, setting):
    """The stored replica node of this data setting, or None."""
    for node in (tree.get("replica") or {}).values():
        ds = node.to_dataset()
        if _setting(ds) == setting:
            return ds
    return None


#: realised α = n/D differs from the nominal grid by rounding (0.4994 for 0.5 at D = 849): a point
#: this close (relative) to the replica grid's ends still reads the end value
ALPHA_RTOL = 0.01


def replica_at(rep, sigma, lam, alpha, var="test_error") -> float:
    """``var`` of the replica node at (σ, λ), interpolated in log α to ``alpha``; NaN where the node
    lacks σ or λ or ``alpha`` lies outside its α grid (beyond ``ALPHA_RTOL``)."""
    if (
        rep is None
        or var not in rep
        or sigma not in rep["sigma"].values
        or not np.isclose(rep["lam"].values, lam).any()
    ):
        return np.nan
    r = rep[var].sel(sigma=sigma).isel(lam=int(np.argmax(np.isclose(rep["lam"].values, lam))))
    grid = rep["alpha"].values
    if not grid.min() * (1 - ALPHA_RTOL) <= alpha <= grid.max() * (1 + ALPHA_RTOL):
        return np.nan
    return float(np.interp(np.log(alpha), np.log(grid), r.values))


def mean_se(da: xr.DataArray, dim="seed"):
    """Mean over ``dim`` and its standard error (s.d. with ddof 1 / √count; NaN where fewer than
    two values), both DataArrays without ``dim``; NaN values are skipped."""
    n = da.count(dim)
    return da.mean(dim), (da.std(dim, ddof=1) / np.sqrt(n)).where(n > 1)


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
    nodes = [largest_D(tree[f"erm/{name}"].to_dataset()) for name in experiments]  # largest D of a ladder
    if not nodes:
        raise ValueError("experiments: the optimization figure needs at least one erm experiment")
    setting = _setting(nodes[0])
    for name, ds in zip(experiments, nodes):
        if _setting(ds) != setting:
            raise ValueError(f"experiments: {name} has setting {_setting(ds)}, not {setting}; one setting per figure")
    sweeps = [ds for ds in nodes if "lbfgs" in ds["optimizer"].values and "random" in ds["init"].values]
    dyn = [
        ds for ds in nodes if any(o in FIRST_ORDER for o in ds["optimizer"].values) and "random" in ds["init"].values
    ]
    rep = _replica(tree, setting)
    bayes_pop = None
    for name in experiments:
        if f"at_{name}" in (tree.get("population") or {}):
            bayes_pop = float(tree[f"population/at_{name}"].to_dataset()["risk"].sel(sigma="bayes").values[0])
    fig, axes = panels(4, width=3.3, height=2.9)
    ax_a, ax_b1, ax_b2, ax_c = axes

    # (a) informed vs best random start vs theory
    for ds in sweeps:
        var, lam = _err_var(ds), float(ds["lam"].values[0])
        ds = ds.sel(lam=lam)
        alpha = ds["alpha"].values
        for s in ordered(ds["sigma"].values):
            c, mk = COLORS.get(s), MARKERS.get(s, "o")
            m, se = mean_se(reference(ds)[var].sel(sigma=s))
            ax_a.errorbar(
                alpha, m, yerr=se, ls="none", marker=mk, color=c, ms=4, label=f"{LABELS.get(s, s)}, informed start"
            )
            m, se = mean_se(best_random(ds, var, "lbfgs").sel(sigma=s))
            ax_a.errorbar(
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
            if rep is not None and s in rep["sigma"].values and np.isclose(rep["lam"].values, lam).any():
                r = rep["test_error"].sel(sigma=s).isel(lam=int(np.argmax(np.isclose(rep["lam"].values, lam))))
                r = r.where(rep["converged"].sel(sigma=s, lam=r["lam"])) if "converged" in rep else r
                ax_a.plot(rep["alpha"].values, r.values, color=c, lw=1, label=f"{LABELS.get(s, s)}, replica (RS)")
        ax_a.set_title(f"(a) {setting_title(ds)}, λ = {lam:g}")
        _bayes(ax_a, rep, bayes_pop)
        _plain_log(ax_a.yaxis)
        ax_a.set_ylabel(f"test error ({'R at learned k, v' if var == 'test_error_pop' else 'test set'})")
        log_alpha_axis(ax_a)

    # (b) population risk along the first-order trajectories, smallest and largest α
    if dyn:
        ds = dyn[0]
        opt = next(o for o in ds["optimizer"].values if o in FIRST_ORDER)
        lam = float(ds["lam"].values[0])
        alphas = ds["alpha"].values
        lr = float(ds["lr"].sel(optimizer=opt).max()) if "lr" in ds else np.nan
        for ax, a in ((ax_b1, alphas.min()), (ax_b2, alphas.max())):
            pt = ds.sel(lam=lam, alpha=a, optimizer=opt)
            steps = pt["step"].values
            keep = steps > 0
            for s in ordered(pt["sigma"].values):
                c = COLORS.get(s)
                runs = pt["traj_test_error_pop"].sel(sigma=s, init="random").stack(run=("seed", "restart"))
                first = True
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
                    ax.axhline(
                        float(inf), color=c, ls="--", lw=1, label=f"{LABELS.get(s, s)}, informed start ({opt}, end)"
                    )
                val = replica_at(rep, s, lam, a)
                if np.isfinite(val):
                    ax.axhline(val, color=c, ls=":", lw=1.2, label=f"{LABELS.get(s, s)}, replica (RS) at this α")
            _plain_log(ax.xaxis)
            _plain_log(ax.yaxis)
            ax.set_xlabel(f"{opt} steps (step size {lr:g}·D on k, v)" if opt != "adam" else f"adam steps (lr {lr:g})")
            ax.set_ylabel("population risk R(σ; k_t, v_t)")
            ax.set_title(f"(b) α = {a:.3g}, λ = {lam:g}")
    else:
        for ax in (ax_b1, ax_b2):
            ax.set_visible(False)

    # (c) fraction of random starts reaching the informed minimum
    for ds in sweeps:
        ds = ds.sel(lam=ds["lam"].values[0])
        hit = reached(ds, RTOL).sel(init="random", optimizer="lbfgs")
        exists = ds["train_loss"].sel(init="random", optimizer="lbfgs").notnull()
        frac = hit.where(exists).sum(("restart", "seed")) / exists.sum(("restart", "seed"))
        for i, s in enumerate(ordered(ds["sigma"].values)):
            # σ side by side (×1.04 per σ on the log axis): equal fractions would hide each other
            ax_c.plot(
                ds["alpha"].values * 1.04**i,
                frac.sel(sigma=s).values,
                marker=MARKERS.get(s, "o"),
                color=COLORS.get(s),
                ms=4,
                ls="-" if i == 0 else "--",
                label=None,
            )
        n = int(exists.sum(("restart", "seed")).max())
        ax_c.set_title("(c) random starts reaching the informed minimum")
        ax_c.set_ylabel(f"fraction of {n} with J ≤ (1 + {RTOL:g}) J_informed")
    ax_c.set_ylim(-0.05, 1.05)
    log_alpha_axis(ax_c)
    legend_below(fig, axes)
    return save(fig, out_stem)


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
