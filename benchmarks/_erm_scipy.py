"""Mode ``scipy`` of benchmarks/bench_erm.py: side by side with research code.

The same problem — ten starts (informed + random) of one training set, spiked ν = 1, L = 3 — solved
by this project (``slrpipe.train.lanes.minimize_lanes``: float32, all starts as lanes) and by what a
researcher would write: ``scipy.optimize.minimize(method="L-BFGS-B")`` in float64 on a flat θ =
(k, v), the objective ``slrpipe.train.erm.objective`` with a jitted ``jax.value_and_grad``, one
start after another. Same data, same starts, same stopping rule: |∇J|₂ < tol (scipy's own tests
switched off: ``ftol = gtol = 0``; a callback stops at the rule), the same iteration budget and
L-BFGS memory (10). Each side is timed after its compilation, this project's solve as it runs (stopped
lanes dropped from later evaluations) and with every lane evaluated to the end (``compact=False``),
interleaved, medians. Printed: CPU and wall seconds of each, their ratio, and every start's J at both
solutions (both evaluated in float64).

Default: D = 500, α = 5, softmax, λ = 0.1, 10 starts, tol 1e-5 (the project's float32 default).
``--quick`` (CI): D = 32, 3 starts.
"""

from __future__ import annotations

import argparse
import time

