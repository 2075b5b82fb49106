"""Mode ``share`` of benchmarks/bench_erm.py: every model of one training set in one pass over X.

The models a training batch trains on one training set (a config's plan: both σ, every λ, every
start; L-BFGS runs only) cut to ``--max-iter`` iterations, trained one after the other with
``optax.lbfgs`` (``slrpipe.train.erm.minimize``, the workflow's ``lanes: false``) and all at once
as lanes (``slrpipe.train.lanes.minimize_lanes``: one product X·W, W (D, 2S), per evaluation).
Each is timed after its compilation (the lanes' solve is run twice, the second timed). Printed:
time per model-iteration, and passes over X (evaluations of J and ∇J, each streaming X and, on CPU,
its transposed copy) per iteration of the training set: one after the other it is at least one per
model, as lanes it is counted, with the lanes the products held (those moving on only).

Default: config/paper.yaml's largest batch (spiked ν = 1, α = 0.5: D = 14 142, n = 7071, L = 3,
X = 1.12 GB float32), its first training set (14 models), 3 iterations. ``--quick`` (CI): the
default config's α = 0.5 batch (D = 849), 2 iterations: seconds, not a measurement.
"""

from __future__ import annotations

import argparse
import dataclasses
import time


def pick_set(config: str, setting: str, alpha: float):
    """(batch name, the L-BFGS members of its first training set) of a config's plan."""
    from pathlib import Path

    import yaml

    from slrpipe.config import validate
    from slrpipe.workflow import plan, sizes

    cfg = validate(yaml.safe_load(Path(config).read_text()))
    exp = cfg["erm"][setting]
    ((D, n),) = sizes(exp, alpha)[-1:]
    p = plan(cfg)
    name, batch = next(
        (k, b)
        for k, b in p.train_batches.items()
        if (b.members[0].D, b.members[0].n, b.members[0].model, b.members[0].nu) == (D, n, exp["model"], exp["nu"])
    )
    first = batch.members[0]
    members = [
        m
        for m in batch.members
        if (m.teacher_seed, m.data_seed) == (first.teacher_seed, first.data_seed) and m.optimizer == "lbfgs"
    ]
    return name, members


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench_erm.py share", description=__doc__.splitlines()[0])
    p.add_argument("--config", default="config/paper.yaml")
    p.add_argument("--setting", default="spiked_L3_nu1")
    p.add_argument("--alpha", type=float, default=0.5)
    p.add_argument("--max-iter", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="config/config.yaml's α = 0.5 batch, 2 iterations (CI)")
    a = p.parse_args(argv)
    if a.quick:
        a.config, a.max_iter = "config/config.yaml", 2

    import jax
    import numpy as np
    from flax import nnx

    from slrpipe.commands.train import dataset, options
    from slrpipe.resource_laws import lanes_device_mb
    from slrpipe.train.erm import minimize, place_data
    from slrpipe.train.experiment import init_model
    from slrpipe.train.lanes import lanes_solve, minimize_lanes, receiving_progress, sigma_segments

    name, members = pick_set(a.config, a.setting, a.alpha)
    opts = [options(dataclasses.replace(m, max_iter=a.max_iter, lanes=True), no_theory=True) for m in members]
    train = dataset(members[0])
    (data, t_set, _) = timed(train.load)
    m0 = members[0]
    S, x_gb = len(opts), m0.n * max(m0.L) * m0.D * 4 / 2**30
    kinds = sorted({(o.sigma, o.lam, o.init) for o in opts})
    print(
        f"share: batch {name}, its first training set: {S} models ({', '.join(f'{s} λ={lam:g} {i}' for s, lam, i in kinds)}), "
        f"D = {m0.D}, n = {m0.n}, L = {max(m0.L)}, X = {x_gb:.2f} GB float32 (drawn in {t_set:.1f} s), "
        f"max_iter {a.max_iter}, device {jax.default_backend()}"
    )
    starts = []
    for o in opts:
        model = init_model(train, o.sigma, o.init, o.init_seed, np.float32, o.c_inf, o.init_scale)
        starts.append(nnx.to_pure_dict(nnx.split(model, nnx.Param)[1]))
    dd = place_data(data.X, data.mask, data.y, np.float32, None)
    del data

    # one after the other (optax.lbfgs), each σ's programs compiled first
    for sigma in dict.fromkeys(o.sigma for o in opts):
        i = next(i for i, o in enumerate(opts) if o.sigma == sigma)
        solver = dataclasses.replace(opts[i].solver, lanes=False, max_iter=1)
        minimize(starts[i], dd.X, dd.mask, dd.y, sigma, opts[i].lam, solver, data=dd)

    def alone():
        return [
            minimize(q, dd.X, dd.mask, dd.y, o.sigma, o.lam, dataclasses.replace(o.solver, lanes=False), data=dd)
            for q, o in zip(starts, opts)
        ]

    seq, w_seq, c_seq = timed(alone)
    it_seq = sum(r.iterations for r in seq)

    # as lanes: the whole solve, compiled by a first run of the same shapes
    sigmas, lams = [o.sigma for o in opts], [o.lam for o in opts]
    minimize_lanes(starts, dd, sigmas, lams, opts[0].solver)
    lanes, w_lanes, c_lanes = timed(lambda: minimize_lanes(starts, dd, sigmas, lams, opts[0].solver))
    it_lanes = sum(r.iterations for r in lanes)
    # the passes over X of that solve, counted by the solve itself
    order = sorted(range(S), key=lambda i: sigmas[i])
    o = opts[0].solver.resolved(m0.n)
    P = jax.tree.map(lambda *x: np.stack(x), *[starts[i] for i in order])
    args = (
        P,
        dd,
        np.asarray([lams[i] for i in order], np.float32),
        np.float32(o.tol),
        None,
        sigma_segments([sigmas[i] for i in order]),
        o.memory_size,
        o.max_iter,
        o.record_every,
        o.log_every,
    )
    with receiving_progress(S, o.log_every, o.record_every, False):
        out = lanes_solve(*args)
        passes, work, rounds = int(out[3]), int(out[4]), int(np.max(np.asarray(out[0].count)))
    ma = lanes_solve.lower(*args).compile().memory_analysis()

    per_seq, per_lanes = c_seq / max(it_seq, 1), c_lanes / max(it_lanes, 1)
    print(
        f"one after the other (optax.lbfgs): {w_seq:.1f} s wall, {c_seq:.1f} s CPU, {it_seq} model-iterations: "
        f"{1e3 * per_seq:.0f} ms CPU per model-iteration; passes over X per iteration of the set ≥ {S} "
        "(one per model and evaluation)"
    )
    print(
        f"as lanes (slrpipe.train.lanes): {w_lanes:.1f} s wall, {c_lanes:.1f} s CPU, {it_lanes} model-iterations: "
        f"{1e3 * per_lanes:.0f} ms CPU per model-iteration; {passes} passes over X in {rounds} iterations "
        f"= {passes / max(rounds, 1):.2f} per iteration of the set (the start's included); the products held "
        f"{work} lanes in all, {work / max(passes * S, 1):.0%} of {S} per pass (stopped lanes and lanes at their "
        "block's end drop out)"
    )
    print(
        f"per-model-iteration CPU: {per_seq / per_lanes:.1f}× lower as lanes (wall {w_seq / max(it_seq, 1) / (w_lanes / max(it_lanes, 1)):.1f}×); "
        f"J after {a.max_iter} iterations, largest relative difference {max(abs(x.loss - y.loss) / abs(y.loss) for x, y in zip(lanes, seq)):.1e}"
    )
    if ma is not None:
        x_mib = sum(x.nbytes for x in (dd.X, dd.XT) if x is not None) / 2**20
        print(
            f"device memory of the lanes' solve (XLA's analysis, {jax.default_backend()}): arguments "
            f"{ma.argument_size_in_bytes / 2**20:.0f} MiB (X and its copies {x_mib:.0f}), temporaries and outputs "
            f"{(ma.temp_size_in_bytes + ma.output_size_in_bytes) / 2**20:.0f} MiB; the law's lanes term "
            f"(slrpipe.resource_laws.lanes_device_mb) {lanes_device_mb(S, m0.n, max(m0.L), m0.D):.0f} MiB"
        )
    return 0
