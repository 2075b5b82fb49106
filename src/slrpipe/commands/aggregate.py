"""Aggregate every result file of a config into the zarr store results/slr.zarr (atomically)."""

from __future__ import annotations

from pathlib import Path

from slrpipe.commands.plan_file import add_config_arguments, load_plan


def add_arguments(p):
    """The options of ``slrpipe aggregate`` (added to its subparser ``p``)."""
    add_config_arguments(p)
    p.add_argument("--out", required=True, help="the store to write (e.g. results/slr.zarr)")
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="processes building the experiments' nodes side by side (default 1; the store is the same for any count)",
    )
    p.add_argument(
        "--results", help="with --config: the results directory the jobs wrote to (default: the directory of --out)"
    )


def run(args):
    """Run ``slrpipe aggregate`` on parsed arguments; returns the exit status (0 on success).

    Raises:
        ValueError: a bad parameter (the CLI prints it as one line and exits with 2)."""
    from slrpipe.analysis.aggregate import build_store

    config, members = load_plan(args, results=args.results or str(Path(args.out).parent))
    if args.workers < 1:
        raise ValueError(f"workers: must be an integer ≥ 1, got {args.workers}")
    print(build_store(members, config, args.out, workers=args.workers))
    return 0
