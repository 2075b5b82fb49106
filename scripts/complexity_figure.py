"""The 1RSB complexity curve Σ(e) at one point, with the energies of ERM's minima placed on it
(docs/theory.md §13): informed start, random starts (mean over the restarts of each seed) and the
ground state found over all starts, each extrapolated D → ∞ (slrpipe.analysis.ladder.point_ladder) with
its s.e. band, and the RS objective on the same outer samples.

Inputs: the JSON of ``scripts/rsb1_table.py --json`` (the RS solution and the s scan: Φ(s), the
energy of a typical state e(s) = α E⟨loss⟩ + (λ/2) tr q₁ and Σ(s), docs/theory.md §13) and a store
with a D ladder and several starts per seed (config/distance.yaml). Left: Φ(s) and e(s) against s;
right: Σ against e, the parametric curve (e(s), Σ(s)), open markers where the solve did not converge.
All energies are objectives per dimension, 𝓛/D.

Usage: python scripts/complexity_figure.py --scan rsb1.json --store results/slr.zarr
           --experiment spiked_L3_nu1 --lam 0.1 --alpha 1 --out results/figures/complexity
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from matplotlib.ticker import MaxNLocator

from slrpipe.analysis.aggregate import open_store
from slrpipe.analysis.ladder import point_ladder
from slrpipe.figures.style import COLORS, legend_below, panels, save
from slrpipe.theory.replica import rsb1


def erm_energies(store: str, experiment: str, sigma: str, lam: float, alpha: float) -> dict:
    """{name: (D → ∞ limit, s.e., law, {D: seed mean})} of 𝓛/D for the informed start, the random
    starts (mean over restarts per seed) and the ground state found over all starts (L-BFGS).

    Raises:
        SystemExit: the node has no D ladder or no point (σ, λ, α).
    """
    node = open_store(store)[f"erm/{experiment}"].to_dataset()
    if "D" not in node.dims:
        raise SystemExit(f"{experiment}: no D ladder")
    pt = node.sel(sigma=sigma, lam=lam, alpha=alpha)
    lbfgs = pt.sel(optimizer="lbfgs") if "optimizer" in pt.dims else pt
    series = {
        "informed": lbfgs["train_loss"].sel(init="informed", restart=0) * alpha,
        "random": (lbfgs["train_loss"].sel(init="random") * alpha).mean("restart"),
        "ground state": pt["train_loss_ground"] * alpha,
    }
    out = {}
    for name, v in series.items():
        v = v.drop_vars(["init", "restart", "optimizer"], errors="ignore")
        pl = point_ladder(v)
        per_D = {int(D): float(v.sel(D=D).mean()) for D in node["D"].values}
        out[name] = (pl.fit.limit, pl.fit.limit_se, pl.fit.law, per_D) if pl.fit else (np.nan, np.nan, "", per_D)
    return out


def draw(scan: dict, erm: dict, title: str, out: str):
    """Two panels (module docstring); returns the written paths (PDF, PNG)."""
    rows = scan["scan"]
    s = np.array([r["s"] for r in rows])
    phi = np.array([r["phi"] for r in rows])
    e = np.array([r["energy_direct"] for r in rows])
    sig = np.array([r["sigma"] for r in rows])
    sig_se = np.array([r["sigma_se"] for r in rows])
    conv = np.array([bool(r["converged"]) for r in rows])
    e_rs = scan["rs"]["objective"]
    fig, (a, b) = panels(2, width=3.6, height=2.9)
    c = COLORS["softmax"]
    a.plot(s, phi, "-", color=c, label="1RSB Φ(s)")
    a.plot(s, e, "--", color=c, label="1RSB e(s), a typical state")
    if (~conv).any():
        a.scatter(s[~conv], phi[~conv], facecolors="white", edgecolors=c, zorder=3, label="not converged")
    a.axhline(e_rs, color="grey", lw=1, label="RS objective")
    shades = {"informed": "#2ca02c", "random": "#ff7f0e", "ground state": "#d62728"}
    for name, (lim, se, law, _) in erm.items():
        a.axhline(lim, color=shades[name], lw=1, ls=":", label=f"ERM {name}, D → ∞ ({law}) ± s.e.")
        a.axhspan(lim - se, lim + se, color=shades[name], alpha=0.12, lw=0)
    a.set_xscale("log")
    a.set_xlabel("Parisi parameter s")
    a.set_ylabel(r"objective per dimension $\mathcal{L}/D$")
    phys = rsb1.physical(rows)  # de/ds ≤ 0: Σ concave in e
    for mask, fmt, lab in (
        (conv & phys, "o", "1RSB (e(s), Σ(s)) ± s.e., de/ds ≤ 0"),
        (conv & ~phys, "^", "de/ds > 0 (not physical)"),
    ):
        if mask.any():
            b.errorbar(
                e[mask], sig[mask], yerr=sig_se[mask], fmt=fmt, color=c, ms=3, elinewidth=0.6, capsize=2, label=lab
            )
    b.plot(e[conv], sig[conv], "-", color=c, lw=0.8, alpha=0.6)
    if (~conv).any():
        b.scatter(e[~conv], sig[~conv], facecolors="white", edgecolors=c, zorder=3, label="not converged")
    star = scan.get("star")
    if star:
        b.plot(
            [star["energy_direct"]], [star["sigma"]], "*", color="black", ms=8, label=f"s* = {star['s']:.3g} (Σ = 0)"
        )
    # label the ends and the points that stand apart (clustered labels would overprint)
    span = max(np.ptp(e), 1e-12)
    last = -np.inf
    for x, y, t in sorted(zip(e, sig, s), key=lambda z: z[0]):
        if x - last > 0.08 * span:
            b.annotate(f"s={t:g}", (x, y), textcoords="offset points", xytext=(3, 3), fontsize=6)
            last = x
    b.plot([e_rs], [0.0], "s", color="grey", label="RS")
    for name, (lim, se, _, per_D) in erm.items():
        b.axvline(lim, color=shades[name], lw=1, ls=":")
        b.axvspan(lim - se, lim + se, color=shades[name], alpha=0.12, lw=0)
        Ds = ", ".join(str(D) for D in per_D)
        b.plot(list(per_D.values()), [0.0] * len(per_D), "|", color=shades[name], ms=10, label=f"ERM {name}, D = {Ds}")
    b.axhline(0.0, color="black", lw=0.6)
    m = conv & phys
    if m.sum() >= 2 and (conv & ~phys).any():  # the physical part, magnified
        ins = b.inset_axes([0.55, 0.3, 0.42, 0.42])
        ins.errorbar(e[m], sig[m], yerr=sig_se[m], fmt="o-", color=c, ms=2, lw=0.8, elinewidth=0.5, capsize=1.5)
        if star:
            ins.plot([star["energy_direct"]], [star["sigma"]], "*", color="black", ms=6)
        ins.axhline(0.0, color="black", lw=0.5)
        ins.tick_params(labelsize=5)
        ins.xaxis.set_major_locator(MaxNLocator(3))
        ins.set_title("de/ds ≤ 0", fontsize=6)
    b.xaxis.set_major_locator(MaxNLocator(5))
    b.set_xlabel(r"energy $e = \mathcal{L}/D$")
    b.set_ylabel("complexity Σ")
    fig.suptitle(title)
    legend_below(fig, [a, b])
    return save(fig, out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scan", required=True, help="JSON of scripts/rsb1_table.py --json")
    ap.add_argument("--store", required=True)
    ap.add_argument("--experiment", required=True)
    ap.add_argument("--sigma", default="softmax")
    ap.add_argument("--lam", type=float, required=True)
    ap.add_argument("--alpha", type=float, required=True)
    ap.add_argument("--out", required=True, help="output path without suffix (PDF and PNG are written)")
    a = ap.parse_args(argv)
    with open(a.scan) as fh:
        scan = json.load(fh)
    erm = erm_energies(a.store, a.experiment, a.sigma, a.lam, a.alpha)
    for name, (lim, se, law, per_D) in erm.items():
        print(
            f"ERM {name}: "
            + " / ".join(f"D={D}: {v:.5f}" for D, v in per_D.items())
            + f" → {lim:.5f} ± {se:.5f} ({law})"
        )
    args = scan["args"]
    title = (
        f"{a.sigma}, {args.get('model', 'spiked')}-SLR ν = {args['nu']:g}, L = {args['L']}, λ = {a.lam:g}, "
        f"α = {a.alpha:g}; N₀ = {scan['n_outer']}, N₁ = {scan['n_inner']}"
    )
    for p in draw(scan, erm, title, a.out):
        print(p)


if __name__ == "__main__":
    main()