from slrpipe.setting import Setting


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench_erm.py scipy", description=__doc__.splitlines()[0])
    p.add_argument("--D", type=int, default=500)
    p.add_argument("--alpha", type=float, default=5.0)
    p.add_argument("--sigma", default="softmax")
    p.add_argument("--lam", type=float, default=0.1)
    p.add_argument("--starts", type=int, default=10)
    p.add_argument("--max-iter", type=int, default=1000)
    p.add_argument("--tol", type=float, default=1e-5)
    p.add_argument("--repeats", type=int, default=3, help="timed solves of this project, each way")
    p.add_argument("--quick", action="store_true", help="D = 32, 3 starts (CI)")
    a = p.parse_args(argv)
    if a.quick:
        a.D, a.starts, a.repeats = 32, 3, 1

    import jax
    import jax.numpy as jnp
    import numpy as np
    import scipy
    from flax import nnx
    from scipy.optimize import minimize as sp_minimize

    from slrpipe.data import SLRDataset, SLRTask
    from slrpipe.train.erm import objective, place_data
    from slrpipe.train.experiment import init_model
    from slrpipe.train.lanes import minimize_lanes
    from slrpipe.train.options import SolverOptions

    train = SLRDataset(SLRTask(Setting("spiked", 1.0, 3, 0.0), a.D), int(a.alpha * a.D), 0, 0)
    data = train.load()
    X, mask, y = (np.asarray(x) for x in data[:3])
    starts = []
    for i in range(a.starts):
        model = init_model(train, a.sigma, "informed" if i == 0 else "random", i)
        starts.append({k: np.asarray(v) for k, v in nnx.to_pure_dict(nnx.split(model, nnx.Param)[1]).items()})
    D = a.D
    print(
        f"scipy: spiked ν = 1, L = 3, {a.sigma}, λ = {a.lam}, D = {D}, n = {train.n}, {a.starts} starts "
        f"(informed + random), stop at |∇J|₂ < {a.tol:g} or {a.max_iter} iterations, device {jax.default_backend()}"
    )

    # this project: float32, the starts as lanes
    o = SolverOptions(max_iter=a.max_iter, tol=a.tol)
    dd = place_data(X, mask, y, np.float32)
    t0 = time.perf_counter()
    minimize_lanes(starts, dd, a.sigma, a.lam, o)  # compiles
    t_compile = time.perf_counter() - t0
    minimize_lanes(starts, dd, a.sigma, a.lam, o, compact=False)  # compiles
    times, ours = {True: [], False: []}, None  # compact: [(wall, CPU)], interleaved (A, B, A, B) on a shared machine
    for compact in (True, False) * a.repeats:
        t0, c0 = time.perf_counter(), time.process_time()
        runs = minimize_lanes(starts, dd, a.sigma, a.lam, o, compact=compact)
        times[compact].append((time.perf_counter() - t0, time.process_time() - c0))
        ours = runs if compact else ours
    w_ours, c_ours = np.median(times[True], axis=0)
    w_full, c_full = np.median(times[False], axis=0)

    # research code: float64, scipy's L-BFGS-B, one start after another
    with jax.enable_x64(True):
        X64, m64, y64 = jnp.asarray(X, jnp.float64), jnp.asarray(mask), jnp.asarray(y, jnp.float64)

        def J(theta):
            return objective({"k": theta[:D], "v": theta[D:]}, X64, m64, y64, a.sigma, a.lam)

        vg = jax.jit(jax.value_and_grad(J))
        J64 = jax.jit(J)

        def fun(theta):
            v, g = vg(theta)
            return float(v), np.asarray(g)

        def research(theta0):
            last = {}

            def f(theta):
                last["x"], (v, last["g"]) = theta.copy(), fun(theta)
                return v, last["g"]

            def stop(intermediate_result):
                x = intermediate_result.x
                g = last["g"] if np.array_equal(x, last["x"]) else fun(x)[1]
                if np.linalg.norm(g) < a.tol:
                    raise StopIteration

            if np.linalg.norm(fun(theta0)[1]) < a.tol:
                return theta0, 0
            r = sp_minimize(
                f,
                theta0,
                jac=True,
                method="L-BFGS-B",
                callback=stop,
                options={"maxiter": a.max_iter, "maxcor": 10, "ftol": 0.0, "gtol": 0.0, "maxfun": 20 * a.max_iter},
            )
            return r.x, r.nit

        thetas = [np.concatenate([q["k"], q["v"]]).astype(np.float64) for q in starts]
        t0 = time.perf_counter()
        fun(thetas[0])  # compiles
        t_compile64 = time.perf_counter() - t0
        t0, c0 = time.perf_counter(), time.process_time()
        theirs = [research(th) for th in thetas]
        w_sp, c_sp = time.perf_counter() - t0, time.process_time() - c0
        J_ours = [float(J64(np.concatenate([r.params["k"], r.params["v"]]).astype(np.float64))) for r in ours]
        J_sp = [float(J64(x)) for x, _ in theirs]
        g_sp = [float(np.linalg.norm(fun(x)[1])) for x, _ in theirs]

    same = [abs(u - v) <= 1e-5 * abs(v) for u, v in zip(J_ours, J_sp)]
    print(
        f"this project (lanes, float32): {w_ours:.2f} s wall, {c_ours:.2f} s CPU (compilation before: "
        f"{t_compile:.1f} s wall), iterations {[r.iterations for r in ours]}"
    )
    print(
        f"  without dropping stopped lanes (compact=False): {w_full:.2f} s wall, {c_full:.2f} s CPU "
        f"({c_full / c_ours:.2f}× the CPU of the default; medians of {a.repeats}, interleaved)"
    )
    print(
        f"research code (scipy {scipy.__version__} L-BFGS-B, float64, jitted JAX gradients): {w_sp:.2f} s wall, "
        f"{c_sp:.2f} s CPU (compilation before: {t_compile64:.1f} s wall), iterations {[n for _, n in theirs]}, "
        f"final |∇J|₂ ≤ {max(g_sp):.1e}"
    )
    print(
        f"ratio (research / this project): {c_sp / c_ours:.1f}× in CPU, {w_sp / w_ours:.1f}× in wall; "
        f"same J (to 1e-5 relative) at {sum(same)} of {a.starts} starts"
    )
    print(
        "  J per start (float64 at each solution), this project / research: "
        + ", ".join(f"{u:.6f}/{v:.6f}" for u, v in zip(J_ours, J_sp))
    )
    return 0
