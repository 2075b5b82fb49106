"""Draw one figure (PDF + PNG) from results/slr.zarr."""

from __future__ import annotations

import importlib

from slrpipe.figures import READS_ROWS, REGISTRY, ROWS_ONLY


def add_arguments(p):
    """The options of ``slrpipe figure`` (added to its subparser ``p``)."""
    p.add_argument("name", choices=sorted(REGISTRY), help="which figure")
    p.add_argument("--store", required=True, help="the aggregated results/slr.zarr")
    p.add_argument("--experiments", required=True, help="comma-separated experiment names, one panel each")
    p.add_argument("--out", required=True, help="output path without extension (.pdf and .png are written)")
    p.add_argument(
        "--validation",
        help=f"the comparison's rows (results/validation.json); required by the figures {sorted(READS_ROWS)}",
    )


def run(args):
    """Run ``slrpipe figure`` on parsed arguments; returns the exit status (0 on success).

    Raises:
        ValueError: a bad parameter (the CLI prints it as one line and exits with 2)."""
    from slrpipe.analysis.aggregate import open_store

    mod = importlib.import_module(f"slrpipe.figures.{args.name}")
    experiments = [e for e in args.experiments.split(",") if e]
    # the panels' own nodes are loaded, any other node a figure draws from is read where used
    # (~0.5–1 s less per figure job); the replica figures read ERM nodes throughout: they load the
    # whole store; a figure of the comparison's rows alone (ROWS_ONLY) opens no store
    kind = REGISTRY[args.name]
    kw = {}
    if args.name in READS_ROWS:  # the comparison's rows, as the analysis wrote them
        if not args.validation:
            raise ValueError(f"figure {args.name}: --validation (results/validation.json) is required")
        from slrpipe.analysis.rows import read_rows

        kw["rows"] = read_rows(args.validation)
    if args.name in ROWS_ONLY:
        tree = None
    else:
        tree = open_store(args.store, nodes=None if kind == "replica" else [f"{kind}/{e}" for e in experiments])
    paths = mod.plot(tree, experiments, args.out, **kw)
    for p in paths:
        print(p)
    return 0
