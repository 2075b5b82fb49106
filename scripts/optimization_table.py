"""The numbers of the figure 'optimization': per (σ, α) the informed start, the best random start
and the ground state over all starts (test error = population risk at the learned weights, and the
objective α·J = 𝓛/D at the end of training, mean ± s.e. over seeds), the replica prediction where the
store has one of the same setting, and the fraction of random starts at the informed minimum.

Usage: python scripts/optimization_table.py --store results/slr.zarr --experiment opt_spiked_L3_nu1
"""

from __future__ import annotations

import numpy as np

from slrpipe.analysis.aggregate import experiment_node, open_store
from slrpipe.analysis.ground import reached, reference
from slrpipe.analysis.replica import replica_at, replica_node, setting
from slrpipe.analysis.seeds import point_mean_se
from slrpipe.commands.store_args import erm_experiment_parser
from slrpipe.figures.optimization import RTOL, best_random


def ms(da) -> str:
    """'mean±s.e.' over the seeds of one point (slrpipe.analysis.seeds), 'nan' without a value."""
    mean, se, k = point_mean_se(da)
    if k == 0:
        return "nan"
    return f"{mean:.4f}±{se:.4f}" if np.isfinite(se) else f"{mean:.4f}"


def main(argv=None):
    a = erm_experiment_parser(__doc__.splitlines()[0]).parse_args(argv)
    tree = open_store(a.store)
    node = experiment_node(tree, "erm", a.experiment)
    lam = float(node["lam"].values[0])
    node = node.sel(lam=lam)
    rep = replica_node(tree, setting(node))
    var = "test_error_pop" if "test_error_pop" in node else "test_error"
    ref, hit = reference(node), reached(node, RTOL).sel(init="random", optimizer=a.optimizer)
    exists = node["train_loss"].sel(init="random", optimizer=a.optimizer).notnull()
    print(
        f"{a.experiment}: λ = {lam:g}, seeds {[int(x) for x in node['seed'].values]}, random starts per seed "
        f"{int(exists.sum('restart').max())}; test error = {var}; objective α·J = 𝓛/D"
    )
    print(
        f"{'sigma':<8}{'alpha':>6}{'informed':>16}{'best random':>16}{'ground':>16}{'replica':>9}"
        f"{'obj inf':>16}{'obj best rnd':>16}{'obj ground':>16}{'obj RS':>8}{'reached':>9}  ground starts"
    )
    for s in node["sigma"].values:
        for al in node["alpha"].values:
            pt, r = node.sel(sigma=s, alpha=al), ref.sel(sigma=s, alpha=al)
            th, tho = replica_at(rep, s, lam, al), replica_at(rep, s, lam, al, "objective")
            best = best_random(node, var, a.optimizer).sel(sigma=s, alpha=al)
            best_obj = best_random(node, "train_loss", a.optimizer).sel(sigma=s, alpha=al) * al
            frac = float(
                hit.sel(sigma=s, alpha=al).where(exists.sel(sigma=s, alpha=al)).sum()
                / exists.sel(sigma=s, alpha=al).sum()
            )
            starts = ",".join(
                f"s{sd}:{i}-r{rr}"
                for sd, i, rr in zip(node["seed"].values, pt["ground_init"].values, pt["ground_restart"].values)
            )
            print(
                f"{s:<8}{al:>6.3g}{ms(r[var]):>16}{ms(best):>16}{ms(pt[var + '_ground']):>16}{th:>9.4f}"
                f"{ms(r['train_loss'] * al):>16}{ms(best_obj):>16}{ms(pt['train_loss_ground'] * al):>16}{tho:>8.4f}"
                f"{frac:>9.2f}  {starts}"
            )


if __name__ == "__main__":
    main()
