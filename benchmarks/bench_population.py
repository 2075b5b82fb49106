"""Wall times of the population theory (model.md §4): the whole Fig. 2 grid and an L = 64 point.

Fig. 2 grid: σ ∈ {softmax, linear, erf, softplus_norm, bayes} × 21 ν × 3 settings — spiked L = 2,
ν ∈ [0, 5]; max L = 2, ν ∈ [0, 10] ∪ {∞}; max L ~ Unif{1,2,3}, same ν. Target: < 60 s on 2 cores.
Also prints the largest quadrature-error estimate (risk_err) met. ``--quick`` (CI): 3 ν per setting
instead of 21 (the same σ, settings and L = 64 points). Run:
``python benchmarks/bench_population.py [--quick]``
"""

from __future__ import annotations

import argparse
import os
import time

from slrpipe.threads import thread_env

os.environ.setdefault("OMP_NUM_THREADS", thread_env(1)["OMP_NUM_THREADS"])

import numpy as np

from slrpipe.theory.population import optimal_risk, population_sweep

SIGMAS = ("softmax", "linear", "erf", "softplus_norm", "bayes")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 ν per setting instead of 21 (CI)")
    args = ap.parse_args()
    n = 3 if args.quick else 21
    settings = {
        "spiked L=2": ("spiked", 2, np.linspace(0, 5, n)),
        "max L=2": ("max", 2, np.append(np.linspace(0, 10, n - 1), np.inf)),
        "max L~U{1,2,3}": ("max", {1: 1 / 3, 2: 1 / 3, 3: 1 / 3}, np.append(np.linspace(0, 10, n - 1), np.inf)),
    }
    total = 0.0
    worst = 0.0
    for name, (model, L, nus) in settings.items():
        t_set = 0.0
        for sigma in SIGMAS:
            t0 = time.perf_counter()
            ds = population_sweep(sigma, model, L, nus)
            dt = time.perf_counter() - t0
            t_set += dt
            worst = max(worst, float(ds.risk_err.max()))
            r = ds.risk.values
            print(f"  {name:15s} {sigma:14s} {dt:7.2f} s   risk[ν=0]={r[0]:.5f} risk[ν={nus[-1]:g}]={r[-1]:.5f}")
        print(f"{name:17s} total {t_set:7.2f} s ({len(nus)} ν × {len(SIGMAS)} σ)")
        total += t_set
    print(f"Fig. 2 grid total: {total:.2f} s (target < 60 s); max risk_err {worst:.2e}")
    for sigma, model, nu in (("softmax", "max", 2.0), ("linear", "max", np.inf)):
        t0 = time.perf_counter()
        r = optimal_risk(sigma, model, nu, 64)
        print(
            f"L=64 {sigma} {model} ν={nu:g}: risk={r['risk']:.5f} ± {r['risk_err']:.1e} "
            f"m_k={r['m_k']:.4f} in {time.perf_counter() - t0:.2f} s"
        )


if __name__ == "__main__":
    main()
