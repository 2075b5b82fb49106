"""Per-rule time of a finished workflow run, from Snakemake's own benchmark files.

Every rule writes ``results/benchmarks/<rule>/...tsv`` (Snakemake's ``benchmark:`` directive: wall
seconds ``s`` and ``cpu_time`` of the job's processes). This prints, per rule, the number of jobs,
their total and mean wall time and total CPU time, and with ``--log`` the run's elapsed time from
the Snakemake log — the table of the speed issue (a fresh ``snakemake --cores all``).

    python benchmarks/bench_workflow.py [results/benchmarks] [--log .snakemake/log/<run>.log]
"""

from __future__ import annotations

import argparse
import csv
import re
from collections import defaultdict
from pathlib import Path

# the folder under results/benchmarks/ that each rule writes to
RULES = {
    "data": "generate_data",
    "erm": "train_erm",
    "population": "population",
    "replica": "replica",
    "figures": "fig_*",
    "aggregate.tsv": "aggregate",
    "validate.tsv": "validate",
}


def _rows(path: Path):
    with path.open() as f:
        yield from csv.DictReader(f, delimiter="\t")


def summarise(root: Path) -> dict[str, dict[str, float]]:
    """{rule: {jobs, wall_s, cpu_s, max_s}} over every .tsv under ``root``."""
    out: dict[str, dict[str, float]] = defaultdict(lambda: dict(jobs=0, wall_s=0.0, cpu_s=0.0, max_s=0.0))
    for tsv in sorted(root.rglob("*.tsv")):
        top = tsv.relative_to(root).parts[0]
        rule = RULES.get(top, top)
        for row in _rows(tsv):
            s = out[rule]
            s["jobs"] += 1
            s["wall_s"] += float(row["s"])
            s["cpu_s"] += float(row.get("cpu_time") or "nan")
            s["max_s"] = max(s["max_s"], float(row["s"]))
    return dict(out)


def elapsed(log: Path) -> str:
    m = re.findall(r"Elapsed time: ([\d:.]+)", log.read_text())
    return m[-1] if m else "?"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root", nargs="?", default="results/benchmarks", type=Path)
    p.add_argument("--log", type=Path, default=None, help="Snakemake log of the run (its elapsed time)")
    args = p.parse_args()
    table = summarise(args.root)
    print(f"{'rule':<16}{'jobs':>6}{'wall s':>10}{'mean s':>9}{'max s':>8}{'cpu s':>10}")
    for rule, s in sorted(table.items(), key=lambda kv: -kv[1]["wall_s"]):
        print(
            f"{rule:<16}{s['jobs']:>6}{s['wall_s']:>10.1f}{s['wall_s'] / s['jobs']:>9.2f}"
            f"{s['max_s']:>8.1f}{s['cpu_s']:>10.1f}"
        )
    total = sum(s["wall_s"] for s in table.values())
    print(f"{'all jobs':<16}{sum(s['jobs'] for s in table.values()):>6}{total:>10.1f}")
    if args.log:
        print(f"elapsed (Snakemake log): {elapsed(args.log)}")


if __name__ == "__main__":
    main()
