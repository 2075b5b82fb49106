"""Distance between the minima that ERM's informed start and a random start reach on the same data,
over a D ladder (config/distance.yaml; store variable ``dist_informed``, slrpipe.analysis.distance):
per (σ, λ, α), the seed mean ± s.e. of d = (1/D)(|k_a − k_b|² + |v_a − v_b|²) at each D, how many
seeds reached the informed start's minimum (d < SAME), the mean objective gap 𝓛/D (random −
informed), and the extrapolation D → ∞ (a + b/D or a + b/√D, slrpipe.analysis.ladder.point_ladder).
Replica symmetry predicts d → 0; a finite limit says the starts end in distinct minima.

With more starts per seed (``restarts`` ≥ 2, e.g. 1 informed + 9 random), a second table: the
distance between the two lowest minima found on the same data, d₂
(slrpipe.analysis.distance.second_lowest), per D and D → ∞, and the distance of the ground state
found to the informed start's minimum. A third: the ground state found over all starts
(``*_ground``, slrpipe.analysis.ground) against the informed start — objective 𝓛/D and test error
(the population risk at the learned weights, ``test_error_pop``) per D and D → ∞.

Usage: python scripts/distance_table.py --store results/slr.zarr --experiment spiked_L3_nu1
"""

from __future__ import annotations

import itertools

import numpy as np

from slrpipe.analysis.aggregate import experiment_node, open_store
from slrpipe.analysis.distance import second_lowest
from slrpipe.analysis.ladder import point_ladder
from slrpipe.commands.store_args import erm_experiment_parser

#: below this d the two starts count as the same minimum (L-BFGS stops at |∇| ~ 1e-6 or so)
SAME = 1e-4


def _points(node):
    """(σ, λ, α) of every point of the node, in coordinate order."""
    return itertools.product(node["sigma"].values, node["lam"].values, node["alpha"].values)


def _header(node, width: int, last: str) -> None:
    D_cols = "  ".join(f"{'D=' + str(int(D)):>{width}}" for D in node["D"].values)
    print(f"{'sigma':<8}{'lam':>6}{'alpha':>6}  {D_cols}  {last:>20}  law")


def _row(point, cells, width: int, pl) -> None:
    s, lam, al = point
    lim = f"{pl.fit.limit:.4f} ± {pl.fit.limit_se:.4f}" if pl.fit else "—"
    print(
        f"{s:<8}{lam:>6g}{al:>6g}  "
        + "  ".join(f"{c:>{width}}" for c in cells)
        + f"  {lim:>20}  {pl.fit.law if pl.fit else ''}"
    )


def main(argv=None):
    a = erm_experiment_parser(__doc__.splitlines()[0]).parse_args(argv)
    node = experiment_node(open_store(a.store), "erm", a.experiment)
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
    _header(node, 22, "D → ∞")
    for s, lam, al in _points(node):
        d = dist.sel(sigma=s, lam=lam, alpha=al)
        pl = point_ladder(d)  # the per-D means and s.e. that the extrapolation uses
        cells = []
        for D, mean, se in zip(pl.D, pl.mean, pl.se, strict=True):
            x = d.sel(D=D).values
            x = x[np.isfinite(x)]
            g = gap.sel(sigma=s, lam=lam, alpha=al, D=D).values
            cells.append(f"{mean:.4f}±{se:.4f} {int((x < SAME).sum())}/{x.size} {np.nanmean(g):+.3f}")
        _row((s, lam, al), cells, 22, pl)
    print(
        "cells: mean ± s.e. (t-corrected, slrpipe.analysis.extrapolate.ladder_means) of d, seeds at the informed minimum, mean objective gap 𝓛/D (random − informed)"
    )
    if node.sizes.get("restart", 1) >= 2:
        lowest_two(node)
        ground_ladder(node)


def lowest_two(node) -> None:
    """The table of the two lowest minima over all starts (module docstring): d₂ per D (seed mean ±
    s.e.) and D → ∞, and the mean distance of the ground state found to the informed minimum."""
    print("\ntwo lowest minima over all starts per seed: d₂ = (1/D)|W₁ − W₂|² (0 where both are one minimum)")
    d2 = second_lowest(node)
    _header(node, 22, "d₂, D → ∞")
    for s, lam, al in _points(node):
        pl = point_ladder(d2.sel(sigma=s, lam=lam, alpha=al))
        ground = node["dist_informed_ground"].sel(sigma=s, lam=lam, alpha=al)
        cells = [
            f"{m:.4f}±{e:.4f} {float(ground.sel(D=D).mean()):.2f}" for D, m, e in zip(pl.D, pl.mean, pl.se, strict=True)
        ]
        _row((s, lam, al), cells, 22, pl)
    print("cells: d₂ mean ± s.e. over seeds, mean distance ground state – informed minimum")


def ground_ladder(node) -> None:
    """The third table (module docstring): informed start vs ground state found, D → ∞."""
    info = node.sel(init="informed", restart=0).isel(optimizer=0)
    cols = [
        ("𝓛/D informed", info["train_loss"] * node["alpha"]),
        ("𝓛/D ground", node["train_loss_ground"] * node["alpha"]),
        ("e informed", info["test_error_pop"]),
        ("e ground", node["test_error_pop_ground"]),
    ]
    print("\nground state over all starts vs the informed start: per D (seed means), and D → ∞ ± s.e. (law)")
    print(f"{'sigma':<8}{'lam':>6}{'alpha':>6}  " + "  ".join(f"{name:>40}" for name, _ in cols))
    for s, lam, al in _points(node):
        cells = []
        for _, var in cols:
            v = var.sel(sigma=s, lam=lam, alpha=al).drop_vars(["init", "restart", "optimizer"], errors="ignore")
            pl = point_ladder(v)
            per_D = "/".join(f"{float(v.sel(D=D).mean()):.4g}" for D in node["D"].values)
            lim = f"{pl.fit.limit:.4g}±{pl.fit.limit_se:.2g} ({pl.fit.law})" if pl.fit else "—"
            cells.append(f"{per_D} → {lim}")
        print(f"{s:<8}{lam:>6g}{al:>6g}  " + "  ".join(f"{c:>40}" for c in cells))


if __name__ == "__main__":
    main()
