"""Mode ``products`` of benchmarks/bench_erm.py: the product forms of the lanes' evaluation.

An evaluation of J and ∇J for S lanes multiplies X (n·L, D) with W (D, C = 2S) and, for the
gradient, δ (n·L, C) with X. XLA's CPU backend runs each form with another kernel (a YNNPACK fusion
or Eigen), at rates that differ by up to 2× for the same flops; ``slrpipe.train.lane_steps`` picks
the plain forms (X @ W, XT @ δ on the stored transpose) up to ``WIDE_COLUMNS`` columns and the wide
forms (Wᵀ·Xᵀ, δᵀ·XTᵀ, lane-major) above. Each form is compiled alone and timed in CPU seconds,
interleaved over the forms, median of ``--repeats``. Printed per C: ms and GFLOP/s of each form,
the kernel XLA chose, and which of the pair the code uses there. Also a square float32 GEMM, the
machine's reference rate.

Default: n·L = 21 000 rows, D = 3000 (the aspect of the paper's largest batch at 1/5 of D), C = 2,
8, 14, 28, 140. ``--quick`` (CI): n·L = 600, D = 64, C = 2, 28.
"""

from __future__ import annotations

import argparse
import os
import time


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench_erm.py products", description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=21000, help="n·L")
    p.add_argument("--D", type=int, default=3000)
    p.add_argument("--columns", type=int, nargs="+", default=[2, 8, 14, 28, 140])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="tiny sizes (CI)")
    a = p.parse_args(argv)
    if a.quick:
        a.rows, a.D, a.columns, a.repeats = 600, 64, [2, 28], 2

    import jax
    import jax.numpy as jnp
    import numpy as np

    from slrpipe.train.lane_steps import WIDE_COLUMNS

    def rows_dot(u, v):
        return jax.lax.dot_general(u, v, (((1,), (1,)), ((), ())))

    rng = np.random.default_rng(0)
    X = rng.standard_normal((a.rows, a.D), dtype=np.float32)
    X, XT = jnp.asarray(X), jnp.asarray(np.ascontiguousarray(X.T))
    forms = {  # name: (function of (X, XT, W, Wt, G, g), wide)
        "X @ W": (lambda X, XT, W, Wt, G, g: X @ W, False),
        "Wt·Xᵀ": (lambda X, XT, W, Wt, G, g: rows_dot(Wt, X), True),
        "XT @ δ": (lambda X, XT, W, Wt, G, g: XT @ G, False),
        "δᵀ·XTᵀ": (lambda X, XT, W, Wt, G, g: rows_dot(g, XT), True),
    }
    print(
        f"products: n·L = {a.rows}, D = {a.D}, float32, device {jax.default_backend()}, load {os.getloadavg()[0]:.1f}"
    )
    for C in a.columns:
        W = rng.standard_normal((a.D, C), dtype=np.float32)
        G = rng.standard_normal((a.rows, C), dtype=np.float32)
        args = (X, XT, jnp.asarray(W), jnp.asarray(np.ascontiguousarray(W.T)), jnp.asarray(G))
        args += (jnp.asarray(np.ascontiguousarray(G.T)),)
        comp = {k: jax.jit(f).lower(*args).compile() for k, (f, _) in forms.items()}
        times = {k: [] for k in forms}
        for c in comp.values():
            jax.block_until_ready(c(*args))
        for _ in range(a.repeats):
            for k, c in comp.items():
                c0 = time.process_time()
                jax.block_until_ready(c(*args))
                times[k].append(time.process_time() - c0)
        flop = 2 * a.rows * a.D * C
        used = C > WIDE_COLUMNS
        cells = []
        for k, (_, wide) in forms.items():
            t = float(np.median(times[k]))
            kernel = "ynn" if "ynn_fusion" in comp[k].as_text() else "eigen"
            mark = "*" if wide == used else " "
            cells.append(f"{k} {1e3 * t:.1f} ms {flop / max(t, 1e-9) / 1e9:.1f} GFLOP/s ({kernel}){mark}")
        print(f"C = {C}: " + "; ".join(cells))
    A = jnp.asarray(rng.standard_normal((1024, 1024), dtype=np.float32))
    square = jax.jit(lambda A: A @ A).lower(A).compile()
    jax.block_until_ready(square(A))
    ts = []
    for _ in range(a.repeats):
        c0 = time.process_time()
        jax.block_until_ready(square(A))
        ts.append(time.process_time() - c0)
    print(
        f"square 1024 GEMM: {2 * 1024**3 / max(float(np.median(ts)), 1e-9) / 1e9:.1f} GFLOP/s; * the forms the lanes use"
    )
    return 0
