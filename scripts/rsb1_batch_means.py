"""Batch-means Monte Carlo error of a 1RSB state at any scan row (docs/theory.md §13; the workflow's
``rsb1_error`` rule does this at the state reported): from a result file of the
``rsb1`` rule, take the solved state of the converged physical scan row nearest ``--s``
(slrpipe.commands.rsb1_error.start_state), split the N₀ outer samples into
``--batches`` K batches (each closed under the antithetic pairing i ↔ i + N₀/2, with its own inner
sets), solve the 1RSB saddle on each batch from that state, and print per batch Φ, e, the typical
state's test error and δq, then their mean and the standard error of the full-sample estimate,
sd/√K (batches of N₀/K samples; the fixed point's error scales as 1/√N₀). The test error of a
typical state has no per-sample form, so this is its only Monte Carlo error; Φ's batch-means error
is printed beside the outer s.e. the file reports for e, as a check of the method.

Usage: python scripts/rsb1_batch_means.py results/replica/…/rsb1/lam0.01_alpha5_n8192x32_seed0_1.nc
           --s 3 [--batches 4] [--max-iter 80]
"""

from __future__ import annotations

import argparse

import numpy as np
import xarray as xr

from slrpipe.commands.rsb1_error import start_state
from slrpipe.setting import Setting
from slrpipe.theory.replica import ReplicaTask, rsb1
from slrpipe.theory.replica.batch_means import antithetic_batches, subset, summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result", help="a result file of the rsb1 rule")
    ap.add_argument("--s", type=float, required=True)
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--max-iter", type=int, default=80)
    a = ap.parse_args(argv)
    d = xr.open_dataset(a.result)
    c = {k: d[k].values.item() for k in ("sigma", "model", "nu", "L", "delta", "lam", "alpha")}
    task = ReplicaTask(c["sigma"], Setting(c["model"], c["nu"], int(c["L"]), c["delta"]))
    draw = rsb1.Rsb1Draw(
        int(d.attrs["n_outer"]), int(d.attrs["n_inner"]), int(d.attrs["seed"]), int(d.attrs["inner_seed"])
    )
    fields, inner = draw.samples(task)
    x = start_state(d, a.s)  # the converged physical row nearest s (as the rsb1-error job starts)
    i = int(np.argmin(np.abs(d.s.values - a.s)))
    row = {k: float(d[f"scan_{k}"].values[i]) for k in ("phi", "energy", "test_error")}
    print(
        f"{c['sigma']} {c['model']} ν={c['nu']} L={c['L']} λ={c['lam']} α={c['alpha']} s={a.s}; N₀={fields.n}, "
        f"K={a.batches}; the file: Φ={row['phi']:.4f} e={row['energy']:.4f} ± {float(d.scan_energy_se[i]):.4f} "
        f"test error={row['test_error']:.4f}"
    )
    keys = ("phi", "energy_direct", "test_error", "dq_k", "dq_v")
    res = []
    for b, idx in enumerate(antithetic_batches(fields.n, a.batches)):
        out = rsb1.solve_rsb1(
            task, c["lam"], c["alpha"], a.s, samples=(subset(fields, idx), subset(inner, idx)), init=x,
            options=rsb1.Rsb1Options(max_iter=a.max_iter),
        )  # fmt: skip
        res.append([out[k] for k in keys])
        print(f"batch {b}: converged={out['converged']} " + " ".join(f"{k}={out[k]:.4f}" for k in keys))
    r = np.array(res)
    st = [summary(r[:, j], np.nan) for j in range(len(keys))]
    print("mean ± s.e. (full N₀): " + " ".join(f"{k}={t['mean']:.4f} ± {t['se']:.4f}" for k, t in zip(keys, st)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
