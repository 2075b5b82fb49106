"""Replica theory vs explicit-D ERM (float64 L-BFGS from informed init): prints a table.

Usage: python benchmarks/validate_replica_vs_erm.py --cases spiked:1:softmax,spiked:1:linear \
           --L 3 --lam 0.1 --alphas 0.5,1,2,5 --D 500 --seeds 4 --n-samples 8000
Each case is model:nu:sigma. ERM columns are mean ± s.e. over seeds (teacher and data seeds =
seed); the ERM test error is the population formula at the learned overlaps (test_error_theory,
exact at finite D on the manifold), the objective is 𝓛/D = α·J. Source: docs/theory.md.
"""

from __future__ import annotations

import argparse
import logging
import math
import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

from slrpipe.data.sampling import SLRTask  # noqa: E402
from slrpipe.data.store import SLRDataset  # noqa: E402
from slrpipe.theory.replica import solve_replica  # noqa: E402
from slrpipe.train import ERMOptions, run_erm  # noqa: E402

KEYS = ("test_error", "m_k", "q_k", "m_v", "q_v", "objective")


def erm_point(model, nu, L, delta, sigma, lam, alpha, D, seeds):
    rows = []
    for s in range(seeds):
        task = SLRTask(model, nu, L, delta, D)
        train = SLRDataset(task, int(round(alpha * D)), teacher_seed=s, data_seed=100 + s)
        _, ds = run_erm(train, ERMOptions.of(sigma, lam, init="informed", dtype="float64", n_test=2000,
                                             max_iter=3000, bayes=False))
        r = {k: float(ds[k]) for k in ("m_k", "q_k", "m_v", "q_v", "k_vstar", "v_kstar", "k_v")}
        r["test_error"] = float(ds["test_error_theory"])
        r["objective"] = alpha * float(ds["train_loss"])
        r["converged"] = bool(ds["converged"])
        rows.append(r)
    out = {k: (np.mean([r[k] for r in rows]), np.std([r[k] for r in rows], ddof=1) / math.sqrt(len(rows))
               if len(rows) > 1 else math.nan) for k in rows[0] if k != "converged"}
    out["all_converged"] = all(r["converged"] for r in rows)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="spiked:1:softmax")
    p.add_argument("--L", type=int, default=3)
    p.add_argument("--delta", type=float, default=0.0)
    p.add_argument("--lam", type=float, default=0.1)
    p.add_argument("--alphas", default="1,2,5")
    p.add_argument("--D", type=int, default=500)
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--n-samples", type=int, default=8000)
    a = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(f"L={a.L} Δ={a.delta} λ={a.lam} D={a.D} seeds={a.seeds} replica n_samples={a.n_samples}")
    print("case | α | " + " | ".join(f"{k} th / ERM" for k in KEYS) + " | cross overlaps (ERM) | conv")
    for case in a.cases.split(","):
        model, nu, sigma = case.split(":")
        nu = float(nu)
        init = None
        for alpha in map(float, a.alphas.split(",")):
            th = solve_replica(sigma, model, nu, a.L, a.delta, a.lam, alpha, n_samples=a.n_samples, init=init)
            if th["converged"]:
                init = {k: th[k] for k in ("m_k", "q_k", "V_k", "m_v", "q_v", "V_v")}
            er = erm_point(model, nu, a.L, a.delta, sigma, a.lam, alpha, a.D, a.seeds)
            cells = [f"{th[k]:.4f} / {er[k][0]:.4f}±{er[k][1]:.4f}" for k in KEYS]
            cross = " ".join(f"{er[k][0]:+.3f}" for k in ("k_vstar", "v_kstar", "k_v"))
            print(f"{sigma} {model} ν={nu:g} | {alpha:g} | " + " | ".join(cells)
                  + f" | {cross} | th={th['converged']} erm={er['all_converged']}", flush=True)


if __name__ == "__main__":
    main()
