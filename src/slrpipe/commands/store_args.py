"""The command line shared by the scripts that read one ERM experiment of the store
(scripts/distance_table.py, scripts/optimization_table.py); the node itself is
:func:`slrpipe.analysis.aggregate.experiment_node`'s."""

from __future__ import annotations

import argparse


def erm_experiment_parser(description: str) -> argparse.ArgumentParser:
    """A parser with ``--store`` (the store, e.g. results/slr.zarr), ``--experiment`` (an ERM
    experiment of the config) and ``--optimizer`` (the optimiser whose runs are read, default
    lbfgs); a script adds its own options to it."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--store", required=True, help="the store, e.g. results/slr.zarr")
    ap.add_argument("--experiment", required=True, help="an ERM experiment of the config")
    ap.add_argument("--optimizer", default="lbfgs", help="the optimiser whose runs are read (default lbfgs)")
    return ap
