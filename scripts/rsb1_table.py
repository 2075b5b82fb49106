"""RS against zero-temperature 1RSB (docs/theory.md §13) against ERM at the disputed points (softmax, or linear with --sigma).

Usage: python scripts/rsb1_table.py --alpha 20 [--lam 0.01] [--model spiked] [--nu 1] [--L 3]
           [--n-outer 1024] [--n-inner 16] [--shared-inner] [--s-grid 0.5,2,8] [--tol 2e-4] [--max-iter 80]
           [--init 4,64,1,0.5,1,1] [--json out.json]
Per point, on one draw of the outer samples (QMC seed 0, N₀ = n_outer; the RS sample):
  1. RS, soft-min channel (the solver's default; Anderson, then damped if needed) from ``--init``
     (m_k, q_k, V_k, m_v, q_v, V_v; default the sweep's cold start of key scale 8);
  2. RS, hard channel (``softmin=None``, the channel 1RSB uses) from the soft solution;
  3. 1RSB over s by the zero-temperature rule (``rsb1.rsb1_ground_state``), from the RS state with
     δq = 0.05(q − m²), warm-started along s; s* = argmax Φ where bracketed, else a lower bound. The inner sample: N₁ = n_inner per outer sample,
     independent across outer samples (``--shared-inner``: one set for all), jackknifed estimators.
Prints the table: objective (min 𝓛/D; 1RSB: Φ and e = the energy of a typical state) and test
error with their outer Monte Carlo s.e., δq, Σ ± s.e., the jackknife N₁-bias of δq̂ and Φ_out, the
median inner ESS, and the fraction of the RS–ERM objective gap closed, (e_1RSB − e_RS)/(e_ERM − e_RS).
ERM reference numbers (L-BFGS, informed start, mean ± s.e. over seeds; docs/theory.md §10): ``ERM`` below.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import time

from slrpipe.io import write_text
from slrpipe.threads import thread_env

os.environ.setdefault("XLA_FLAGS", thread_env(1)["XLA_FLAGS"])

from slrpipe.theory.replica import rsb1
from slrpipe.theory.replica.fields import draw_fields
from slrpipe.theory.replica.options import ReplicaTask
from slrpipe.theory.replica.rsb1 import ground
from slrpipe.theory.replica.solver import STATE

log = logging.getLogger("rsb1_table")

#: (ν, α, λ) → (objective mean, s.e., test error mean, s.e.) of softmax ERM, docs/theory.md §10 (iv)
ERM = {
    (1.0, 20.0, 0.01): (3.753, 0.049, 0.718, 0.005),
    (1.0, 10.0, 0.01): (1.377, 0.025, 0.808, 0.005),
    (1.0, 5.0, 0.01): (0.411, 0.014, 0.992, 0.026),
    (1.0, 2.0, 0.01): (0.0310, 0.0007, 1.623, 0.018),
    # λ = 0.1, α = 1 (D = 500, 4 seeds, informed start; §10 (iii): objective s.e. not quoted there)
    (1.0, 1.0, 0.1): (0.0828, math.nan, 0.990, 0.009),
}


def rs_solutions(point, fields, init):
    """(soft RS, hard RS) on ``fields`` at ``point`` = (task, λ, α) (``rsb1.rs_on_samples``)."""
    return rsb1.rs_on_samples(*point, fields, init)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--alpha", type=float, required=True)
    ap.add_argument("--lam", type=float, default=0.01)
    ap.add_argument("--sigma", default="softmax", choices=("softmax", "linear"))
    ap.add_argument("--model", default="spiked", choices=("spiked", "max"))
    ap.add_argument("--nu", type=float, default=1.0)
    ap.add_argument("--L", type=int, default=3)
    ap.add_argument("--n-outer", type=int, default=1024)
    ap.add_argument("--n-inner", type=int, default=16)
    ap.add_argument("--shared-inner", action="store_true", help="one inner set for all outer samples")
    ap.add_argument("--s-grid", default="0.5,2,8")
    ap.add_argument("--tol", type=float, default=rsb1.Rsb1Options.tol, help="1RSB residual tolerance")
    ap.add_argument("--max-iter", type=int, default=rsb1.Rsb1Options.max_iter, help="1RSB channel evaluations per s")
    ap.add_argument("--init", default="4,64,1,0.5,1,1")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    point = (ReplicaTask(a.sigma, a.model, a.nu, a.L, 0.0), a.lam, a.alpha)
    t0 = time.perf_counter()
    fields = draw_fields(a.model, a.nu, a.L, 0.0, a.n_outer, 0, qmc=True)
    soft, hard = rs_solutions(point, fields, dict(zip(STATE, map(float, a.init.split(",")))))
    rs = hard if hard["converged"] else soft
    for name, r in (("soft", soft), ("hard", hard)):
        log.info(
            "RS %s: objective %.5f ± %.5f, test error %.4f, residual %.1e, converged %s, state %s",
            name,
            r["objective"],
            a.alpha * r["train_loss_se"],
            r["test_error"],
            r["residual"],
            r["converged"],
            {k: round(r[k], 5) for k in STATE},
        )
    res = rsb1.rsb1_ground_state(
        *point,
        draw=rsb1.Rsb1Draw(n_outer=a.n_outer, n_inner=a.n_inner, independent=not a.shared_inner),
        s_grid=[float(v) for v in a.s_grid.split(",")],
        rs=rs,
        options=rsb1.Rsb1Options(tol=a.tol, max_iter=a.max_iter),
    )
    erm = ERM.get((a.nu, a.alpha, a.lam)) if a.model == "spiked" and a.sigma == "softmax" else None
    print(
        f"\n{a.sigma} {a.model} ν={a.nu:g} L={a.L} λ={a.lam:g} α={a.alpha:g}; N₀={res.n_outer} N₁={res.n_inner};"
        f" {time.perf_counter() - t0:.0f} s wall"
    )
    print("| theory | objective | test error | δq (k, v) | Σ | N₁-bias δq̂ (k, v) / Φ_out | ESS | residual |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in (("RS soft-min", soft), ("RS hard", hard)):
        print(
            f"| {name} | {r['objective']:.4f} ± {a.alpha * r['train_loss_se']:.4f} | {r['test_error']:.4f} | 0 | 0 |"
            f" | | {r['residual']:.1e}{'' if r['converged'] else ' (not converged)'} |"
        )
    rows = res.rows
    star = ground.summary(res.scan.star) if res.scan.star is not None else None
    for r, raw in zip(rows, res.scan.rows):
        lab = f"1RSB s={r['s']:.3g}" + (" (refining s*)" if raw.get("refined") else "")
        print(
            f"| {lab} | Φ {r['phi']:.4f}, e {r['energy_direct']:.4f} ± {r['energy_direct_se']:.4f} |"
            f" {r['test_error']:.4f} | {r['dq_k']:.3g}, {r['dq_v']:.3g} | {r['sigma']:.4f} ± {r['sigma_se']:.4f} |"
            f" {r['dqhat_k_n1_bias']:.2g} ± {r['dqhat_k_se']:.2g}, {r['dqhat_v_n1_bias']:.2g} ± {r['dqhat_v_se']:.2g}"
            f" / {r['phi_out_n1_bias']:.2g} | {r['ess_median']:.1f} |"
            f" {r['residual']:.1e}{'' if r['converged'] else ' (not converged)'} |"
        )
    if erm:
        print(f"| ERM (docs §10) | {erm[0]:.3f} ± {erm[1]:.3f} | {erm[2]:.3f} ± {erm[3]:.3f} | | | | | |")
        e_rs = rs["objective"]
        rep = res.scan.reported
        best = rep["phi"] if rep is not None else math.nan
        word = (
            "e_gs = Φ(s*)" if res.scan.bracketed else "max Φ on the scan (no maximum bracketed: a lower bound of e_gs)"
        )
        print(
            f"gap closed ({word}): ({best:.4f} − {e_rs:.4f}) / ({erm[0]:.3f} − {e_rs:.4f}) = "
            f"{(best - e_rs) / (erm[0] - e_rs):.3f}"
        )
    if a.json:  # atomically: a killed run leaves no truncated table
        record = dict(
            args=vars(a),
            soft={k: soft[k] for k in ("objective", "test_error", "residual", "converged")},
            rs=res.rs,
            scan=rows,
            star=star,
            bracketed=res.scan.bracketed,
            lower_bound=res.scan.lower_bound,
            s_star=res.scan.s_star,
            n_outer=res.n_outer,
            n_inner=res.n_inner,
        )
        # default=str for the numpy scalars; floats (NaN included) never reach it: json writes NaN
        write_text(json.dumps(record, default=str, indent=1), a.json)


if __name__ == "__main__":
    main()
