"""Speed and Monte Carlo accuracy of the replica solver (docs/theory.md §5, §9; docs/validation.md §4–5).

Usage: python benchmarks/bench_replica.py [--parts channel,sweep,panel] [--L 3] [--n-samples 8192]
           [--seeds 4] [--subset 200] [--sigmas softmax,linear] [--panel-points 30] [--quick]
           [--parts length|compile --Ls 3,8,16,64 --nu 16 --n-samples 4096]
           [--parts prox_L --Ls 3,8,16,32,64 --alpha 5 --max-iter 300 [--criterion]
                           [--criterion-state m_k,q_k,V_k,m_v,q_v,V_v]]
Spiked-SLR, ν = --nu, Δ = 0, λ = --lam unless a part says otherwise; the solver options are the
CLI's (``SolverOptions()``, ``SweepOptions(two_way=True, …)``). Parts (--parts, comma-separated):
 (1) ``channel``: one channel evaluation (global prox of all samples + expectations), ours vs a
     per-sample ``scipy.optimize.minimize`` loop timed on ``--subset`` samples and extrapolated,
     with max |ψ_ours − ψ_scipy| on the subset (equal accuracy: ours must not be higher);
 (2) ``sweep``: a warm-started sweep (largest α first) over --alphas for each σ of --sigmas: wall
     time and channel evaluations per α point, and the seed-to-seed s.d. of the test error over
     ``--seeds`` independent draws of the common random numbers (the Monte Carlo error of one solve);
 (3) ``panel``: the wall time of one Fig. 3 panel: ``--panel-points`` α log-spaced in [0.5, 20],
     each σ of --sigmas, one λ, two-way continuation (``replica_sweep`` defaults);
 (4) ``lowlam``: the λ = 0.01 sweep (spiked L = 3, ν = 2, α ∈ {1, 5}, 8192 samples, 2 scrambles,
     two-way; --lowlam-sigmas), what ``slrpipe replica --lam-grid 0.01 --alpha-grid 1,5
     --mc-seeds 2`` runs: wall and CPU time, channel evaluations (in converged solves / wasted in
     failed ones) and the values (test error of seed 0, seed mean and s.d., order parameters);
 (5) ``default``: one default workflow replica job (config/config.yaml: spiked L = 3, ν = 1,
     λ = 0.1, 11 α in [0.5, 20], 4096 samples, two-way) per σ of --default-sigmas;
 (6) ``device``: one full channel evaluation (N = --n-samples and 8 × that) on JAX's default
     device (a GPU when one is present) — run twice, with JAX_PLATFORMS=cpu and without, to
     compare;
 (7) ``length``: one channel evaluation (cheap pass: centre + 3 warm starts, and full multi-start
     pass) per L of --Ls at N = --n-samples, spiked ν = --nu, softmax and linear (--length-sigmas):
     first call (compile + run) and second call, wall and CPU seconds, prox diagnostics;
 (8) ``compile``: CPU seconds to compile each jitted piece of the prox (Newton lanes, the finish with
     the implicit Jacobian and soft-min) per L of --Ls, σ = softmax;
 (9) ``programs``: the XLA compilations of one solve per σ of --sigmas (α = 10, N = --n-samples,
     cold start) in a fresh process state: their number and seconds, by jitted function;
 (10) ``bayes``: the Bayes-optimal channel of max-SLR at ν = ∞, L = 3 (Gauss–Hermite argmax
     probabilities and their gradient), one evaluation at N = --n-samples, and the sweep of the
     default config (7 α, both starts): wall time, iterations;
 (11) ``prox_L``: the cost of one fixed-point solve against L. For each (L, σ) of --Ls × --sigmas,
     in a fresh process (compile time and peak memory are then its own): one ``solve_replica`` at
     the task of config/length.yaml (spiked ν = 16, Δ = 0, λ = 0.1) at α = --alpha with
     N = --n-samples, stopped after --max-iter evaluations, run twice: compile time (CPU of the first
     solve minus the second, and the wall seconds of jax's compile events), evaluations, time per
     evaluation, peak memory (and the accelerator's), converged, e_test; then the ratios to
     L = 3 against the targets (compile within 2× of L = 3's; time per evaluation growing no faster
     than L³). ``--criterion``: at the state reached, the fraction of samples whose global minimum
     changes when the prox's start budget (``prox.MAX_DIRECTIONS``) is doubled — the criterion that
     fixes the budget; ``--criterion-state``: that fraction alone, at the given state.
``--quick`` (CI): parts (1)–(3) for softmax alone at N = 256, a scipy subset of 4 samples, 2 seeds,
α ∈ {5, 10} and a 3-point panel, and part (11) at L ∈ {3, 16}, softmax, N = 256, two evaluations:
the same calls, most of the time compilation.
Times are this machine's (wall-clock depends on its load; CPU time and the ratios less so).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time

from slrpipe.threads import thread_env

os.environ.setdefault("XLA_FLAGS", thread_env(1)["XLA_FLAGS"])

import numpy as np
from scipy.optimize import minimize

from slrpipe.scores import score
from slrpipe.setting import Setting
from slrpipe.theory.replica import Draw, ReplicaTask, replica_sweep, solve_replica
from slrpipe.theory.replica import continuation as continuation_module
from slrpipe.theory.replica.channel import centres, channel
from slrpipe.theory.replica.fields import draw_fields
from slrpipe.theory.replica.options import SolverOptions, SweepOptions
from slrpipe.theory.replica.prox import prox
from slrpipe.theory.replica.solver import STATE


def _psi_np(chi, wk, wv, y, Vk, Vv, sigma):
    s = score(sigma, chi)
    r = y - s @ wv
    return np.sum((chi - wk) ** 2) / (2 * Vk) + r**2 / (2 * (1 + Vv * (s @ s)))


def scipy_prox(sigma, wk, wv, y, Vk, Vv):
    """Baseline: for each sample, BFGS from the centre and from L token-directed starts."""
    L = wk.shape[1]
    out = np.empty(len(y))
    for i in range(len(y)):
        f = lambda c: _psi_np(c, wk[i], wv[i], y[i], Vk, Vv, sigma)
        R = math.sqrt(2 * Vk * f(wk[i]))
        starts = [wk[i]] + [wk[i] + R * (np.eye(L)[j] - 1 / L) for j in range(L)]
        out[i] = min(minimize(f, s0, method="BFGS", options={"gtol": 1e-10}).fun for s0 in starts)
    return out


def bench_channel(a):
    # a non-convex state typical of α ≈ 1–2
    f = draw_fields(Setting("spiked", a.nu, a.L, 0.0), a.n_samples, 0, qmc=True)
    st = dict(m_k=0.3, q_k=0.5, m_v=0.6, q_v=0.8)
    Vk, Vv = 3.0, 2.0
    wk, wv, _, _ = centres(f, **st)
    y = f.y
    for sigma in a.sigmas.split(","):
        channel(sigma, f, 1.0, (st["m_k"], st["q_k"], Vk, st["m_v"], st["q_v"], Vv), softmin=100.0)  # compile
        t = time.perf_counter()
        channel(sigma, f, 1.0, (st["m_k"], st["q_k"], Vk, st["m_v"], st["q_v"], Vv), softmin=100.0)
        t_ch = time.perf_counter() - t
        ours = prox(sigma, wk, wv, y, Vk, Vv)
        n = a.subset
        t = time.perf_counter()
        base = scipy_prox(sigma, wk[:n], wv[:n], y[:n], Vk, Vv)
        t_base = (time.perf_counter() - t) * len(y) / n
        dpsi = ours["psi"][:n] - base
        print(
            f"(1) channel {sigma} L={a.L} N={len(y)}: ours {t_ch:.2f} s (full multi-start search, "
            f"soft-min, all estimators), scipy loop {t_base:.1f} s (extrapolated from {n}), speed-up "
            f"{t_base / t_ch:.0f}x; ψ_ours − ψ_scipy: max {dpsi.max():.1e}, min {dpsi.min():.1e}",
            flush=True,
        )


def bench_sweep(a):
    alphas = [float(v) for v in a.alphas.split(",")]
    for sigma in a.sigmas.split(","):
        runs = [
            replica_sweep(
                ReplicaTask(sigma, Setting("spiked", a.nu, a.L, 0.0)),
                [a.lam],
                alphas,
                draw=Draw(n_samples=a.n_samples, seed=s),
                two_way=False,
            )
            for s in range(a.seeds)
        ]
        for j, alpha in enumerate(alphas):
            e = np.array([float(r.test_error[0, j]) for r in runs])
            w = np.mean([float(r.wall_time[0, j]) for r in runs])
            it = np.mean([float(r.iterations[0, j]) for r in runs])
            conv = all(bool(r.converged[0, j]) for r in runs)
            warm = "cold start" if j == len(alphas) - 1 else "warm start"
            print(
                f"(2) {sigma} spiked ν={a.nu:g} L={a.L} λ={a.lam:g} α={alpha:g} N={runs[0].attrs['n_samples']} "
                f"(QMC, {warm}): {w:.1f} s/point, {it:.1f} channel evaluations, e_test = {e.mean():.4f}, "
                f"seed-to-seed s.d. {e.std(ddof=1):.4f} over {len(e)} seeds (MC error of one solve), "
                f"converged={conv}",
                flush=True,
            )


def bench_panel(a):
    alphas = np.geomspace(0.5, 20.0, a.panel_points)
    total = 0.0
    for sigma in a.sigmas.split(","):
        t = time.perf_counter()
        ds = replica_sweep(
            ReplicaTask(sigma, Setting("spiked", a.nu, a.L, 0.0)),
            [a.lam],
            alphas,
            draw=Draw(n_samples=a.n_samples, seed=0),
        )
        dt = time.perf_counter() - t
        total += dt
        print(
            f"(3) panel {sigma}: {len(alphas)} α in [0.5, 20], N={ds.attrs['n_samples']}, two-way: {dt:.0f} s, "
            f"converged {int(ds.converged.sum())}/{len(alphas)}, two branches at "
            f"{int((ds.n_branches == 2).sum())} α, channel evaluations {int(ds.iterations.sum())} (down pass "
            f"only, reported points)",
            flush=True,
        )
    print(
        f"(3) Fig. 3 panel ({' + '.join(a.sigmas.split(','))}, one λ): {total:.0f} s = {total / 60:.1f} min", flush=True
    )


def _timed_sweep(a, sigma, model, nu, L, lam, alphas, n_samples, **sweep_kw):
    """replica_sweep with every solve_replica call recorded: returns (ds, wall, cpu, solves)."""
    solves, inner = [], continuation_module.solve_replica

    def counted(*args, **kw):
        r = inner(*args, **kw)
        solves.append((float(args[2]), r["iterations"], bool(r["converged"]), r["wall_time"]))
        return r

    continuation_module.solve_replica = counted
    try:
        t, c = time.perf_counter(), time.process_time()
        ds = replica_sweep(
            ReplicaTask(sigma, Setting(model, nu, L, 0.0)),
            [lam],
            alphas,
            draw=Draw(n_samples=n_samples, seed=0),
            options=SolverOptions(),
            sweep=SweepOptions(two_way=True, **sweep_kw),
        )
        return ds, time.perf_counter() - t, time.process_time() - c, solves
    finally:
        continuation_module.solve_replica = inner


def _evals(solves):
    good = sum(it for _, it, ok, _ in solves if ok)
    bad = sum(it for _, it, ok, _ in solves if not ok)
    return f"{good + bad} channel evaluations in {len(solves)} solves ({bad} in {sum(not s[2] for s in solves)} failed ones)"


def bench_lowlam(a):
    for sigma in a.lowlam_sigmas.split(","):
        ds, wall, cpu, solves = _timed_sweep(a, sigma, "spiked", 2.0, 3, 0.01, [1.0, 5.0], a.n_samples, mc_seeds=2)
        print(
            f"(4) λ=0.01 sweep, {sigma} spiked ν=2 L=3 α∈{{1, 5}} N={a.n_samples} 2 scrambles: "
            f"wall {wall:.0f} s, CPU {cpu:.0f} s, {_evals(solves)}",
            flush=True,
        )
        for j, alpha in enumerate(ds.alpha.values):
            p = ds.isel(lam=0, alpha=j)
            print(
                f"(4)   α={alpha:g}: converged={bool(p.converged)} e_test={float(p.test_error):.5f} "
                f"seed mean {float(p.test_error_seed_mean):.5f} ± s.d. {float(p.test_error_mc_sd):.5f}; "
                + " ".join(f"{k}={float(p[k]):.5f}" for k in STATE),
                flush=True,
            )


def bench_default(a):
    alphas = [0.5, 0.7, 1.0, 1.4, 2.0, 3.0, 5.0, 7.0, 10.0, 14.0, 20.0]
    for sigma in a.default_sigmas.split(","):
        ds, wall, cpu, solves = _timed_sweep(a, sigma, "spiked", 1.0, 3, 0.1, alphas, 4096)
        print(
            f"(5) default job {sigma} spiked ν=1 L=3 λ=0.1, 11 α, N=4096: wall {wall:.0f} s, "
            f"CPU {cpu:.0f} s, {_evals(solves)}, converged {int(ds.converged.sum())}/11; e_test "
            f"{np.round(ds.test_error.values[0], 4).tolist()}",
            flush=True,
        )


def bench_device(a):
    import jax

    for n in (a.n_samples, 8 * a.n_samples):
        f = draw_fields(Setting("spiked", a.nu, a.L, 0.0), n, 0, qmc=True)
        st = dict(m_k=0.3, q_k=0.5, m_v=0.6, q_v=0.8)
        for sigma in ("softmax", "linear"):
            call = lambda: channel(sigma, f, 1.0, (st["m_k"], st["q_k"], 3.0, st["m_v"], st["q_v"], 2.0), softmin=100.0)
            call()  # compile
            t, c = time.perf_counter(), time.process_time()
            for _ in range(3):
                r = call()
            print(
                f"(6) channel {sigma} L={a.L} N={n} on {jax.default_backend()} ({jax.devices()[0].device_kind}): "
                f"{(time.perf_counter() - t) / 3:.3f} s wall, {(time.process_time() - c) / 3:.3f} s CPU per "
                f"full evaluation; qhat_k={r['qhat_k']:.6f}",
                flush=True,
            )


def bench_length(a):
    st = dict(m_k=0.3, q_k=0.5, m_v=0.6, q_v=0.8)
    for L in (int(v) for v in a.Ls.split(",")):
        f = draw_fields(Setting("spiked", a.nu, L, 0.0), a.n_samples, 0, qmc=True)
        for sigma in a.length_sigmas.split(","):
            warm = None
            for full in (True, False):
                call = lambda: channel(
                    sigma,
                    f,
                    1.0,
                    (st["m_k"], st["q_k"], 3.0, st["m_v"], st["q_v"], 2.0),
                    softmin=100.0,
                    warm=warm,
                    multistart=full,
                )
                times = []
                for _ in range(2):  # first: compile + run; second: run
                    t, c = time.perf_counter(), time.process_time()
                    r = call()
                    times.append((time.perf_counter() - t, time.process_time() - c))
                warm = r["warm"]
                kind = "full multi-start" if full else "cheap (centre + warm)"
                print(
                    f"(7) channel {sigma} spiked ν={a.nu:g} L={L} N={a.n_samples} {kind}: first call "
                    f"{times[0][0]:.2f} s wall / {times[0][1]:.2f} s CPU (compile + run), second "
                    f"{times[1][0]:.2f} s wall / {times[1][1]:.2f} s CPU; prox_multi={r['prox_multi']:.3f}, "
                    f"prox_unconverged={r['prox_unconverged']:.4f}, qhat_k={r['qhat_k']:.5f}",
                    flush=True,
                )


def bench_compile(a):
    import jax
    import jax.numpy as jnp

    from slrpipe.theory.replica import newton as NW

    for L in (int(v) for v in a.Ls.split(",")):
        n, S = 64, 2 * L + 4  # samples, starts per sample (full search + 3 warm starts)
        rng = np.random.default_rng(0)
        with jax.enable_x64(True):
            wk, wv, y = (jnp.asarray(rng.standard_normal(sh)) for sh in ((n, L), (n, L), (n,)))
            lanes = (
                jnp.asarray(rng.standard_normal((n * S, L))),
                jnp.repeat(wk, S, 0),
                jnp.repeat(wv, S, 0),
                jnp.repeat(y, S, 0),
            )
            pieces = {
                "newton (8 steps)": lambda: NW.batch_newton.lower(*lanes, 3.0, 2.0, "softmax", 8),
                "finish (Jacobian, soft-min)": lambda: NW.batch_finish.lower(
                    NW.Ends(lanes[0].reshape(n, S, L), jnp.zeros((n, S)), jnp.zeros((n, S))),
                    NW.Obs(wk, wv, y),
                    (3.0, 2.0),
                    100.0,
                    "softmax",
                    True,
                ),
            }
            for name, lower in pieces.items():
                c = time.process_time()
                low = lower()
                c1 = time.process_time()
                low.compile()
                c2 = time.process_time()
                print(
                    f"(8) compile softmax L={L} {name}: trace+lower {c1 - c:.1f} s CPU, XLA compile "
                    f"{c2 - c1:.1f} s CPU",
                    flush=True,
                )


def bench_programs(a):
    import logging
    import re

    import jax

    compiled = []

    class _Count(logging.Handler):
        def emit(self, record):
            m = re.match(r"Finished XLA compilation of jit\((\w+)\) in ([0-9.e-]+) sec", record.getMessage())
            if m:
                compiled.append((m.group(1), float(m.group(2))))

    logging.getLogger("jax").addHandler(_Count())
    jax.config.update("jax_log_compiles", True)
    for sigma in a.sigmas.split(","):
        compiled.clear()
        f = draw_fields(Setting("spiked", a.nu, a.L, 0.0), a.n_samples, 0, qmc=True)
        t = time.perf_counter()
        r = solve_replica(ReplicaTask(sigma, Setting("spiked", a.nu, a.L, 0.0)), a.lam, 10.0, fields=f)
        by = {}
        for name, sec in compiled:
            n, tot = by.get(name, (0, 0.0))
            by[name] = (n + 1, tot + sec)
        big = {k: v for k, v in by.items() if v[1] > 0.05}
        print(
            f"(9) one {sigma} solve (L={a.L}, N={a.n_samples}, α=10, {r['iterations']} evaluations): "
            f"{time.perf_counter() - t:.1f} s wall, {len(compiled)} XLA compilations, "
            f"{sum(s for _, s in compiled):.1f} s; > 0.05 s: "
            + ", ".join(f"{k} {n}× {tot:.1f} s" for k, (n, tot) in sorted(big.items())),
            flush=True,
        )
    jax.config.update("jax_log_compiles", False)


def bench_bayes(a):
    from slrpipe.theory.replica.bayes_optimal import bayes_optimal_sweep, bo_channel

    f = draw_fields(Setting("max", math.inf, 3, 0.0), a.n_samples, 0)
    bo_channel(f, 1.0, 0.5, 0.5)  # compile
    t = time.perf_counter()
    for _ in range(10):
        bo_channel(f, 1.0, 0.5, 0.5)
    per = (time.perf_counter() - t) / 10
    t = time.perf_counter()
    ds = bayes_optimal_sweep(Setting("max", math.inf, 3, 0.0), [0.5, 1, 2, 3, 5, 10, 20], n_samples=a.n_samples)
    print(
        f"(10) Bayes-optimal max-SLR ν=∞ L=3 N={a.n_samples}: {per * 1e3:.1f} ms per channel evaluation; "
        f"sweep over 7 α: {time.perf_counter() - t:.1f} s, {int(ds['iterations'].sum())} iterations",
        flush=True,
    )


#: the task of part (11): config/length.yaml's
PROX_L_TASK = {"model": "spiked", "nu": 16.0, "delta": 0.0, "lam": 0.1}


def changed_when_doubled(sigma, fields, m_k, q_k, V_k, m_v, q_v, V_v):
    """Fraction of the samples whose global minimum is lower (by > 10⁻⁹ relative in ψ) with twice
    the start budget of the prox (full multi-start search at these order parameters)."""
    import numpy as np

    from slrpipe.theory.replica import prox as P
    from slrpipe.theory.replica.channel import centres

    wk, wv, _, _ = centres(fields, m_k, q_k, m_v, q_v)
    psi = {
        d: P.prox(sigma, wk, wv, fields.y, V_k, V_v, directions=d)["psi"]
        for d in (P.MAX_DIRECTIONS, 2 * P.MAX_DIRECTIONS)
    }
    base = psi[P.MAX_DIRECTIONS]
    return float(np.mean(psi[2 * P.MAX_DIRECTIONS] < base - 1e-9 * (1 + np.abs(base))))


def prox_L_one(L, sigma, n, alpha, max_iter, criterion, state=None):
    """Part (11), run in a fresh process: the measurements of one (L, σ) as a dict."""
    import jax

    from slrpipe.theory.replica import ReplicaTask, solve_replica
    from slrpipe.theory.replica import prox as P
    from slrpipe.theory.replica.fields import draw_fields
    from slrpipe.theory.replica.solver import STATE

    compile_s = [0.0]

    def listen(event, duration, **_):
        if event.startswith("/jax/core/compile/"):
            compile_s[0] += duration

    jax.monitoring.register_event_duration_secs_listener(listen)
    fields = draw_fields(Setting(PROX_L_TASK["model"], PROX_L_TASK["nu"], L, PROX_L_TASK["delta"]), n, 0, qmc=True)
    cands = 2 * L if sigma != "linear" else 2 * L + 4
    if state is not None:  # the criterion alone, at given order parameters
        return {
            "L": L,
            "sigma": sigma,
            "n": fields.n,
            "candidates": cands,
            "changed_when_doubled": changed_when_doubled(sigma, fields, *state),
        }
    runs = []
    for _ in range(2):  # first: compile + run; second: the same solve on the compiled programs
        t, c = time.perf_counter(), time.process_time()
        r = solve_replica(
            ReplicaTask(sigma, Setting(PROX_L_TASK["model"], PROX_L_TASK["nu"], L, PROX_L_TASK["delta"])),
            PROX_L_TASK["lam"],
            alpha,
            fields=fields,
            max_iter=max_iter,
            polish=False,
        )
        runs.append((time.perf_counter() - t, time.process_time() - c))
    # evaluations: the iterations plus the final report pass when unconverged
    evals = r["iterations"] + (0 if r["converged"] else 1)
    # compile time as CPU seconds (first solve − second: robust to the machine's load), and the
    # wall seconds of jax's compile events
    out = {
        "L": L,
        "sigma": sigma,
        "n": fields.n,
        "compile_s": runs[0][1] - runs[1][1],
        "compile_events_wall_s": compile_s[0],
        "evaluations": evals,
        "wall_per_eval": runs[1][0] / evals,
        "cpu_per_eval": runs[1][1] / evals,
        "wall_s": runs[1][0],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "converged": bool(r["converged"]),
        "test_error": r["test_error"],
        "residual": r["residual"],
        "chunk": P.default_chunk(L),
        "backend": jax.default_backend(),
        # the accelerator's own peak (None on CPU, where the process's RSS is the peak)
        "device_peak_mb": (jax.devices()[0].memory_stats() or {}).get("peak_bytes_in_use", 0) / 2**20
        if jax.default_backend() != "cpu"
        else None,
    }
    if criterion:
        out["changed_when_doubled"] = changed_when_doubled(sigma, fields, *(r[k] for k in STATE))
        out["candidates"] = cands
    return out


def bench_prox_L(a):
    from slrpipe.theory.replica.prox import MAX_DIRECTIONS as budget

    state = [float(v) for v in a.criterion_state.split(",")] if a.criterion_state else None
    rows = []
    for sigma in a.sigmas.split(","):
        for L in (int(v) for v in a.Ls.split(",")):
            cmd = (
                [
                    sys.executable,
                    __file__,
                    "--prox-L-one",
                    str(L),
                    sigma,
                    "--n-samples",
                    str(a.n_samples),
                    "--alpha",
                    str(a.alpha),
                    "--max-iter",
                    str(a.max_iter),
                ]
                + (["--criterion"] if a.criterion else [])
                + (["--criterion-state", a.criterion_state] if a.criterion_state else [])
            )
            res = subprocess.run(cmd, check=False, capture_output=True, text=True)
            if res.returncode:
                print(f"(11) {sigma} L={L}: failed\n{res.stderr[-2000:]}", flush=True)
                continue
            r = json.loads(res.stdout.strip().splitlines()[-1])
            if state is not None:
                print(
                    f"(11) {sigma} L={L} N={r['n']}: doubling the start budget ({budget} → {2 * budget} of "
                    f"{r['candidates']} candidate directions) changes the global minimum of "
                    f"{r['changed_when_doubled']:.2e} of the samples",
                    flush=True,
                )
                continue
            rows.append(r)
            crit = (
                f", global minimum changed by doubling the start budget on {r['changed_when_doubled']:.2e} of the "
                f"samples ({r['candidates']} candidate directions)"
                if "changed_when_doubled" in r
                else ""
            )
            print(
                f"(11) {sigma} L={L} N={r['n']} α={a.alpha:g}: compile {r['compile_s']:.1f} s CPU "
                f"({r['compile_events_wall_s']:.1f} s wall of compile events), {r['evaluations']} channel "
                f"evaluations at {r['wall_per_eval']:.2f} s wall / {r['cpu_per_eval']:.2f} s CPU each, peak RSS "
                f"{r['peak_rss_mb']:.0f} MB"
                + (f", device peak {r['device_peak_mb']:.0f} MB on {r['backend']}" if r["device_peak_mb"] else "")
                + f" (chunk {r['chunk']}), converged={r['converged']} "
                f"e_test={r['test_error']:.5f}{crit}",
                flush=True,
            )
    for sigma in a.sigmas.split(","):
        rs = {r["L"]: r for r in rows if r["sigma"] == sigma}
        if 3 not in rs:
            continue
        b = rs[3]
        for L, r in sorted(rs.items()):
            # CPU seconds on CPU (robust to load); wall seconds on an accelerator (the host waits)
            key = "cpu_per_eval" if r["backend"] == "cpu" else "wall_per_eval"
            growth = r[key] / b[key] if b[key] > 0 else float("nan")
            print(
                f"(11) {sigma} L={L}: compile {r['compile_s'] / b['compile_s']:.2f}× L = 3's (target ≤ 2); time per "
                f"evaluation {growth:.1f}× L = 3's, (L/3)³ = {(L / 3) ** 3:.0f} (target: not above)",
                flush=True,
            )


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--L", type=int, default=3)
    p.add_argument("--nu", type=float, default=1.0)
    p.add_argument("--lam", type=float, default=0.1)
    p.add_argument("--n-samples", type=int, default=8192)
    p.add_argument("--subset", type=int, default=200)
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--alphas", default="2,3.5,5,10")
    p.add_argument("--panel-points", type=int, default=30)
    p.add_argument(
        "--parts",
        default="channel,sweep,panel",
        help="comma-separated: channel, sweep, panel, lowlam, default, device, length, compile, programs, bayes, prox_L",
    )
    p.add_argument("--sigmas", default="softmax,linear", help="σ of the parts channel, sweep and panel")
    p.add_argument("--lowlam-sigmas", default="softmax,linear")
    p.add_argument("--default-sigmas", default="softmax,linear")
    p.add_argument("--Ls", default="3,8,16,64", help="lengths of the parts length, compile and prox_L")
    p.add_argument("--length-sigmas", default="softmax,linear")
    p.add_argument("--alpha", type=float, default=5.0, help="α of the prox_L part")
    p.add_argument("--max-iter", type=int, default=300, help="channel evaluations of a prox_L solve")
    p.add_argument("--criterion", action="store_true", help="prox_L: the start-budget criterion at the state reached")
    p.add_argument("--criterion-state", help="m_k,q_k,V_k,m_v,q_v,V_v: prox_L's criterion alone, at this state")
    p.add_argument("--prox-L-one", nargs=2, metavar=("L", "SIGMA"), help=argparse.SUPPRESS)
    p.add_argument("--quick", action="store_true", help="parts channel, sweep, panel and prox_L at tiny sizes (CI)")
    a = p.parse_args()
    if a.prox_L_one:  # a child process of the prox_L part
        state = [float(v) for v in a.criterion_state.split(",")] if a.criterion_state else None
        L, sigma = int(a.prox_L_one[0]), a.prox_L_one[1]
        print(json.dumps(prox_L_one(L, sigma, a.n_samples, a.alpha, a.max_iter, a.criterion, state)))
        return
    if a.quick:
        a.parts, a.sigmas, a.n_samples, a.subset = "channel,sweep,panel,prox_L", "softmax", 256, 4
        a.seeds, a.alphas, a.panel_points, a.Ls, a.max_iter = 2, "5,10", 3, "3,16", 1
    parts = a.parts.split(",")
    if "channel" in parts:
        bench_channel(a)
    if "sweep" in parts:
        bench_sweep(a)
    if "panel" in parts:
        bench_panel(a)
    for part, fn in (
        ("lowlam", bench_lowlam),
        ("default", bench_default),
        ("device", bench_device),
        ("length", bench_length),
        ("compile", bench_compile),
        ("programs", bench_programs),
        ("bayes", bench_bayes),
        ("prox_L", bench_prox_L),
    ):
        if part in parts:
            fn(a)


if __name__ == "__main__":
    main()
