"""Wall times and accuracy of the population theory (docs/model.md §4, docs/theory.md §12).

Two parts (``--part``, comma-separated; default both):
- ``grid``: the whole Fig. 2 grid, σ ∈ {softmax, linear, erf, softplus_norm, bayes} × 21 ν × 3
  settings — spiked L = 2, ν ∈ [0, 5]; max L = 2, ν ∈ [0, 10] ∪ {∞}; max L ~ Unif{1,2,3}, same ν
  (target: < 60 s on 2 cores) — with the largest quadrature-error estimate (risk_err) met, and an
  L = 64 point;
- ``length``: seconds per population optimum (σ, ν, L) with the exact-in-L reductions against the
  field quadrature: spiked-SLR at ν = --nu and L ∈ {10, 100, 10⁴} plus L ~ Unif{1..1000}, the CPU
  (process) and wall seconds of one ``optimal_risk`` (``bayes_risk`` for bayes) with the default
  spec (exact from L = 3) and, up to L = ``--old-max-L``, with ``QuadSpec(method="quadrature")``
  (QMC beyond L = 3), with both risks and error estimates (goal: ≤ 2 s per point at L = 10⁴ on one
  core); then the worst change of A, B under one refinement of the exact rules over a grid of
  (σ, model, ν, L, m).
``--quick`` (CI): grid with 3 ν per setting instead of 21; length at L ∈ {3, 100}, the field
quadrature at L = 3 and the refinement check over a small grid.
Run: ``python benchmarks/bench_population.py [--part grid,length] [--old-max-L 10] [--nu 4] [--quick]``
"""

from __future__ import annotations

import argparse
import math
import os
import time

from slrpipe.threads import BLAS_THREAD_VARS, thread_env

for _v in BLAS_THREAD_VARS:
    os.environ.setdefault(_v, thread_env(1)[_v])

import numpy as np  # noqa: E402

from slrpipe.setting import Setting  # noqa: E402
from slrpipe.theory.exact_length import ab_exact, clear_token_cache  # noqa: E402
from slrpipe.theory.population import bayes_risk, optimal_risk, population_sweep  # noqa: E402
from slrpipe.theory.quadrature import QuadSpec  # noqa: E402

SIGMAS = ("softmax", "linear", "erf", "softplus_norm", "bayes")
UNIFORM_1000 = {k: 1 / 1000 for k in range(1, 1001)}
REFINEMENT_MODELS = (("spiked", 1.0), ("spiked", 30.0), ("max", 0.0), ("max", 2.0), ("max", math.inf))


def bench_grid(quick: bool) -> None:
    n = 3 if quick else 21
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
        r = optimal_risk(sigma, Setting(model, nu, 64))
        print(
            f"L=64 {sigma} {model} ν={nu:g}: risk={r['risk']:.5f} ± {r['risk_err']:.1e} "
            f"m_k={r['m_k']:.4f} in {time.perf_counter() - t0:.2f} s"
        )


def _point(sigma, nu, L, spec):
    clear_token_cache()  # a cold optimum: no per-token quadrature from an earlier point
    t0, c0 = time.perf_counter(), time.process_time()
    if sigma == "bayes":
        r, err = bayes_risk(Setting("spiked", nu, L), quad=spec), math.nan
    else:
        res = optimal_risk(sigma, Setting("spiked", nu, L), quad=spec)
        r, err = res["risk"], res["risk_err"]
    return r, err, time.process_time() - c0, time.perf_counter() - t0


def _refinement_check(quick: bool = False) -> float:
    sigmas = ("softmax", "linear") if quick else ("softmax", "softplus_norm", "linear", "erf")
    models = (("spiked", 1.0), ("max", 2.0)) if quick else REFINEMENT_MODELS
    Ls = (3, 64) if quick else (3, 64, 10_000)
    ms = (0.01, 7.0, math.inf) if quick else (0.01, 1.0, 7.0, 40.0, 300.0, 999.0, math.inf)
    worst = 0.0
    for sigma in sigmas:
        for model, nu in models:
            for L in Ls:
                for m in ms:
                    e = ab_exact(sigma, model, nu, L, m, -0.3)
                    if e is None:
                        continue
                    f = ab_exact(sigma, model, nu, L, m, -0.3, level=2)
                    worst = max(worst, *(abs(a - b) / max(1.0, abs(b)) for a, b in zip(e, f)))
    return worst


def bench_length(nu: float, old_max_L: int, quick: bool) -> None:
    Ls = (3, 100) if quick else (10, 100, 10_000, "U{1..1000}")
    old = QuadSpec(method="quadrature")
    print(f"spiked-SLR, ν = {nu:g}; seconds per optimum: CPU (wall)")
    print(
        f"{'σ':14s} {'L':>9s} {'exact risk':>12s} {'err':>8s} {'cpu s':>7s} {'wall s':>7s}"
        f" | {'quadrature risk':>15s} {'err':>8s} {'cpu s':>7s} {'wall s':>7s}"
    )
    for L in Ls:
        law = UNIFORM_1000 if isinstance(L, str) else L
        for sigma in SIGMAS:
            r, e, c, w = _point(sigma, nu, law, None)
            line = f"{sigma:14s} {L!s:>9s} {r:12.8f} {e:8.1e} {c:7.2f} {w:7.2f}"
            if isinstance(L, int) and L <= old_max_L:
                r2, e2, c2, w2 = _point(sigma, nu, law, old)
                line += f" | {r2:15.8f} {e2:8.1e} {c2:7.2f} {w2:7.2f}"
            print(line, flush=True)
    print(f"worst change of A, B (relative beyond 1) under 1.5² refinement: {_refinement_check(quick):.1e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="grid,length", help="comma-separated: grid, length")
    ap.add_argument("--old-max-L", type=int, default=10, help="length: largest L run with the field quadrature")
    ap.add_argument("--nu", type=float, default=4.0, help="length: the spiked-SLR ν")
    ap.add_argument("--quick", action="store_true", help="tiny grid, L ∈ {3, 100}, quadrature at L = 3 (CI)")
    args = ap.parse_args()
    parts = args.part.split(",")
    if "grid" in parts:
        bench_grid(args.quick)
    if "length" in parts:
        bench_length(args.nu, 3 if args.quick else args.old_max_L, args.quick)


if __name__ == "__main__":
    main()
