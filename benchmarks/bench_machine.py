"""How fast this machine is right now, in the three kinds of work the workflow's jobs do.

The 2-core machine's speed drifts by up to 2× within hours (README.md, "Tests and benchmarks"):
the same default run took 4 min 51 s one morning and 11 min 51 s that evening. A wall time means
little without the machine's speed beside it, so run this before and after a timed run and quote
its figures with the time. One core, fixed work:

* a pure-Python loop (3·10⁶ additions of squares, best of 3): the interpreter, imports, tracing;
* numpy ``exp`` over 196 608 float64 (ns per element, best of 20): the theory's vectorised quadratures;
* a jitted JAX matrix product chain (400 × 400, float64, 30 products, compiled beforehand): the
  replica prox and the training programs.

``--quick`` (CI): a tenth of each workload.

    python benchmarks/bench_machine.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from slrpipe.threads import thread_env  # imports neither numpy nor JAX

for _k, _v in thread_env(1).items():
    os.environ.setdefault(_k, _v)


def python_loop(n: int, reps: int = 3) -> float:
    """Seconds of ``n`` iterations of ``s += i * i``, best of ``reps``."""
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        s = 0
        for i in range(n):
            s += i * i
        best = min(best, time.perf_counter() - t)
    return best


def numpy_exp(n: int, reps: int) -> float:
    """Nanoseconds per element of ``np.exp`` over ``n`` float64, best of ``reps``."""
    import numpy as np

    x = np.random.default_rng(0).normal(size=n)
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        np.exp(x)
        best = min(best, time.perf_counter() - t)
    return best / n * 1e9


def jax_products(size: int, n: int) -> tuple[float, float]:
    """(seconds to import JAX and compile, seconds of ``n`` chained products of a ``size`` square
    float64 matrix), the products timed after compilation."""
    t = time.perf_counter()
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    @jax.jit
    def chain(a):
        def body(_, b):
            return jnp.tanh(b @ a)

        return jax.lax.fori_loop(0, n, body, a)

    a = jnp.eye(size) * 0.5 + 0.01
    chain(a).block_until_ready()
    start = time.perf_counter() - t
    t = time.perf_counter()
    chain(a).block_until_ready()
    return start, time.perf_counter() - t


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a tenth of each workload (CI)")
    args = p.parse_args(argv)
    scale = 10 if args.quick else 1
    loop = python_loop(3_000_000 // scale)
    exp = numpy_exp(196_608, 20 // scale)
    start, products = jax_products(400, 30 // scale)
    print(f"python loop: {loop:.3f} s ({3_000_000 // scale} iterations)")
    print(f"numpy exp: {exp:.2f} ns per element")
    print(f"jax: import and compile {start:.2f} s; {30 // scale} products of 400 x 400: {products:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
