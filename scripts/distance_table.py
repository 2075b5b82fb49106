"""Distance between the minima that ERM's informed start and a random start reach on the same data,
over a D ladder (config/distance.yaml; store variable ``dist_informed``, slrpipe.store.distance):
per (σ, λ, α), the seed mean ± s.e. of d = (1/D)(|k_a − k_b|² + |v_a − v_b|²) at each D, how many
seeds reached the informed start's minimum (d < SAME), the mean objective gap 𝓛/D (random −
informed), and the extrapolation D → ∞ (a + b/D or a + b/√D, slrpipe.store.ladder.point_ladder).
Replica symmetry predicts d → 0; a finite limit says the starts end in distinct minima.

Usage: python scripts/distance_table.py --store results/slr.zarr --experiment spiked_L3_nu1
"""

from __future__ import annotations

import argparse

import numpy as np

from slrpipe.store.aggregate import open_store
from slrpipe.store.ladder import point_ladder

#: below this d the two starts count as the same minimum (L-BFGS stops at |∇| ~ 1e-6 or so)
SAME = 1e-4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--experiment", required=True)
    ap.add_argument("--optimizer", default="lbfgs")
    a = ap.parse_args()
    node = open_store(a.store)[f"erm/{a.experiment}"].to_dataset()
    if "D" not in node.dims:
        raise SystemExit(f"{a.experiment}: no D ladder (config D: [D₁, D₂, …])")
    run = dict(init="random", restart=0, optimizer=a.optimizer)
    dist = node["dist_informed"].sel(**run)
    gap = (
        node["train_loss"].sel(**run) - node["train_loss"].sel(init="informed", restart=0, optimizer=a.optimizer)
    ) * node["alpha"]
    print(
        f"{a.experiment}: d = (1/D)|W_random − W_informed|², seeds {node['seed'].values.tolist()}, same minimum: d < {SAME:g}"
    )
    print(
        f"{'sigma':<8}{'lam':>6}{'alpha':>6}  "
        + "  ".join(f"{'D=' + str(int(D)):>22}" for D in node["D"].values)
        + f"  {'D → ∞':>20}  law"
    )
    for s in node["sigma"].values:
        for lam in node["lam"].values:
            for al in node["alpha"].values:
                d = dist.sel(sigma=s, lam=lam, alpha=al)
                pl = point_ladder(d)  # the per-D means and s.e. that the extrapolation uses
                cells = []
                for D, mean, se in zip(pl.D, pl.mean, pl.se, strict=True):
                    x = d.sel(D=D).values
                    x = x[np.isfinite(x)]
                    g = gap.sel(sigma=s, lam=lam, alpha=al, D=D).values
                    cells.append(f"{mean:.4f}±{se:.4f} {int((x < SAME).sum())}/{x.size} {np.nanmean(g):+.3f}")
                lim = f"{pl.fit.limit:.4f} ± {pl.fit.limit_se:.4f}" if pl.fit else "—"
                print(
                    f"{s:<8}{lam:>6g}{al:>6g}  "
                    + "  ".join(f"{c:>22}" for c in cells)
                    + f"  {lim:>20}  {pl.fit.law if pl.fit else ''}"
                )
    print(
        "cells: mean ± s.e. (t-corrected, slrpipe.store.extrapolate.ladder_means) of d, seeds at the informed minimum, mean objective gap 𝓛/D (random − informed)"
    )


if __name__ == "__main__":
    main()
