"""Benchmark: seconds per L-BFGS iteration and effective bandwidth of ERM on one device.

Effective bandwidth = bytes of X (n·L·D·itemsize) per L-BFGS iteration time. Reference: a plain
NumPy matmul streaming the same bytes once, X.reshape(-1, D) @ [k, v]; target: within 2× of it.
One L-BFGS iteration needs about one value-and-gradient evaluation, i.e. two products with the data
(forward X·W, backward Xᵀ·δ). XLA's CPU kernel for Xᵀ·δ is ~4× slower than for X·W, so on CPU the
trainer keeps a transposed copy XT of X for the backward (``slrpipe.train.erm._project``); both
variants are timed. Default size n·L·D = 10⁸ (D = 1000, L = 3, n = 33 333, float32, 400 MB).

Usage: python benchmarks/bench_erm.py [--D 1000 --L 3 --n 33333 --iters 10 --dtype float32] [--no-transpose]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--D", type=int, default=1000)
    p.add_argument("--L", type=int, default=3)
    p.add_argument("--n", type=int, default=33_333)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--sigma", default="softmax")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--no-transpose", dest="transpose", action="store_false",
                   help="no transposed copy of X for the gradient (the default on GPU)")
    a = p.parse_args(argv)

    import jax
    import jax.numpy as jnp

    from slrpipe.data import SLRDataset, SLRTask
    from slrpipe.train import minimize, objective
    from slrpipe.train.erm import transposed

    if a.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    dt = np.dtype(a.dtype)
    task = SLRTask("spiked", 2.0, a.L, 0.0, a.D)
    ds = SLRDataset(task, a.n, teacher_seed=0, data_seed=1)
    t0 = time.perf_counter()
    data = ds.load()
    t_gen = time.perf_counter() - t0
    X = data.X.astype(dt, copy=False)
    nbytes = X.nbytes
    k_star, v_star = ds.teacher
    device = jax.devices()[0]
    print(f"device: {device.platform} ({getattr(device, 'device_kind', '')}); n·L·D = {X.size:.3g}, "
          f"X = {nbytes / 1e6:.0f} MB {a.dtype}; generation {t_gen:.2f} s ({X.size / t_gen / 1e6:.0f} Mfloat/s)")

    # reference: NumPy single pass over X
    W = np.stack([k_star, v_star], 1).astype(dt)
    Xf = X.reshape(-1, a.D)
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        Xf @ W
        ts.append(time.perf_counter() - t0)
    t_np = min(ts)
    print(f"numpy X@[k,v]: {t_np * 1e3:.1f} ms, {nbytes / t_np / 1e9:.2f} GB/s")

    params = {"k": jnp.asarray(np.sqrt(2) * k_star, dt), "v": jnp.asarray(v_star, dt)}
    Xj, mj, yj = jnp.asarray(X), jnp.asarray(data.mask), jnp.asarray(data.y, dt)
    XTj = transposed(Xj) if a.transpose else None
    vg = jax.jit(jax.value_and_grad(objective), static_argnames="sigma")
    for name, xt in (("plain", None), ("transposed copy", XTj)):
        if name != "plain" and xt is None:
            continue
        jax.block_until_ready(vg(params, Xj, mj, yj, a.sigma, 0.1, xt))
        ts = []
        for _ in range(5):
            t0 = time.perf_counter()
            jax.block_until_ready(vg(params, Xj, mj, yj, a.sigma, 0.1, xt))
            ts.append(time.perf_counter() - t0)
        t_vg = min(ts)
        print(f"jax value_and_grad ({name}): {t_vg * 1e3:.1f} ms, {nbytes / t_vg / 1e9:.2f} GB/s of X "
              f"({t_vg / t_np:.2f}× the numpy pass)")

    # L-BFGS from a random init, after 5 warm-up iterations (the first line search probes several
    # steps): time blocks of ``iters`` iterations from the same state, keep the fastest of 5 (the
    # machine is shared). Also run ``minimize`` once to report its wall time and convergence.
    import optax

    from slrpipe.train.erm import _lbfgs_block

    rng = np.random.default_rng(0)
    p0 = {"k": jnp.asarray(rng.standard_normal(a.D), dt), "v": jnp.asarray(rng.standard_normal(a.D), dt)}
    lam, tol = jnp.asarray(0.1, dt), jnp.asarray(0.0, dt)
    s0 = optax.lbfgs(memory_size=10).init(p0)
    p5, s5, *_ = _lbfgs_block(p0, s0, Xj, mj, yj, lam, 5, tol, a.sigma, 10, XTj)
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        out = _lbfgs_block(p5, s5, Xj, mj, yj, lam, 5 + a.iters, tol, a.sigma, 10, XTj)
        jax.block_until_ready(out)
        ts.append((time.perf_counter() - t0) / (int(out[4]) - 5))
    t_it = min(ts)
    print(f"L-BFGS: {t_it * 1e3:.1f} ms/iteration (steady state, best of 5 × {a.iters}), effective bandwidth "
          f"{nbytes / t_it / 1e9:.2f} GB/s ({t_it / t_np:.2f}× the numpy pass; target ≤ 2); "
          f"{t_it / t_vg:.2f} value-and-gradient evaluations' worth per iteration")
    r = minimize(p0, Xj, mj, yj, a.sigma, 0.1, "lbfgs", max_iter=200, tol=1e-5, record_every=50,
                 transpose=a.transpose)
    print(f"minimize (random init, tol 1e-5): {r.iterations} iterations, converged={r.converged}, "
          f"{r.wall_time:.1f} s = {r.wall_time / r.iterations * 1e3:.1f} ms/iteration")

if __name__ == "__main__":
    main()
