"""Benchmark of the workflow, one mode per question; each mode's module docstring says what it
reads or runs and prints.

Modes:
  times      per-rule time of a finished run, from Snakemake's own benchmark files and log
             (benchmarks/_workflow_times.py)
  rehearsal  the Slurm jobs a config submits, per rule; with ``--run`` config/rehearsal.yaml on a
             local Slurm and locally, the two results compared (benchmarks/_workflow_rehearsal.py)

Usage: python benchmarks/bench_workflow.py MODE [its options; MODE --help lists them]
       python benchmarks/bench_workflow.py [MODE] --quick   (CI: synthetic input or one dry run;
                                                             without MODE every mode, each in a
                                                             fresh process)
"""

from __future__ import annotations

import sys

#: mode → the module of benchmarks/ that runs it
MODES = {
    "times": "_workflow_times",
    "rehearsal": "_workflow_rehearsal",
}


def main(argv=None) -> int:
    from _modes import run_mode  # benchmarks/, the script's folder, is first on sys.path

    return run_mode(__file__, MODES, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
