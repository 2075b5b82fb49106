"""Are ERM's end points minima? (docs/theory.md §13, "ERM's end points at α = 2"). From the per-run
result files of one point of the workflow (``results/erm/<law>/…/<σ>/lam<λ>/alpha<α>/``, every
start and seed), continue each run from its stored weights by L-BFGS in float64 until
|∇J|₂ < ``--tol`` (J = 𝓛/n, slrpipe.train.erm.objective), on the same training set regenerated
from the run's seeds. Per run: the objective α·J and the test error (float64 predictions on the
run's own test set) before and after. Per seed: the ground state over starts (lowest α·J) before
and after, and d₂, the distance between the two lowest minima
(slrpipe.analysis.distance). Per D: the mean ± s.e. over seeds of the ground state's α·J and test
error and of d₂, before and after, then each extrapolated to D → ∞ by the store's rule
(slrpipe.analysis.extrapolate).

Usage: python scripts/erm_polish_check.py results/erm/spiked/L3/nu1/delta0/linear/lam0.01/alpha2
           [--D 128,256,512] [--tol 1e-10] [--max-iter 30000]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import time

import jax
import numpy as np
import xarray as xr

from slrpipe.analysis.distance import weight_distance
from slrpipe.analysis.extrapolate import extrapolate, ladder_means
from slrpipe.data import SLRDataset, SLRTask
from slrpipe.models.attention import attention_apply
from slrpipe.setting import Setting
from slrpipe.train.erm import minimize, objective
from slrpipe.train.options import SolverOptions
from slrpipe.vocabulary import DATA_SEED_OFFSET


def _data(d: xr.Dataset, n: int, seed_key: str):
    """The training (``teacher_seed`` + ``data_seed``) or test set of a run, as its job drew it."""
    c = lambda k: d[k].values.item()
    L_law = {int(k): float(v) for k, v in json.loads(d.attrs["L_law"]).items()}
    task = SLRTask(Setting(str(c("model")), float(c("nu")), L_law, float(c("delta"))), int(d.k.size))
    chunk = int(d.attrs["chunk_size"]) if seed_key == "data_seed" else None
    return SLRDataset(task, n, int(c("teacher_seed")), int(c(seed_key)), chunk, str(d.attrs["sampler"])).load()


def polish_run(path: str, tol: float, max_iter: int) -> dict:
    """One run: α·J and test error of its stored weights and of the float64 minimum reached from them."""
    d = xr.open_dataset(path)
    sigma, lam, alpha = str(d["sigma"].values.item()), float(d["lam"]), float(d["alpha"])
    D = int(d.k.size)
    train = _data(d, int(round(alpha * D)), "data_seed")
    test = _data(d, int(d["n_test"]), "test_seed")
    X, mask, y = train.X.astype(np.float64), train.mask, train.y
    stored = {"k": d.k.values.astype(np.float64), "v": d.v.values.astype(np.float64)}
    Xt = jax.numpy.asarray(test.X, jax.numpy.float64)

    def test_error(p):
        f = attention_apply({k: jax.numpy.asarray(v) for k, v in p.items()}, Xt, test.mask, sigma)
        return float(np.mean((test.y - np.asarray(f)) ** 2))

    t = time.process_time()
    J0 = float(objective({k: jax.numpy.asarray(v) for k, v in stored.items()}, X, mask, y, sigma, lam))
    r = minimize(stored, X, mask, y, sigma, lam, SolverOptions(max_iter=max_iter, tol=tol))
    return {
        "D": D,
        "seed": int(d["data_seed"]) - DATA_SEED_OFFSET,
        "start": f"{d['init'].values.item()}-r{int(d['restart'])}",
        "obj0": alpha * J0,
        "obj": alpha * r.loss,
        "obj_stored": alpha * float(d["train_loss"]),
        "test0": test_error(stored),
        "test": test_error(r.params),
        "test_stored": float(d["test_error"]),
        "iterations_stored": int(d["iterations"]),
        "iterations": int(r.iterations),
        "reason": r.reason,
        "cpu": time.process_time() - t,
        "w0": (stored["k"], stored["v"]),
        "w": (np.asarray(r.params["k"]), np.asarray(r.params["v"])),
        "sigma": sigma,
    }


def _extrapolated(D, values) -> str:
    Du, mean, se = ladder_means(D, values)
    if Du.size < 2:
        return "n/a (one D)"
    e = extrapolate(Du, mean, se)
    return f"{e.limit:.4f} ± {e.limit_se:.4f} ({e.law})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("point", help="the directory of one point's ERM result files (…/lam<λ>/alpha<α>)")
    ap.add_argument("--D", default="128,256,512", help="dimensions of the ladder to polish")
    ap.add_argument("--tol", type=float, default=1e-10, help="|∇J|₂ at which the float64 continuation stops")
    ap.add_argument("--max-iter", type=int, default=30000)
    ap.add_argument("--optimizer", default="lbfgs", help="whose runs are read (file suffix)")
    a = ap.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    rows = []
    for D in (int(x) for x in a.D.split(",")):
        for path in sorted(glob.glob(os.path.join(a.point, f"D{D}_n*_{a.optimizer}.nc"))):
            row = polish_run(path, a.tol, a.max_iter)
            rows.append(row)
            print(
                f"D={D} seed={row['seed']} {row['start']:>12}: α·J {row['obj0']:.5f} → {row['obj']:.5f} "
                f"({100 * (row['obj'] / row['obj0'] - 1):+.2f} %), test {row['test0']:.4f} → {row['test']:.4f} "
                f"(file {row['test_stored']:.4f}); iterations {row['iterations_stored']} + {row['iterations']} "
                f"({row['reason']}), {row['cpu']:.0f} s",
                flush=True,
            )
    if not rows:
        raise SystemExit(f"point: no {a.optimizer} result files for D in {a.D} under {a.point}")
    print(f"\n{a.point}: per seed, before → after the float64 continuation, mean ± s.e. over seeds:")
    print("  the ground state over starts (lowest α·J): its α·J and test error;")
    print("  d₂, the distance between the two lowest minima (slrpipe.analysis.distance); runs whose α·J fell > 0.1 %")
    ground = {"D": [], "obj0": [], "obj": [], "test0": [], "test": [], "d20": [], "d2": []}
    for D in sorted({r["D"] for r in rows}):
        moved, worst = 0, 0.0
        per = {k: [] for k in ground}
        for seed in sorted({r["seed"] for r in rows if r["D"] == D}):
            runs = [r for r in rows if r["D"] == D and r["seed"] == seed]
            (g0, s0), (g1, s1) = (sorted(runs, key=lambda r, k=k: r[k])[:2] for k in ("obj0", "obj"))
            drops = [1 - r["obj"] / r["obj0"] for r in runs]
            moved += sum(x > 1e-3 for x in drops)
            worst = max(worst, *drops)
            values = {"D": D, "obj0": g0["obj0"], "obj": g1["obj"], "test0": g0["test0"], "test": g1["test"]}
            values["d20"] = weight_distance(g0["sigma"], g0["w0"], s0["w0"])
            values["d2"] = weight_distance(g1["sigma"], g1["w"], s1["w"])
            for k, v in values.items():
                per[k].append(v)
        for k in ground:
            ground[k] += per[k]
        n = len(per["D"])
        ms = lambda k: f"{np.mean(per[k]):.4f} ± {np.std(per[k], ddof=1) / np.sqrt(n):.4f}"
        print(
            f"D = {D} ({n} seeds): α·J {ms('obj0')} → {ms('obj')}; test error {ms('test0')} → {ms('test')}; "
            f"d₂ {ms('d20')} → {ms('d2')}; runs moved "
            f"{moved}/{sum(r['D'] == D for r in rows)} (at most {100 * worst:.1f} %)"
        )
    for key, name in (("obj", "ground α·J"), ("test", "ground test error"), ("d2", "d₂")):
        print(
            f"D → ∞, {name}: {_extrapolated(ground['D'], ground[key + '0'])} → {_extrapolated(ground['D'], ground[key])}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
