"""Speed of the replica solver: wall time per α point, and the batched JAX prox against a
straightforward per-sample ``scipy.optimize.minimize`` loop (same samples, same starts).

Usage: python benchmarks/bench_replica.py [--L 3] [--n-samples 8000] [--seeds 3] [--subset 200]
Prints: (1) one channel evaluation (prox of all samples + expectations): ours vs the scipy loop
timed on ``--subset`` samples and extrapolated, with the max |ψ_ours − ψ_scipy| on the subset
(equal accuracy check); (2) full fixed-point solves at a few α for softmax and linear, seeds
0..seeds−1: mean wall time per α point and the seed-to-seed s.e. of the test error (its Monte
Carlo error at this n_samples).
"""

from __future__ import annotations

import argparse
import math
import os
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

from slrpipe.scores import score  # noqa: E402
from slrpipe.theory.replica import solve_replica  # noqa: E402
from slrpipe.theory.replica.channel import centres  # noqa: E402
from slrpipe.theory.replica.fields import draw_fields  # noqa: E402
from slrpipe.theory.replica.prox import prox  # noqa: E402


def _psi_np(chi, wk, wv, y, Vk, Vv, sigma):
    s = score(sigma, chi)
    r = y - s @ wv
    return np.sum((chi - wk) ** 2) / (2 * Vk) + r**2 / (2 * (1 + Vv * (s @ s)))


def scipy_prox(sigma, wk, wv, y, Vk, Vv):
    """Baseline: for each sample, BFGS from the centre and from L token-directed starts."""
    L = wk.shape[1]
    out = np.empty(len(y))
    for i in range(len(y)):
        f = lambda c: _psi_np(c, wk[i], wv[i], y[i], Vk, Vv, sigma)  # noqa: E731
        R = math.sqrt(2 * Vk * f(wk[i]))
        starts = [wk[i]] + [wk[i] + R * (np.eye(L)[j] - 1 / L) for j in range(L)]
        out[i] = min(minimize(f, s0, method="BFGS", options={"gtol": 1e-10}).fun for s0 in starts)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--L", type=int, default=3)
    p.add_argument("--nu", type=float, default=1.0)
    p.add_argument("--lam", type=float, default=0.1)
    p.add_argument("--n-samples", type=int, default=8000)
    p.add_argument("--subset", type=int, default=200)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--alphas", default="2,5")
    a = p.parse_args()
    # (1) one channel evaluation at a non-convex state typical of α ≈ 1–2
    f = draw_fields("spiked", a.nu, a.L, 0.0, a.n_samples, 0)
    st = dict(m_k=0.3, q_k=0.5, m_v=0.6, q_v=0.8)
    Vk, Vv = 3.0, 2.0
    wk, wv, _, _ = centres(f, **st)
    y = f.y
    for sigma in ("softmax", "linear"):
        prox(sigma, wk, wv, y, Vk, Vv)  # compile (same shapes as the timed call)
        t = time.perf_counter()
        ours = prox(sigma, wk, wv, y, Vk, Vv)
        t_ours = time.perf_counter() - t
        n = a.subset
        t = time.perf_counter()
        base = scipy_prox(sigma, wk[:n], wv[:n], y[:n], Vk, Vv)
        t_base = (time.perf_counter() - t) * len(y) / n
        dpsi = ours["psi"][:n] - base
        print(f"prox {sigma} L={a.L} N={len(y)}: ours {t_ours:.2f} s, scipy loop {t_base:.1f} s "
              f"(extrapolated from {n}), speed-up {t_base / t_ours:.0f}x; ψ_ours − ψ_scipy: "
              f"max {dpsi.max():.1e}, min {dpsi.min():.1e}")
    # (2) full solves
    for sigma in ("softmax", "linear") if a.seeds > 0 else ():
        for alpha in map(float, a.alphas.split(",")):
            res = [solve_replica(sigma, "spiked", a.nu, a.L, 0.0, a.lam, alpha, n_samples=a.n_samples, seed=s)
                   for s in range(a.seeds)]
            e = np.array([r["test_error"] for r in res])
            w = np.mean([r["wall_time"] for r in res])
            it = np.mean([r["iterations"] for r in res])
            conv = all(r["converged"] for r in res)
            se = e.std(ddof=1) if len(e) > 1 else math.nan
            print(f"solve {sigma} spiked ν={a.nu:g} L={a.L} λ={a.lam:g} α={alpha:g} N={a.n_samples}: "
                  f"{w:.1f} s/point ({it:.0f} iterations), e_test = {e.mean():.4f}, seed-to-seed "
                  f"s.d. {se:.4f} (MC error of one solve), converged={conv}", flush=True)


if __name__ == "__main__":
    main()
