"""Compare every ERM point with the replica prediction; write the table, fail on disagreement."""

from __future__ import annotations

import sys
from pathlib import Path

from slrpipe.commands.plan_file import add_config_arguments, load_plan


def add_arguments(p):
    """The options of ``slrpipe validate`` (added to its subparser ``p``)."""
    p.add_argument("--store", required=True, help="results/slr.zarr")
    add_config_arguments(p)
    p.add_argument("--out", required=True, help="table path (.txt); a .json with the rows is written beside it")


def run(args):
    """Run ``slrpipe validate`` on parsed arguments; returns the exit status (0 on success).

    Raises:
        ValueError: a bad parameter (the CLI prints it as one line and exits with 2)."""
    from slrpipe.analysis.validation import ValidationFailed, validate_store

    config, _ = load_plan(args)
    try:
        validate_store(args.store, config, args.out)
    except ValidationFailed as exc:
        print(f"validate: {exc}", file=sys.stderr)
        return 1
    print(Path(args.out).read_text())
    return 0
