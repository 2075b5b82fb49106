"""The issue-#14 table of a validation run as markdown, as docs/theory.md §10 quotes it: per point
the theory, ERM from the informed start and the ground state at each D of the ladder, the D → ∞
limit of each (law; z against the theory), RS stability (replicon, prox ties among the theory's
samples) and the verdict (slrpipe.store.verdict); then the count of each verdict.

Usage: python benchmarks/validation_table.py [results/validation.json]
"""

from __future__ import annotations

import collections
import json
import math
import sys

LAWS = {"1/D": "1/D", "1/sqrt(D)": "1/√D"}


def _num(x, digits=3):
    return "—" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def _theory(r):
    se = r["theory_mc_se"]
    return _num(r["theory"], 4) + (f" ± {_num(se, 4)}" if se is not None and math.isfinite(se) else "")


def _limit(r, who):
    lim = r.get(f"{who}_limit")
    if lim is None or not math.isfinite(lim):
        return "—"
    z = r["z_limit" if who == "erm" else "z_ground_limit"]
    return f"{_num(lim)} ± {_num(r[f'{who}_limit_se'])} ({LAWS.get(r[f'{who}_law'], r[f'{who}_law'])}; {z:+.1f})"


def _rs(r):
    st, ties = r.get("rs_stable"), r.get("prox_ties")
    if st is None or not math.isfinite(st):
        return "—"
    tie = f", {int(ties)}" if ties is not None and math.isfinite(ties) else ""
    return f"{'stable' if st else 'unstable'} ({r['replicon']:.2f}{tie})"


def main(path="results/validation.json"):
    rows = json.load(open(path))
    Ds = " / ".join(map(str, rows[0].get("ladder_D") or [rows[0]["D"]]))
    print(f"| setting | σ | λ | α | theory | informed D = {Ds} | ground D = {Ds} | informed D → ∞ (law; z) "
          "| ground D → ∞ (law; z) | RS (replicon, ties) | verdict |")
    print("|" + "---|" * 11)
    for r in rows:
        per_D = {w: " / ".join(map(_num, r.get(f"ladder_{w}") or [r[f"{w}_mean"]])) for w in ("erm", "ground")}
        print(f"| {r['experiment']} | {r['sigma']} | {r['lam']:g} | {r['alpha']:g} | {_theory(r)} | {per_D['erm']} | "
              f"{per_D['ground']} | {_limit(r, 'erm')} | {_limit(r, 'ground')} | {_rs(r)} | {r['verdict']} |")
    counts = collections.Counter(r["verdict"] for r in rows)
    print()
    print(f"{len(rows)} points: " + ", ".join(f"{v}: {n}" for v, n in counts.most_common()))


if __name__ == "__main__":
    main(*sys.argv[1:])
