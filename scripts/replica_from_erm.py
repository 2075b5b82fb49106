"""Is there an RS fixed point near the ERM solution? Solve the replica equations started from the
overlaps ERM learned (docs/validation.md §1 (iv)), for points where the sweep from its default init
found none.

Usage: python scripts/replica_from_erm.py --store results/slr.zarr --experiment spiked_L3_nu1 \
           --sigma softmax --lam 0.01 --alphas 5,10,20 [--n-samples 8192]
(the store of a `config/validation.yaml` run). Start: (m_k, q_k, m_v, q_v) = seed means of ERM,
V_k = V_v = 1 (ERM does not measure V). Stages, each from the previous one's best point, until one
converges: Anderson (80 evaluations), damped (200), Anderson (100). Prints per α the theory
(e_test, RS objective min 𝓛/D, q_k, converged, residual, evaluations) next to ERM (risk at the
learned weights and α·J, mean ± s.e. over seeds, q_k). Times are wall-clock on this machine.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time

from slrpipe.threads import thread_env

os.environ.setdefault("XLA_FLAGS", thread_env(1)["XLA_FLAGS"])


from slrpipe.analysis.aggregate import experiment_node, open_store
from slrpipe.analysis.seeds import point_mean_se
from slrpipe.setting import Setting
from slrpipe.theory.replica import Draw, ReplicaTask, solve_replica
from slrpipe.theory.replica.solver import STATE

STAGES = (("anderson", 80), ("damped", 200), ("anderson", 100))


def from_erm(sigma, model, nu, L, delta, lam, alpha, init, n_samples):
    """Staged solve from ``init``; returns the last result and the total channel evaluations."""
    total = 0
    for method, max_iter in STAGES:
        r = solve_replica(
            ReplicaTask(sigma, Setting(model, nu, L, delta)),
            lam,
            alpha,
            fields=Draw(n_samples=n_samples),
            init=init,
            method=method,
            max_iter=max_iter,
            patience=max_iter,
        )
        total += r["iterations"]
        if r["converged"]:
            break
        init = {k: r[k] for k in STATE}
    return r, total


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--store", required=True)
    p.add_argument("--experiment", required=True, help="an erm experiment of the store")
    p.add_argument("--sigma", default="softmax")
    p.add_argument("--lam", type=float, default=0.01)
    p.add_argument("--alphas", default="5,10,20")
    p.add_argument("--n-samples", type=int, default=8192)
    a = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    erm = experiment_node(open_store(a.store), "erm", a.experiment)
    exp = {k: json.loads(v) for k, v in erm.attrs.items() if k in ("model", "nu", "L", "delta")}
    nu = float(exp["nu"])
    print(f"{a.experiment}: {exp}, σ = {a.sigma}, λ = {a.lam}, N = {a.n_samples}")
    print(
        "α | theory e_test | theory objective | theory q_k | converged (residual, evaluations, s) | "
        "ERM e (risk at learned k, v) | ERM α·J | ERM q_k"
    )
    for alpha in map(float, a.alphas.split(",")):
        pt = erm.sel(sigma=a.sigma, lam=a.lam, alpha=alpha)
        ms = {k: point_mean_se(pt[k])[:2] for k in ("m_k", "q_k", "m_v", "q_v", "test_error_pop", "train_loss")}
        init = dict(m_k=ms["m_k"][0], q_k=ms["q_k"][0], V_k=1.0, m_v=ms["m_v"][0], q_v=ms["q_v"][0], V_v=1.0)
        t = time.time()
        r, n_eval = from_erm(
            a.sigma, exp["model"], nu, int(exp["L"]), float(exp["delta"]), a.lam, alpha, init, a.n_samples
        )
        print(
            f"{alpha:g} | {r['test_error']:.4f} | {r['objective']:.4f} | {r['q_k']:.2f} | {r['converged']} "
            f"({r['residual']:.1e}, {n_eval}, {time.time() - t:.0f}) | "
            f"{ms['test_error_pop'][0]:.4f} ± {ms['test_error_pop'][1]:.4f} | "
            f"{alpha * ms['train_loss'][0]:.4f} ± {alpha * ms['train_loss'][1]:.4f} | {ms['q_k'][0]:.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
