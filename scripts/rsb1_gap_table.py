"""RS, 1RSB and ERM side by side at the disputed points, and the fraction of the RS–ERM gap that 1RSB
closes (docs/theory.md §13): one row per ``scripts/rsb1_table.py --json`` file.

Per point: the RS objective and test error on the 1RSB's outer samples (hard channel); the 1RSB
state reported — at s* where Σ crosses zero within the physical part of the scan, else the s of
largest Φ on that part (converged, de/ds ≤ 0: ``rsb1.physical``; Φ(s) ≤ e_gs for every s, so that
Φ is a lower bound of the ground-state energy), with its Σ ± s.e., the typical state's test error and
2 tr(Q₁ − Q₀) = 2(δq_k + δq_v), the distance between two states; ERM from a store with a D ladder and
several starts per seed (config/distance.yaml): the ground state found over all starts, objective
𝓛/D and test error (population risk at the learned weights), and the distances d
(informed vs first random start) and d₂ (the two lowest minima), all extrapolated D → ∞
(slrpipe.analysis.ladder.point_ladder); and the gap closed, (1RSB − RS)/(ERM − RS), for the objective
and the test error ("no gap" where ERM's D → ∞ value lies within 2 s.e. of RS's: ERM's s.e. and,
for the objective, the RS objective's outer Monte Carlo s.e. combined; the RS test error's is not
estimated here).

Usage: python scripts/rsb1_gap_table.py --store results/slr.zarr [--store other.zarr]
           scan1.json scan2.json …
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
import xarray as xr
from distance_table import two_lowest

from slrpipe.analysis.aggregate import open_store
from slrpipe.analysis.ladder import point_ladder
from slrpipe.analysis.rsb1 import choose, gap_closed, max_inside
from slrpipe.theory.replica import rsb1


def _limit(values) -> tuple[float, float]:
    """(D → ∞ limit, s.e.) of a (D, seed) array, NaNs where no fit."""
    pl = point_ladder(values)
    return (pl.fit.limit, pl.fit.limit_se) if pl.fit else (math.nan, math.nan)


def find_node(stores, model: str, nu: float, L: int, lam: float, alpha: float, sigma: str = "softmax"):
    """The ERM node (xarray Dataset) of the stores holding σ at (model, ν, L, λ, α) with a D
    ladder, or None."""
    for store in stores:
        erm = open_store(store)["erm"]
        for name in erm.children:
            node = erm[name].to_dataset()
            if "D" not in node.dims or str(node["model"].values) != model:
                continue
            if float(node["nu"].values) != nu or int(node["L"].values) != L:
                continue
            if lam in node["lam"].values and alpha in node["alpha"].values and sigma in node["sigma"].values:
                return node.sel(sigma=sigma, lam=lam, alpha=alpha)
    return None


def erm_summary(pt, optimizer: str = "lbfgs") -> dict:
    """D → ∞ limits at one point (a node selected at σ, λ, α): objective and test error of the
    ground state found, and the distances d and d₂."""
    alpha = float(pt["alpha"].values)
    out = {
        "obj_ground": _limit(pt["train_loss_ground"] * alpha),
        "err_ground": _limit(pt["test_error_pop_ground"]),
        "d": _limit(pt["dist_informed"].sel(init="random", restart=0, optimizer=optimizer)),
    }
    runs = pt.sel(optimizer=optimizer).stack(run=("init", "restart"))
    loss, dist = (runs[v].transpose("D", "seed", "run").values for v in ("train_loss", "dist_ground"))
    d2 = [[two_lowest(lo, di)[0] for lo, di in zip(ls, ds, strict=True)] for ls, ds in zip(loss, dist, strict=True)]
    out["d2"] = _limit(xr.DataArray(np.array(d2), dims=("D", "seed"), coords={"D": pt["D"], "seed": pt["seed"]}))
    return out


def rsb1_summary(scan: dict) -> dict | None:
    """The reported 1RSB row (module docstring) with its kind ('s*', 'max Φ inside' where converged
    physical rows of lower Φ lie on both sides, else 'max Φ'), or None where no s converged on the
    physical part of the curve (``rsb1.physical``: de/ds ≤ 0); s* counts only where it lies within
    that part."""
    rows, star = scan["scan"], scan.get("star")
    ok = rsb1.physical(rows)  # converged rows only
    phi = [r["phi"] for r in rows]
    keep_star, i = choose([r["s"] for r in rows], ok, phi, star["s"] if star else None)
    if keep_star:
        return dict(star, kind="s*")
    return None if i is None else dict(rows[i], kind="max Φ inside" if max_inside(ok, phi, i) else "max Φ")


def _pm(v: tuple[float, float], digits: int) -> str:
    return "—" if not math.isfinite(v[0]) else f"{v[0]:.{digits}f} ± {v[1]:.{digits}f}"


def row(scan: dict, stores) -> str:
    """One markdown row of the table."""
    a = scan["args"]
    model, nu, lam, alpha = a.get("model", "spiked"), float(a["nu"]), float(a["lam"]), float(a["alpha"])
    rs = scan["rs"]
    r = rsb1_summary(scan)
    sigma = a.get("sigma", "softmax")  # scans written before --sigma existed are softmax
    pt = find_node(stores, model, nu, int(a["L"]), lam, alpha, sigma)
    erm = erm_summary(pt) if pt is not None else None
    name = f"{sigma} {model} ν = {nu:g}, λ = {lam:g}, α = {alpha:g}"
    rs_cell = f"{rs['objective']:.4f} ± {alpha * rs['train_loss_se']:.4f} / {rs['test_error']:.3f}"
    if r is None:
        return f"| {name} | {rs_cell} | no converged s | | | | | |"
    rsb = (
        f"{r['phi']:.4f} / {r['test_error']:.3f} (s = {r['s']:.3g}, {r['kind']}; Σ = {r['sigma']:.1e} ± "
        f"{r['sigma_se']:.0e})"
    )
    tr = 2 * (r["dq_k"] + r["dq_v"])
    if erm is None:
        return f"| {name} | {rs_cell} | {rsb} | {tr:.2f} | — | — | — | — |"
    og, eg = erm["obj_ground"], erm["err_ground"]
    return (
        f"| {name} | {rs_cell} | {rsb} | {tr:.2f} | {_pm(erm['d'], 2)}; {_pm(erm['d2'], 2)} |"
        f" {_pm(og, 4)} / {_pm(eg, 3)} | {_closed(r['phi'], rs['objective'], og, alpha * rs['train_loss_se'])} |"
        f" {_closed(r['test_error'], rs['test_error'], eg)} |"
    )


def _closed(theory: float, rs: float, erm: tuple[float, float], rs_se: float = math.nan) -> str:
    """(1RSB − RS)/(ERM − RS), or why not: no ERM limit, or an RS–ERM gap under 2 s.e. (ERM's and,
    where given, the RS value's outer Monte Carlo s.e. combined; slrpipe.analysis.rsb1.gap_closed)."""
    if not math.isfinite(erm[0]):
        return "—"
    fraction, z = gap_closed(theory, rs, erm[0], erm[1], rs_se)
    return f"no gap ({z:+.1f} s.e.)" if math.isnan(fraction) and math.isfinite(z) else f"{fraction:.2f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", action="append", default=[], help="an ERM store with a D ladder (repeatable)")
    ap.add_argument("scans", nargs="+", help="JSON files of scripts/rsb1_table.py --json")
    a = ap.parse_args(argv)
    print(
        "| point | RS objective / test error | 1RSB Φ / test error | 2 tr(Q₁ − Q₀) |"
        " ERM d; d₂, D → ∞ | ERM ground state 𝓛/D / test error, D → ∞ | gap closed: objective | test error |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for path in a.scans:
        with open(path) as fh:
            print(row(json.load(fh), a.store))


if __name__ == "__main__":
    main()
