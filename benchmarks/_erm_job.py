"""Mode ``job`` of benchmarks/bench_erm.py: where the time of one ERM run goes in a training job.

Imports, data, compilation, L-BFGS, test set, output, with JAX's persistent compilation cache cold
and warm (workflow/rules/train.smk).

The workflow trains ERM in batches (``slrpipe train-batch``, one process per batch): the first run
of a batch pays the imports and the compilation (or the cache load), the later runs of the same
shape only the data, the iterations and the test set. Each measurement here is a fresh Python
process (as a batch job is) that walks through the steps of one run of
``slrpipe.train.experiment.run_erm_batch`` (training set, initial module, ``minimize`` with its
programs, test errors of the run and the Bayes oracle, the result Dataset and its netCDF) with a
timer around each; wall and CPU (user + sys of this process) seconds are printed per step.
Mode ``batch`` measures a whole batch (wall, peak memory, against the resource
law). Default run: the default config's spiked-SLR L = 3, ν = 1, softmax, λ = 0.1, α = 1
(D = n = 600), 20 000 test sequences. On a shared machine compare the CPU column.
``--quick`` (CI): the same two processes at D = n = 100 and 2000 test sequences.

Usage: python benchmarks/bench_erm.py job [--sigma softmax --D 600 --n 600 --n-test 20000] [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from slrpipe.setting import Setting


def child(a):
    T = {}
    t0, c0 = time.perf_counter(), time.process_time()

    def mark(name):
        nonlocal t0, c0
        t, c = time.perf_counter(), time.process_time()
        T[name] = (t - t0, c - c0)
        t0, c0 = t, c

    import slrpipe.cli
    import slrpipe.commands.train_batch  # noqa: F401

    mark("import slrpipe CLI (train-batch)")
    import jax
    import jax.numpy as jnp

    mark("import jax")
    import optax  # noqa: F401
    from flax import nnx

    mark("import optax, flax")
    import xarray  # noqa: F401

    mark("import xarray")
    from slrpipe.data import SLRDataset, SLRTask
    from slrpipe.io import write_netcdf
    from slrpipe.models import bayes_predict
    from slrpipe.train import erm
    from slrpipe.train import experiment as E
    from slrpipe.train.metrics import streamed_errors
    from slrpipe.train.options import ERMOptions
    from slrpipe.vocabulary import default_test_seed

    mark("import slrpipe.train, io")
    train = SLRDataset(SLRTask(Setting("spiked", 1.0, 3, 0.0), a.D), a.n, 0, 10_000)
    o = ERMOptions.of(a.sigma, 0.1, n_test=a.n_test, theory=False)
    data = train.load()
    mark("training set (sampled)")
    model = E.init_model(train, a.sigma, o.init, o.init_seed, jnp.float32)
    mark("initial module (first device use)")
    _, state = nnx.split(model, nnx.Param)
    o_s = o.solver.resolved(train.n)
    dev = erm.place_data(data.X, data.mask, data.y, jnp.float32, None)
    mark("device copy + transpose")
    params = nnx.to_pure_dict(state)
    lam = jnp.asarray(0.1, jnp.float32)
    jax.block_until_ready(erm.value_gnorm(params, *dev[:3], lam, a.sigma, dev[3]))
    s0 = erm.lbfgs_init(params, o_s.memory_size)
    mark("J, |∇J| and L-BFGS init programs")
    low = erm.lbfgs_block.lower(params, s0, dev, lam, 10, jnp.asarray(o_s.tol, jnp.float32), a.sigma, o_s.memory_size)
    mark("L-BFGS block: trace + lower")
    low.compile()
    mark("L-BFGS block: compile or cache load")
    res = erm.minimize(params, data.X, data.mask, data.y, a.sigma, 0.1, o.solver, teacher=train.teacher)
    mark(f"minimize ({res.iterations} iterations; programs in memory)")
    test_seed = default_test_seed(train.data_seed)
    test = SLRDataset(train.task, a.n_test, train.teacher_seed, test_seed)
    chunks = list(test.chunks())
    mark("test set sampled")
    nnx.replace_by_pure_dict(state, res.params)
    nnx.update(model, state)
    k_star, v_star = train.teacher
    streamed_errors(
        {"f": E.predictor(model, o), "bayes": lambda X, m: bayes_predict(X, m, k_star, v_star, "spiked", 1.0)}, chunks
    )
    mark("test errors of f and the Bayes oracle (numpy)")
    ds = E.result_dataset(train, o, test_seed, res, E.RunErrors(0.0, (0.0, 0.0), (0.0, 0.0)))
    with tempfile.TemporaryDirectory() as d:
        write_netcdf(ds, os.path.join(d, "r.nc"))
    mark("Dataset + netCDF")
    for k, (w, c) in T.items():
        print(f"{k}\t{w:.3f}\t{c:.3f}")


def main(argv=None):
    p = argparse.ArgumentParser(prog="bench_erm.py job", description=__doc__.splitlines()[0])
    p.add_argument("--sigma", default="softmax")
    p.add_argument("--D", type=int, default=600)
    p.add_argument("--n", type=int, default=600)
    p.add_argument("--n-test", type=int, default=20_000)
    p.add_argument("--quick", action="store_true", help="D = n = 100, 2000 test sequences (CI)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.quick:
        a.D, a.n, a.n_test = 100, 100, 2000
    if a.child:
        return child(a)
    from slrpipe.threads import thread_env

    env = dict(os.environ, **thread_env(1), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    args = [
        sys.executable,
        __file__,
        "--child",
        "--sigma",
        a.sigma,
        "--D",
        str(a.D),
        "--n",
        str(a.n),
        "--n-test",
        str(a.n_test),
    ]
    cols = {}
    with tempfile.TemporaryDirectory() as cache:
        env["JAX_COMPILATION_CACHE_DIR"] = cache
        for label in ("cold cache", "warm cache"):
            out = subprocess.run(args, env=env, check=True, capture_output=True, text=True).stdout
            cols[label] = [line.split("\t") for line in out.strip().splitlines()]
    print(
        f"one ERM run of a train-batch job: {a.sigma}, D = {a.D}, n = {a.n}, n_test = {a.n_test}; seconds wall / CPU per step"
    )
    names = [r[0] for r in cols["cold cache"]]
    print(f"{'step':58s} {'cold wall':>9s} {'cold CPU':>9s} {'warm wall':>9s} {'warm CPU':>9s}")
    tot = {k: [0.0, 0.0] for k in cols}
    for i, name in enumerate(names):
        row = []
        for k in cols:
            w, c = float(cols[k][i][1]), float(cols[k][i][2])
            tot[k][0] += w
            tot[k][1] += c
            row += [w, c]
        label = cols["warm cache"][i][0] if "minimize" in name else name
        print(f"{label:58s} " + " ".join(f"{x:9.2f}" for x in row))
    print(f"{'total (after interpreter start)':58s} " + " ".join(f"{x:9.2f}" for k in cols for x in tot[k]))


if __name__ == "__main__":
    main()
