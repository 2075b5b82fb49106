"""Aggregate every result file of a config into the zarr store results/slr.zarr (atomically)."""

from __future__ import annotations

from pathlib import Path

from slrpipe.commands._config import add_config_arguments, load_config


def add_arguments(p):
    add_config_arguments(p)
    p.add_argument("--out", required=True, help="the store to write (e.g. results/slr.zarr)")
    p.add_argument("--results", help="the results directory the jobs wrote to (default: the directory of --out)")


def run(args):
    from slrpipe.store.aggregate import build_store
    from slrpipe.workflow import plan

    config = load_config(args)
    results = args.results or str(Path(args.out).parent)
    print(build_store(plan(config, results=results).members, config, args.out))
    return 0
