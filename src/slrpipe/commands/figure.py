"""Draw one figure (PDF + PNG) from results/slr.zarr."""

from __future__ import annotations

import importlib

from slrpipe.figures import REGISTRY


def add_arguments(p):
    """The options of ``slrpipe figure`` (added to its subparser ``p``)."""
    p.add_argument("name", choices=sorted(REGISTRY), help="which figure")
    p.add_argument("--store", required=True, help="the aggregated results/slr.zarr")
    p.add_argument("--experiments", required=True, help="comma-separated experiment names, one panel each")
    p.add_argument("--out", required=True, help="output path without extension (.pdf and .png are written)")


def run(args):
    """Run ``slrpipe figure`` on parsed arguments; returns the exit status (0 on success).

    Raises:
        ValueError: a bad parameter (the CLI prints it as one line and exits with 2)."""
    from slrpipe.store.aggregate import open_store

    mod = importlib.import_module(f"slrpipe.figures.{args.name}")
    tree = open_store(args.store)
    paths = mod.plot(tree, [e for e in args.experiments.split(",") if e], args.out)
    for p in paths:
        print(p)
    return 0
