"""ERM started at a 1RSB state's overlaps (docs/theory.md §13, "Where ERM's minima lie"): does
L-BFGS find minima at the key norm the theory predicts? From a result file of the ``rsb1`` rule,
take the point (data law, σ, λ, α) and its reported state's overlaps (m_k, q₁_k, m_v, q₁_v;
slrpipe.theory.replica.rsb1.scan); for each data seed at dimension ``--D`` minimise the ERM objective
(float64, |∇J|/n < 10⁻⁹) from three starts — the informed one (k = c_ν k*, v = v*; the training
jobs' start, slrpipe.train.experiment.init_model), its minimum
with k rescaled to |k|²/D = q₁_k, and a start drawn at the state's overlaps (k = m_k k* + a random
direction orthogonal to k* of norm² (q₁_k − m_k²)·D, v likewise) — and print each minimum's
objective α·J and overlaps.

Usage: python scripts/erm_at_overlaps.py results/replica/…/rsb1/lam0.01_alpha20_n8192x32_seed0_1.nc
           [--D 256] [--seeds 0,1,2]
"""

from __future__ import annotations

import argparse

import jax
import numpy as np
import xarray as xr

from slrpipe.data import SLRDataset, SLRTask
from slrpipe.setting import Setting
from slrpipe.train.erm import minimize
from slrpipe.train.metrics import overlaps
from slrpipe.train.options import C_INF, SolverOptions
from slrpipe.vocabulary import c_nu, seeds


def at_overlaps(m: float, q: float, star: np.ndarray, rng) -> np.ndarray:
    """A vector w with w·star/D = m and |w|²/D = q (star: |star|²/D = 1), its part orthogonal to
    star in a random direction."""
    D = star.size
    u = rng.standard_normal(D)
    u -= (u @ star) / (star @ star) * star
    u *= np.sqrt(D) / np.linalg.norm(u)
    return m * star + np.sqrt(max(q - m * m, 0.0)) * u


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result", help="a result file of the rsb1 rule")
    ap.add_argument("--D", type=int, default=256)
    ap.add_argument("--seeds", default="0,1,2", help="experiment seeds (the workflow's teacher and data seeds)")
    a = ap.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    d = xr.open_dataset(a.result)  # its point variables are the state the rule reports
    c = {k: d[k].values.item() for k in ("sigma", "model", "nu", "L", "delta", "lam", "alpha")}
    state = {k: float(d[k]) for k in ("m_k", "q1_k", "m_v", "q1_v")}
    print(
        f"{c['sigma']} {c['model']} ν={c['nu']:g} L={c['L']} λ={c['lam']:g} α={c['alpha']:g}, D={a.D}; 1RSB state at "
        f"s={float(d['s_reported']):.3g}: " + " ".join(f"{k}={v:.3f}" for k, v in state.items())
    )
    task = SLRTask(Setting(str(c["model"]), float(c["nu"]), {int(c["L"]): 1.0}, float(c["delta"])), a.D)
    alpha, lam = float(c["alpha"]), float(c["lam"])
    options = SolverOptions(tol=1e-9, max_iter=20000)
    for seed in (int(s) for s in a.seeds.split(",")):
        sd = seeds(seed)  # the workflow's data of experiment seed ``seed``
        data = SLRDataset(task, int(round(alpha * a.D)), sd["teacher_seed"], sd["data_seed"])
        chunk, (ks, vs) = data.load(), data.teacher
        X, mask, y = chunk.X.astype(np.float64), chunk.mask, chunk.y

        def run(k, v, tag):
            r = minimize({"k": k, "v": v}, X, mask, y, str(c["sigma"]), lam, options)
            o = overlaps(ks, vs, r.params["k"], r.params["v"])
            print(
                f"seed {seed} {tag:>16}: α·J={alpha * r.loss:.4f} m_k={o['m_k']:.2f} q_k={o['q_k']:.1f} "
                f"m_v={o['m_v']:.3f} q_v={o['q_v']:.3f} ({r.iterations} iterations, {r.reason})",
                flush=True,
            )
            return r, o

        c_informed = c_nu(task.model, task.nu)
        informed, o = run((C_INF if np.isinf(c_informed) else c_informed) * ks, vs.copy(), "informed")
        run(informed.params["k"] * np.sqrt(state["q1_k"] / o["q_k"]), informed.params["v"], "informed, rescaled")
        rng = np.random.default_rng([seed, 1])
        run(
            at_overlaps(state["m_k"], state["q1_k"], ks, rng),
            at_overlaps(state["m_v"], state["q1_v"], vs, rng),
            "1RSB overlaps",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
