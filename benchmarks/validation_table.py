"""The issue-#14 table of a validation run as markdown: per point the theory, ERM from the informed
start and the ground state at each D of the ladder, the D → ∞ limit of each with z against the
theory, RS stability (replicon, prox ties among the theory's samples) and the verdict
(slrpipe.store.verdict); then the count of each verdict.

Usage: python benchmarks/validation_table.py [results/validation.json]
"""

from __future__ import annotations

import collections
import json
import math
import sys


def _pm(x, se, digits=3):
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x:.{digits}f} ± {se:.{digits}f}" if se is not None and math.isfinite(se) else f"{x:.{digits}f}"


def _per_D(r, who):
    Ds = r.get("ladder_D" if who == "erm" else "ladder_ground_D") or []
    return " / ".join(f"{m:.3f}" for m in r.get(f"ladder_{who}") or []) + (f" (D={','.join(map(str, Ds))})" if Ds else "")


def _limit(r, who):
    lim = r.get(f"{who}_limit")
    if lim is None or not math.isfinite(lim):
        return "—"
    z = r.get("z_limit" if who == "erm" else "z_ground_limit")
    return f"{_pm(lim, r[f'{who}_limit_se'])} ({r[f'{who}_law']}; z {z:.1f})"


def _rs(r):
    st = r.get("rs_stable")
    if st is None or not math.isfinite(st):
        return "—"
    ties = r.get("prox_ties")
    tie = f", {int(ties)} ties" if ties is not None and math.isfinite(ties) else ""
    return f"{'stable' if st else 'unstable'} ({r['replicon']:.2f}{tie})"


def main(path="results/validation.json"):
    rows = json.load(open(path))
    print("| setting | σ | λ | α | theory | informed per D | ground per D | informed D → ∞ | ground D → ∞ | RS | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['experiment']} | {r['sigma']} | {r['lam']:g} | {r['alpha']:.3g} | "
              f"{_pm(r['theory'], r['theory_mc_se'], 4)} | {_per_D(r, 'erm')} | {_per_D(r, 'ground')} | "
              f"{_limit(r, 'erm')} | {_limit(r, 'ground')} | {_rs(r)} | {r['verdict']} |")
    counts = collections.Counter(r["verdict"] for r in rows)
    print()
    print(f"{len(rows)} points: " + ", ".join(f"{v}: {n}" for v, n in counts.most_common()))


if __name__ == "__main__":
    main(*sys.argv[1:])
