"""Mode ``times`` of benchmarks/bench_workflow.py: per-rule time of a finished workflow run, from
Snakemake's own benchmark files.

Every rule writes ``results/benchmarks/<rule>/...tsv`` (Snakemake's ``benchmark:`` directive: wall
seconds ``s`` and ``cpu_time`` of the job's processes). This prints, per rule, the number of jobs,
their total and mean wall time and total CPU time, and with ``--log`` the run's elapsed time from
the Snakemake log — the table of a fresh ``snakemake --cores all``.

``--quick`` (CI): the same summary of a small synthetic tree written to a temporary directory (the
layout and columns of Snakemake's benchmark files, one to four jobs per rule, known seconds) and of
a synthetic log, so that the parsing is exercised without a finished run.

    python benchmarks/bench_workflow.py times [results/benchmarks] [--log .snakemake/log/<run>.log] [--quick]
"""

from __future__ import annotations

import argparse
import csv
import re
import tempfile
from collections import defaultdict
from pathlib import Path

# the folder under results/benchmarks/ that each rule writes to
RULES = {
    "data": "generate_data",
    "erm": "train_erm",
    "population": "population",
    "replica": "replica",
    "length": "length",
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


#: Snakemake's benchmark columns (``benchmark:`` directive), in its order
COLUMNS = ("s", "h:m:s", "max_rss", "max_vms", "max_uss", "max_pss", "io_in", "io_out", "mean_load", "cpu_time")

#: the synthetic tree of ``--quick``: file under the root → wall seconds of its job (its cpu_time: 0.9 ×)
SYNTHETIC = {
    "data/spiked_L2_D40_n80_s0.tsv": 1.5,
    "data/spiked_L2_D40_n320_s0.tsv": 2.5,
    "erm/spiked_L2_nu2_delta0_softmax_D40_n80.tsv": 10.0,
    "erm/spiked_L2_nu2_delta0_softmax_D40_n320.tsv": 14.0,
    "erm/spiked_L2_nu2_delta0_linear_D40_n80.tsv": 8.0,
    "erm/spiked_L2_nu2_delta0_linear_D40_n320.tsv": 12.0,
    "population/spiked_L2/softmax.tsv": 3.0,
    "population/spiked_L2/linear.tsv": 1.0,
    "replica/spiked_L2__softmax.tsv": 40.0,
    "replica/spiked_L2__linear.tsv": 20.0,
    "length/spiked/softmax.tsv": 5.0,
    "length/spiked/linear.tsv": 4.0,
    "figures/fig2.tsv": 2.0,
    "figures/fig3.tsv": 3.0,
    "aggregate.tsv": 6.0,
    "validate.tsv": 1.0,
}


def write_synthetic(root: Path) -> Path:
    """The ``--quick`` tree under ``root``: one Snakemake benchmark file per entry of SYNTHETIC, and
    a Snakemake log (its elapsed time 0:02:11); returns the log's path."""
    for rel, s in SYNTHETIC.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        row = (
            f"{s:.4f}",
            f"0:00:{int(s):02d}",
            "512.0",
            "1024.0",
            "500.0",
            "501.0",
            "0.1",
            "0.2",
            "90.0",
            f"{0.9 * s:.2f}",
        )
        path.write_text("\t".join(COLUMNS) + "\n" + "\t".join(row) + "\n")
    log = root / "snakemake.log"
    log.write_text("Building DAG of jobs...\n16 of 16 steps (100%) done\nElapsed time: 0:02:11\n")
    return log


def elapsed(log: Path) -> str:
    m = re.findall(r"Elapsed time: ([\d:.]+)", log.read_text())
    return m[-1] if m else "?"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench_workflow.py times", description=__doc__.splitlines()[0])
    p.add_argument("root", nargs="?", default="results/benchmarks", type=Path)
    p.add_argument("--log", type=Path, default=None, help="Snakemake log of the run (its elapsed time)")
    p.add_argument("--quick", action="store_true", help="a synthetic tree in a temporary directory (CI)")
    args = p.parse_args(argv)
    if args.quick:
        with tempfile.TemporaryDirectory() as tmp:
            args.root = Path(tmp) / "benchmarks"
            args.log = write_synthetic(args.root)
            print(f"synthetic tree: {len(SYNTHETIC)} benchmark files and a Snakemake log")
            report(args)
        return 0
    report(args)
    return 0


def report(args) -> None:
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
