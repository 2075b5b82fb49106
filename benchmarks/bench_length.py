"""Seconds per population optimum (σ, ν, L) with the exact-in-L reductions against the field quadrature.

For σ ∈ {softmax, linear, erf, softplus_norm, bayes} on spiked-SLR at ν = 4 and L ∈ {10, 100, 10⁴}
(plus a variable length L ~ Unif{1..1000}), the CPU (process) and wall seconds of one
``optimal_risk`` (``bayes_risk`` for bayes) with the default spec (exact from L = 3) and, where it
runs in reasonable time (L ≤ ``--old-max-L``), with ``QuadSpec(method="quadrature")`` (QMC beyond
L = 3), with both risks and error estimates. Goal: ≤ 2 s per point at L = 10⁴ on one core. Also
prints the worst change of A, B under one refinement of the exact rules over a grid of (σ, ν, L, m).
``--quick`` (CI): every σ at L ∈ {3, 100} only, the field quadrature at L = 3, and the refinement
check over a small grid (softmax and linear, L ∈ {3, 64}, three m).
Run: ``python benchmarks/bench_length.py [--old-max-L 10] [--quick]``
"""

from __future__ import annotations

import argparse
import math
import os
import time

from slrpipe.threads import BLAS_THREAD_VARS, thread_env

for _v in BLAS_THREAD_VARS:
    os.environ.setdefault(_v, thread_env(1)[_v])

from slrpipe.theory.exact_length import _spiked_tokens, ab_exact  # noqa: E402
from slrpipe.theory.population import bayes_risk, optimal_risk  # noqa: E402
from slrpipe.theory.quadrature import QuadSpec  # noqa: E402

SIGMAS = ("softmax", "linear", "erf", "softplus_norm", "bayes")
UNIFORM_1000 = {k: 1 / 1000 for k in range(1, 1001)}
REFINEMENT_MODELS = (("spiked", 1.0), ("spiked", 30.0), ("max", 0.0), ("max", 2.0), ("max", math.inf))


def _point(sigma, nu, L, spec):
    _spiked_tokens.cache_clear()  # a cold optimum: no per-token quadrature from an earlier point
    t0, c0 = time.perf_counter(), time.process_time()
    if sigma == "bayes":
        r, err = bayes_risk("spiked", nu, L, quad=spec), math.nan
    else:
        res = optimal_risk(sigma, "spiked", nu, L, quad=spec)
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old-max-L", type=int, default=10, help="largest L run with the field quadrature")
    ap.add_argument("--nu", type=float, default=4.0)
    ap.add_argument("--quick", action="store_true", help="L ∈ {3, 100}, quadrature at L = 3, small check (CI)")
    args = ap.parse_args()
    Ls = (3, 100) if args.quick else (10, 100, 10_000, "U{1..1000}")
    if args.quick:
        args.old_max_L = 3
    old = QuadSpec(method="quadrature")
    print(f"spiked-SLR, ν = {args.nu:g}; seconds per optimum: CPU (wall)")
    print(
        f"{'σ':14s} {'L':>9s} {'exact risk':>12s} {'err':>8s} {'cpu s':>7s} {'wall s':>7s}"
        f" | {'quadrature risk':>15s} {'err':>8s} {'cpu s':>7s} {'wall s':>7s}"
    )
    for L in Ls:
        law = UNIFORM_1000 if isinstance(L, str) else L
        for sigma in SIGMAS:
            r, e, c, w = _point(sigma, args.nu, law, None)
            line = f"{sigma:14s} {L!s:>9s} {r:12.8f} {e:8.1e} {c:7.2f} {w:7.2f}"
            if isinstance(L, int) and L <= args.old_max_L:
                r2, e2, c2, w2 = _point(sigma, args.nu, law, old)
                line += f" | {r2:15.8f} {e2:8.1e} {c2:7.2f} {w2:7.2f}"
            print(line, flush=True)
    print(f"worst change of A, B (relative beyond 1) under 1.5² refinement: {_refinement_check(args.quick):.1e}")


if __name__ == "__main__":
    main()
