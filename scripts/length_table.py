"""The numbers of config/length.yaml (docs/theory.md §12): per ERM experiment (one L), σ and α the
ERM test error on the finite test set and the population risk at the learned weights (mean ± s.e.
over seeds, informed start, at the largest D of a D ladder), the population optimum of the same σ and the Bayes risk, and the
replica prediction where the store has a replica experiment linked to it (``erm:``) (its test error
at that α, non-converged points as "n.c.").

Usage: python scripts/length_table.py --store results/slr.zarr [--experiments spiked_L3_nu16,spiked_L16_nu16,spiked_L64_nu16]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from slrpipe.analysis.aggregate import open_store
from slrpipe.analysis.ground import reference
from slrpipe.analysis.ladder import largest_D
from slrpipe.analysis.seeds import point_mean_se


def ms(da) -> str:
    """'mean ± s.e.' over the seeds of one point (slrpipe.analysis.seeds), 'nan' without a value."""
    mean, se, k = point_mean_se(da)
    if k == 0:
        return "nan"
    return f"{mean:.4f} ± {se:.4f}" if k > 1 else f"{mean:.4f}"


def replica_for(tree, erm_name, sigma, lam):
    """The replica experiment linked to ERM experiment ``erm_name`` (its ``erm:`` field), at σ and λ,
    else None."""
    if "replica" not in tree:
        return None
    for child in tree["replica"].children.values():
        ds = child.to_dataset()
        if (
            json.loads(ds.attrs.get("erm", "null")) == erm_name
            and sigma in ds["sigma"].values
            and np.isclose(ds["lam"].values, lam).any()
        ):
            return ds.sel(sigma=sigma).isel(lam=int(np.argmax(np.isclose(ds["lam"].values, lam))))
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--experiments", default="spiked_L3_nu16,spiked_L16_nu16,spiked_L64_nu16")
    a = ap.parse_args()
    tree = open_store(a.store)
    print(
        f"{'experiment':<18}{'L':>4}{'sigma':>9}{'alpha':>6}{'ERM test (finite set)':>24}"
        f"{'ERM R at learned':>22}{'pop. optimum':>14}{'Bayes':>8}{'replica':>9}"
    )
    for name in a.experiments.split(","):
        node = reference(largest_D(tree[f"erm/{name}"].to_dataset()))
        pop = tree[f"population/at_{name}"].to_dataset()
        lam = float(node["lam"].values[0])
        bayes = float(pop["risk"].sel(sigma="bayes").values[0])
        for s in node["sigma"].values:
            opt = float(pop["risk"].sel(sigma=s).values[0])
            rep = replica_for(tree, name, str(s), lam)
            for al in node["alpha"].values:
                pt = node.sel(sigma=s, alpha=al).isel(lam=0)
                th = "—"
                if rep is not None and np.isclose(rep["alpha"].values, al).any():
                    rp = rep.sel(alpha=rep["alpha"].values[np.isclose(rep["alpha"].values, al)][0])
                    th = f"{float(rp['test_error']):.4f}" if bool(rp["converged"]) else "n.c."
                pop_learned = ms(pt["test_error_pop"]) if "test_error_pop" in pt else "—"
                print(
                    f"{name:<18}{str(node['L'].values):>4}{s:>9}{al:>6g}{ms(pt['test_error']):>24}"
                    f"{pop_learned:>22}{opt:>14.4f}{bayes:>8.4f}{th:>9}"
                )


if __name__ == "__main__":
    main()
