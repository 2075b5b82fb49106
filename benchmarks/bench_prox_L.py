"""Cost of one replica fixed-point solve against the sequence length L (docs/theory.md §5, §9).

Usage: python benchmarks/bench_prox_L.py [--Ls 3,8,16,32,64] [--sigmas softmax,linear]
           [--n-samples 4096] [--alpha 5] [--max-iter 300] [--quick] [--criterion]
For each (L, σ), in a fresh process (compile time and peak memory are then its own): one
``solve_replica`` (default options, the CLI's) at the task of config/length.yaml — spiked-SLR
ν = 16, Δ = 0, λ = 0.1 — at α = --alpha with N = --n-samples common random numbers, stopped after
--max-iter channel evaluations; the solve runs twice. Prints per run: compile time (CPU seconds of
the first solve minus the second: every program the solve compiled; and the wall seconds of jax's
compile events), channel evaluations, time per evaluation (wall and CPU, of the second solve),
peak resident memory of the process (and the accelerator's peak where there is one), converged,
e_test; then the ratios to L = 3 against the
targets (compile time within 2× of L = 3's; time per evaluation growing no faster than L³).
``--criterion``: per (L, σ), at the state reached by the solve, the fraction of samples whose
global minimum (ψ lower by more than 10⁻⁹ relative) changes when the start budget of the prox
(``prox.MAX_DIRECTIONS``) is doubled — the criterion that fixes the budget;
``--criterion-state m_k,q_k,V_k,m_v,q_v,V_v``: that fraction alone, at the given state.
``--quick`` (CI): L ∈ {3, 16}, softmax, N = 256, 2 evaluations (first and report pass);
about 30 s of CPU per L, nearly all compilation.
Times are this machine's (wall-clock depends on its load; CPU time and the ratios less so).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from slrpipe.threads import thread_env

os.environ.setdefault("XLA_FLAGS", thread_env(1)["XLA_FLAGS"])

TASK = {"model": "spiked", "nu": 16.0, "delta": 0.0, "lam": 0.1}
P_BUDGET = 10  # prox.MAX_DIRECTIONS (not imported here: the parent process stays free of JAX)


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


def one(L, sigma, n, alpha, max_iter, criterion, state=None):
    """Run in a fresh process: the measurements of one (L, σ) as a dict."""
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
    fields = draw_fields(TASK["model"], TASK["nu"], L, TASK["delta"], n, 0, qmc=True)
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
            ReplicaTask(sigma, TASK["model"], TASK["nu"], L, TASK["delta"]),
            TASK["lam"],
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


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--Ls", default="3,8,16,32,64")
    p.add_argument("--sigmas", default="softmax,linear")
    p.add_argument("--n-samples", type=int, default=4096)
    p.add_argument("--alpha", type=float, default=5.0)
    p.add_argument("--max-iter", type=int, default=300)
    p.add_argument("--criterion", action="store_true")
    p.add_argument("--criterion-state", help="m_k,q_k,V_k,m_v,q_v,V_v: only the criterion, at these order parameters")
    p.add_argument("--quick", action="store_true", help="L ∈ {3, 16}, softmax, N = 256, 2 evaluations (CI)")
    p.add_argument("--one", nargs=2, metavar=("L", "SIGMA"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.quick:
        a.Ls, a.sigmas, a.n_samples, a.max_iter = "3,16", "softmax", 256, 1
    state = [float(v) for v in a.criterion_state.split(",")] if a.criterion_state else None
    if a.one:
        print(json.dumps(one(int(a.one[0]), a.one[1], a.n_samples, a.alpha, a.max_iter, a.criterion, state)))
        return
    rows = []
    for sigma in a.sigmas.split(","):
        for L in (int(v) for v in a.Ls.split(",")):
            cmd = (
                [
                    sys.executable,
                    __file__,
                    "--one",
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
                print(f"{sigma} L={L}: failed\n{res.stderr[-2000:]}", flush=True)
                continue
            r = json.loads(res.stdout.strip().splitlines()[-1])
            if state is not None:
                print(
                    f"{sigma} L={L} N={r['n']}: doubling the start budget ({P_BUDGET} → {2 * P_BUDGET} of "
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
                f"{sigma} L={L} N={r['n']} α={a.alpha:g}: compile {r['compile_s']:.1f} s CPU "
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
                f"{sigma} L={L}: compile {r['compile_s'] / b['compile_s']:.2f}× L = 3's (target ≤ 2); time per "
                f"evaluation {growth:.1f}× L = 3's, (L/3)³ = {(L / 3) ** 3:.0f} (target: not above)",
                flush=True,
            )


if __name__ == "__main__":
    main()
