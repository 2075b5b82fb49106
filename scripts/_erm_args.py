"""The command line shared by the scripts that read one ERM experiment of the store."""

from __future__ import annotations

import argparse


def erm_arguments(description: str | None = None) -> argparse.Namespace:
    """Parse ``--store`` (the zarr store), ``--experiment`` (an ERM experiment of the config) and
    ``--optimizer`` (default lbfgs) from the command line."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--store", required=True, help="the store, e.g. results/slr.zarr")
    ap.add_argument("--experiment", required=True, help="an ERM experiment of the config")
    ap.add_argument("--optimizer", default="lbfgs", help="the optimiser whose runs are read (default lbfgs)")
    return ap.parse_args()
