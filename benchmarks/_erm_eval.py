"""Mode ``eval`` of benchmarks/bench_erm.py: seconds per L-BFGS iteration and ERM's bandwidth.

On one device, with the projected time of the paper config (config/paper.yaml) on one GPU.

ERM is memory bound: one value-and-gradient evaluation of J streams X twice (the forward product
X·[k, v] and the backward Xᵀ·δ; on CPU the backward reads the transposed copy XT, the same number
of bytes, see ``slrpipe.train.erm.transposed_product``) and does 4 flops per float of X. The roofline of an
evaluation is therefore 2·bytes(X) / (memory bandwidth), and an L-BFGS iteration costs one
evaluation plus the extra ones of its zoom line search. Printed:

1. the reference bandwidth: a plain large numpy copy (read + write bytes per second);
2. one evaluation (plain X and, on CPU, with the transposed copy): time, bytes of X streamed per
   second, fraction of the copy bandwidth;
3. L-BFGS in the steady state (after 5 warm-up iterations, blocks of ``--iters``, best of 5 on this
   shared machine): seconds per iteration, evaluations per iteration, achieved bandwidth;
4. ``minimize`` from the informed start at this size (iterations to tol 1e-5), and the sampling
   rate of SLR data (floats per second of ``sample_chunk``);
5. the projection for the paper config on one H100 (3.35 TB/s HBM3), with its assumptions, and the
   host time of drawing its training and test sets (as the batched workflow draws them).

Default size: D = 1000, L = 3, n = 16 667 (n·L·D = 5·10⁷ float32 = 200 MB).
``--quick`` (CI): every step at D = 100, n = 333 (n·L·D = 10⁵, 400 kB), a 40 MB copy and blocks of
3 iterations: seconds, not a measurement (X fits in cache).

Usage: python benchmarks/bench_erm.py eval [--D 1000 --L 3 --n 16667 --iters 10 --dtype float32]
       [--gpu-bandwidth 3.35e12 --efficiency 0.7 --gpu-iterations 300] [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from slrpipe.setting import Setting


def best_of(fn, repeat=5):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def copy_time(size: int) -> tuple[float, int]:
    """Best time of a numpy copy of ``size`` float32, and its bytes (each read once, written once)."""
    src = np.ones(size, np.float32)
    dst = np.empty_like(src)
    return best_of(lambda: np.copyto(dst, src)), src.nbytes


def paper_jobs(path="config/paper.yaml"):
    """The paper config's ERM work as the workflow runs it (slrpipe.workflow.plan): (runs, training
    sets, test sets, batches). runs: (n, L_max, D, max_iter) of every run (one
    ``slrpipe.jobs.TrainJob`` each); training sets: (n, L_max, D) of each set drawn — once per
    batch that uses it (``slrpipe train-batch`` draws it in the job), or once in all when the config
    stores it (``generate`` writes it, the batches read it); test sets: (n_test, L_max, D) of each
    set a batch evaluates on (its runs of one training set and test seed share one pass); batches:
    their number; samplers: the samplers its runs draw with ("jax": on the training device)."""
    import yaml

    from slrpipe.config import validate
    from slrpipe.lengths import length_law
    from slrpipe.workflow import plan

    with open(path) as f:
        p = plan(validate(yaml.safe_load(f)))
    runs = [(j.n, max(length_law(j.L)), j.D, j.max_iter) for j in p.erm.values()]
    train_sets, test_sets = {}, {}
    for name, batch in p.train_batches.items():
        for m in batch.members:
            key = (m.model, m.nu, tuple(m.L.items()), m.delta, m.D, m.n, m.teacher_seed, m.data_seed)
            L_max = max(length_law(m.L))
            train_sets[key if m.data else (name, key)] = (m.n, L_max, m.D)
            test_sets[(name, key, m.test_seed, m.n_test)] = (m.n_test, L_max, m.D)
    samplers = sorted({j.sampler for j in p.erm.values()})
    return runs, list(train_sets.values()), list(test_sets.values()), len(p.train_batches), samplers


def main(argv=None):
    p = argparse.ArgumentParser(prog="bench_erm.py eval", description=__doc__.splitlines()[0])
    p.add_argument("--D", type=int, default=1000)
    p.add_argument("--L", type=int, default=3)
    p.add_argument("--n", type=int, default=16_667)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--sigma", default="softmax")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--gpu-bandwidth", type=float, default=3.35e12, help="bytes/s of the projected GPU (H100 SXM HBM3)")
    p.add_argument(
        "--efficiency", type=float, default=0.7, help="assumed fraction of the GPU bandwidth an evaluation achieves"
    )
    p.add_argument(
        "--gpu-iterations",
        type=int,
        default=300,
        help="assumed L-BFGS iterations per paper run (tol 1e-5; the laptop config converges in 50–300)",
    )
    p.add_argument("--paper-config", default="config/paper.yaml")
    p.add_argument("--copy-floats", type=int, default=10**8, help="size of the reference numpy copy")
    p.add_argument("--quick", action="store_true", help="D = 100, n = 333, a 40 MB copy, 3 iterations (CI)")
    a = p.parse_args(argv)
    if a.quick:
        a.D, a.n, a.iters, a.copy_floats = 100, 333, 3, 10**7

    import jax
    import jax.numpy as jnp

    from slrpipe.data import SLRDataset, SLRTask
    from slrpipe.train import SolverOptions, minimize, objective
    from slrpipe.train.erm import DeviceData, lbfgs_block, lbfgs_init, transposed

    if a.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    dt = np.dtype(a.dtype)
    device = jax.devices()[0]
    on_cpu = device.platform == "cpu"

    # 1. reference bandwidth: numpy copy of --copy-floats float32 (400 MB by default; read + write)
    t_copy, copy_bytes = copy_time(a.copy_floats)
    bw_copy = 2 * copy_bytes / t_copy
    print(f"device: {device.platform} ({getattr(device, 'device_kind', '')})")
    print(
        f"reference: numpy copy of {copy_bytes / 1e6:.0f} MB: {t_copy * 1e3:.1f} ms = {bw_copy / 1e9:.2f} GB/s "
        "(read + write)"
    )

    task = SLRTask(Setting("spiked", 2.0, a.L, 0.0), a.D)
    ds = SLRDataset(task, a.n, teacher_seed=0, data_seed=1)
    t0 = time.perf_counter()
    data = ds.load()
    t_gen = time.perf_counter() - t0
    gen_rate = data.X.size / t_gen
    X = data.X.astype(dt, copy=False)
    nbytes = X.nbytes
    print(
        f"size: D = {a.D}, L = {a.L}, n = {a.n}: n·L·D = {X.size:.3g}, X = {nbytes / 1e6:.0f} MB {a.dtype}; "
        f"sampling {t_gen:.2f} s = {gen_rate / 1e6:.0f} Mfloat/s"
    )

    # 2. one value-and-gradient evaluation: streams X twice
    k_star, v_star = ds.teacher
    params = {"k": jnp.asarray(np.sqrt(2) * k_star, dt), "v": jnp.asarray(v_star, dt)}
    Xj, mj, yj = jnp.asarray(X), jnp.asarray(data.mask), jnp.asarray(data.y, dt)
    XTj = transposed(X) if on_cpu else None
    vg = jax.jit(jax.value_and_grad(objective), static_argnames="sigma")
    t_eval = {}
    for name, xt in (("plain X", None), ("transposed copy", XTj)):
        if name != "plain X" and xt is None:
            continue

        def run(xt=xt):
            return jax.block_until_ready(vg(params, Xj, mj, yj, a.sigma, 0.1, xt))

        run()
        t = best_of(run)
        t_eval[name] = t
        print(
            f"evaluation ({name}): {t * 1e3:.1f} ms, X streamed at {2 * nbytes / t / 1e9:.2f} GB/s "
            f"= {2 * nbytes / t / bw_copy:.0%} of the copy bandwidth"
        )
    t_vg = min(t_eval.values())

    # 3. L-BFGS steady state: blocks of ``iters`` iterations from the same state after 5 warm-up ones
    rng = np.random.default_rng(0)
    p0 = {"k": jnp.asarray(rng.standard_normal(a.D), dt), "v": jnp.asarray(rng.standard_normal(a.D), dt)}
    lam, tol = jnp.asarray(0.1, dt), jnp.asarray(0.0, dt)
    dj = DeviceData(Xj, mj, yj, XTj)
    p5, s5, *_ = lbfgs_block(p0, lbfgs_init(p0, 10), dj, lam, 5, tol, a.sigma, 10)
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        out = jax.block_until_ready(lbfgs_block(p5, s5, dj, lam, 5 + a.iters, tol, a.sigma, 10))
        ts.append((time.perf_counter() - t0) / (int(out[4]) - 5))
    t_it = min(ts)
    # evaluations per iteration: the zoom line search's steps (optax info), one iteration at a time
    import optax.tree_utils as otu

    p_, s_, steps = p5, s5, []
    for i in range(a.iters):
        p_, s_, *_ = lbfgs_block(p_, s_, dj, lam, 6 + i, tol, a.sigma, 10)
        steps.append(int(otu.tree_get(s_, "info").num_linesearch_steps))
    evals = max(float(np.mean(steps)), 1.0)
    print(
        f"L-BFGS: {t_it * 1e3:.1f} ms/iteration (steady state, best of 5 × {a.iters}) = {t_it / t_vg:.2f} "
        f"evaluations' time; {evals:.2f} line-search evaluations per iteration (optax); X streamed at "
        f"{2 * evals * nbytes / t_it / 1e9:.2f} GB/s ({2 * evals * nbytes / t_it / bw_copy:.0%} of the copy "
        f"bandwidth; roofline {2 * evals * nbytes / bw_copy * 1e3:.1f} ms per iteration)"
    )

    # 4. a whole solve at this size from the informed start
    informed = {"k": jnp.asarray(np.sqrt(2) * k_star, dt), "v": jnp.asarray(v_star, dt)}
    r = minimize(
        informed, Xj, mj, yj, a.sigma, 0.1, SolverOptions(max_iter=3000, tol=1e-5, record_every=50, transpose=on_cpu)
    )
    print(
        f"minimize (informed start, tol 1e-5): {r.iterations} iterations, converged={r.converged}, "
        f"{r.wall_time:.1f} s (with compilation)"
    )

    # 5. projection: the paper's ERM runs on one GPU
    runs, train_sets, test_sets, n_batches, samplers = paper_jobs(a.paper_config)
    bw = a.gpu_bandwidth * a.efficiency
    solve = sum(a.gpu_iterations * evals * 2 * n * L * D * 4 / bw for n, L, D, _ in runs)
    worst = sum(mi * evals * 2 * n * L * D * 4 / bw for n, L, D, mi in runs)
    train_floats = sum(n * L * D for n, L, D in train_sets)
    test_floats = sum(nt * L * D for nt, L, D in test_sets)
    print(
        f"paper config ({a.paper_config}): {len(runs)} ERM runs in {n_batches} training batches, "
        f"{len(train_sets)} training sets drawn ({train_floats * 4 / len(train_sets) / 1e9:.2f} GB of float32 X "
        f"each on average), {len(test_sets)} test-set passes"
    )
    print(
        f"  assumptions: {a.gpu_bandwidth / 1e12:.2f} TB/s at {a.efficiency:.0%} efficiency, each evaluation "
        f"streaming X twice, {evals:.2f} evaluations per iteration (measured here), {a.gpu_iterations} iterations per run, "
        f"float32, X resident in GPU memory (no transposed copy on GPU)"
    )
    print(
        f"  L-BFGS on the GPU: {solve / 60:.1f} min in all ({solve / len(runs):.2f} s per run); "
        f"every run at its max_iter: {worst / 3600:.2f} h"
    )
    t_data = (train_floats + test_floats) / gen_rate
    bound = "sampling, not L-BFGS," if t_data / 16 > solve else "L-BFGS, not sampling,"
    print(
        f"  sampling on the host at the rate measured here ({gen_rate / 1e6:.0f} Mfloat/s per core): training sets "
        f"{train_floats / gen_rate / 3600:.1f} h + test sets {test_floats / gen_rate / 3600:.1f} h = "
        f"{t_data / 3600:.1f} h of one core ({t_data / 16 / 3600:.1f} h over 16 cores): {bound} bounds the paper "
        "config on one GPU with host sampling"
    )
    print(
        f"  the config's sampler: {', '.join(samplers)}"
        + (" (drawn and evaluated on the GPU: the host time above is not spent)" if samplers == ["jax"] else "")
    )
