"""N₁ against 4N₁ at one 1RSB point of the workflow (docs/theory.md §13, "Finite N₁"): from a result
file of the ``rsb1`` rule, take the solved state of the converged physical scan row nearest ``--s`` (as ``slrpipe rsb1-error``
starts, slrpipe.commands.rsb1_error.start_state), evaluate the channel
there at each inner size of ``--n-inners`` (fixed state, ``rsb1.inner_size_check``, for each inner
seed of ``--inner-seeds``), then solve again at ``--solve-n1`` from that state on the same outer
samples. Prints Φ, Σ, e, the residual of the fixed-state passes, and the solved Φ, e, Σ, test error,
δq and m beside the file's.

Usage: python scripts/rsb1_n1_check.py results/replica/…/rsb1/lam0.01_alpha5_n1024x32_seed0_1.nc
           [--s 2] [--n-inners 8,32,128] [--inner-seeds 1,2] [--solve-n1 128] [--max-iter 60]
"""

from __future__ import annotations

import argparse

import numpy as np
import xarray as xr

from slrpipe.commands.rsb1_error import start_state
from slrpipe.setting import Setting
from slrpipe.theory.replica import ReplicaTask, rsb1

SOLVED = ("phi", "energy_direct", "sigma", "test_error", "dq_k", "dq_v", "m_k", "m_v")
ROW = ("phi", "energy", "complexity", "test_error", "dq_k", "dq_v")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result", help="a result file of the rsb1 rule")
    ap.add_argument("--s", type=float, default=2.0)
    ap.add_argument("--n-inners", default="8,32,128")
    ap.add_argument("--inner-seeds", default="1,2")
    ap.add_argument("--solve-n1", type=int, default=128, help="0: no solve")
    ap.add_argument("--max-iter", type=int, default=60)
    a = ap.parse_args(argv)
    d = xr.open_dataset(a.result)
    task = ReplicaTask(str(d.sigma.values), Setting(str(d.model.values), float(d.nu), int(d.L), float(d.delta)))
    lam, alpha = float(d.lam), float(d.alpha)
    x = start_state(d, a.s)  # the converged physical row nearest s (as the rsb1-error job starts)
    i = int(np.argmin(np.abs(d.s.values - a.s)))
    row = {k: float(d[f"scan_{k}"].values[i]) for k in ROW}
    print(
        f"{task.sigma} {task.model} ν={task.nu:g} L={task.L} λ={lam:g} α={alpha:g} s={a.s:g}; N₀={d.attrs['n_outer']} "
        f"(seed {d.attrs['seed']}); the file's N₁={d.attrs['n_inner']}: Φ={row['phi']:.4f} e={row['energy']:.4f} "
        f"Σ={row['complexity']:.4f} test error={row['test_error']:.4f} δq=({row['dq_k']:.3f}, {row['dq_v']:.4f})"
    )
    fields, _ = rsb1.Rsb1Draw(int(d.attrs["n_outer"]), 4, int(d.attrs["seed"]), 1).samples(task)
    n_inners = [int(n) for n in a.n_inners.split(",")]
    for seed in (int(v) for v in a.inner_seeds.split(",")):
        for r in rsb1.inner_size_check(
            task.sigma, fields, alpha, lam, a.s, x, n_inners, seed, independent=True, debias=True
        ):
            print(
                f"fixed state, inner seed {seed}, N₁={r['n_inner']}: Φ={r['phi']:.4f} Σ={r['sigma']:.4f} "
                f"e={r['energy_direct']:.4f} residual={r['residual']:.1e}"
            )
    if a.solve_n1:
        samples = (fields, rsb1.draw_inner(task.L, a.solve_n1, int(d.attrs["inner_seed"]), fields.n))
        out = rsb1.solve_rsb1(
            task, lam, alpha, a.s, samples=samples, init=x, options=rsb1.Rsb1Options(max_iter=a.max_iter)
        )
        print(
            f"solved at N₁={a.solve_n1}: converged={bool(out['converged'])} residual={out['residual']:.1e} "
            + " ".join(f"{k}={out[k]:.4f}" for k in SOLVED)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
