"""Mode ``starts`` of benchmarks/bench_erm.py: the starts of one training set, one by one or at once.

The starts trained one after the other (as ``slrpipe train-batch`` does by default) against all
at once — as lanes (``slrpipe.train.lanes``, the workflow's ``lanes: true``) and by ``jax.vmap`` over the solver's own L-BFGS block (optax.lbfgs with its zoom
line search) — on JAX's default device (CPU in the measurements quoted).

ERM streams X twice per evaluation (mode ``eval``), so ten starts sharing each pass over X could
cost far less than ten passes: the batched evaluation of J and ∇J is printed first. Whether L-BFGS
keeps that gain under ``vmap`` is the question: each start keeps its own iterations (a lane stops
at its own tolerance), but every ``lax.cond`` of the line search with a per-lane predicate runs both
branches for every lane, and the compiled program may copy X per lane (counted: the broadcasts of
X's shape to (starts, …) in the optimised HLO). The lanes keep one evaluation per step for all
starts. Printed: CPU seconds of each, their ratio to one after the other, the iterations per start,
the lowest J over starts, and the broadcasts. All are timed after their compilation.

Default: spiked ν = 1, L = 3, softmax, λ = 0.01, D = 256, α = 20 (n = 5120), informed + 9 random
starts. ``--quick`` (CI): D = 32, α = 5, 3 starts, at most 30 iterations: seconds, not a measurement.

Usage: python benchmarks/bench_erm.py starts [--D 256 --alpha 20 --starts 10 --max-iter 1000] [--quick]
"""

from __future__ import annotations

import argparse
import re
import time

from slrpipe.setting import Setting


def main(argv=None):
    p = argparse.ArgumentParser(prog="bench_erm.py starts", description=__doc__.splitlines()[0])
    p.add_argument("--D", type=int, default=256)
    p.add_argument("--alpha", type=float, default=20.0)
    p.add_argument("--starts", type=int, default=10)
    p.add_argument("--max-iter", type=int, default=1000)
    p.add_argument("--quick", action="store_true", help="D = 32, α = 5, 3 starts, 30 iterations (CI)")
    a = p.parse_args(argv)
    if a.quick:
        a.D, a.alpha, a.starts, a.max_iter = 32, 5.0, 3, 30

    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from flax import nnx

    from slrpipe.data import SLRDataset
    from slrpipe.data.sampling import SLRTask
    from slrpipe.train import erm, lanes
    from slrpipe.train.experiment import init_model
    from slrpipe.train.options import SolverOptions

    sigma, lam = "softmax", 0.01
    task = SLRTask(Setting("spiked", 1.0, {3: 1.0}, 0.0), a.D)
    train = SLRDataset(task, int(a.alpha * a.D), 0, 0)
    data = train.load()
    starts = []
    for i in range(a.starts):
        _, state = nnx.split(init_model(train, sigma, "informed" if i == 0 else "random", i), nnx.Param)
        starts.append(nnx.to_pure_dict(state))
    o = SolverOptions(max_iter=a.max_iter).resolved(train.n)
    dd = erm.place_data(data.X, data.mask, data.y, jnp.float32, None)
    lam_j, tol = jnp.float32(lam), jnp.float32(o.tol)
    print(
        f"spiked ν = 1, L = 3, {sigma}, λ = {lam}, D = {a.D}, n = {train.n}, {a.starts} starts, "
        f"device {jax.default_backend()}"
    )

    # one evaluation of J and ∇J: one start, and all starts at once
    fun = lambda q: erm.objective(q, dd.X, dd.mask, dd.y, sigma, lam_j, dd.XT)
    one, many = jax.jit(jax.value_and_grad(fun)), jax.jit(jax.vmap(jax.value_and_grad(fun)))
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *starts)
    times = []
    for f, arg in ((one, starts[0]), (many, stacked)):
        jax.block_until_ready(f(arg))
        t0 = time.process_time()
        for _ in range(5):
            jax.block_until_ready(f(arg))
        times.append((time.process_time() - t0) / 5)
    print(
        f"evaluation of J and ∇J: one start {1e3 * times[0]:.2f} ms, {a.starts} at once {1e3 * times[1]:.2f} ms "
        f"({times[1] / times[0]:.2f}× one)"
    )

    erm.minimize(starts[0], data.X, data.mask, data.y, sigma, lam, SolverOptions(max_iter=1))  # compiled first
    t0 = time.process_time()
    seq = [erm.minimize(q, data.X, data.mask, data.y, sigma, lam, o) for q in starts]
    t_seq = time.process_time() - t0

    # every start at once: the solver's own block (one L-BFGS lane per start, its own end and tolerance)
    block = jax.jit(
        jax.vmap(
            lambda q, s, end: erm.lbfgs_block(q, s, dd, lam_j, end, tol, sigma, o.memory_size),
            in_axes=(0, 0, 0),
        )
    )
    state = jax.vmap(lambda q: erm.lbfgs_init(q, o.memory_size))(stacked)
    params, step, done = stacked, np.zeros(a.starts, int), np.zeros(a.starts, bool)
    hlo = block.lower(params, state, jnp.asarray(step)).compile().as_text()
    # X, and its transposed copy where the solver keeps one (on CPU)
    shapes = "|".join(",".join(map(str, x.shape)) for x in (dd.X, dd.XT) if x is not None)
    copies = len(re.findall(rf"= f32\[{a.starts},({shapes})\]\S* broadcast\(", hlo))
    t0 = time.process_time()
    while not done.all() and step.max() < a.max_iter:
        end = np.where(done, step, np.minimum(step + o.record_every, a.max_iter))
        params, state, _, gn, count = block(params, state, jnp.asarray(end))
        step, done = np.asarray(count), done | (np.asarray(gn) < o.tol) | (np.asarray(count) < end)
    t_vmap = time.process_time() - t0
    lanes.minimize_lanes(starts, dd, sigma, lam, SolverOptions(max_iter=1))  # compiled first
    t0 = time.process_time()
    lane_runs = lanes.minimize_lanes(starts, dd, sigma, lam, o)
    t_lanes = time.process_time() - t0
    print(f"one after the other (minimize): {t_seq:.1f} s CPU, iterations {[r.iterations for r in seq]}")
    print(
        f"as lanes (slrpipe.train.lanes): {t_lanes:.1f} s CPU ({t_lanes / t_seq:.2f}× one after the other), "
        f"iterations {[r.iterations for r in lane_runs]}"
    )
    print(
        f"  lowest J over starts: {min(r.loss for r in seq):.6f} one after the other, "
        f"{min(r.loss for r in lane_runs):.6f} as lanes"
    )
    print(f"all at once (vmap of optax.lbfgs): {t_vmap:.1f} s CPU ({t_vmap / t_seq:.2f}× one after the other)")
    print(f"  iterations {step.tolist()}; broadcasts of X or XT to {a.starts} lanes in the program: {copies}")
    print(f"  optax {optax.__version__}, jax {jax.__version__}")
