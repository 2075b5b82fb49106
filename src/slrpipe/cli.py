"""``slrpipe <step> …``: one subcommand per workflow step, each writing its result file (the
batch commands one per member).

The subcommands live in :mod:`slrpipe.commands` (one module each, exposing ``add_arguments`` and
``run``); this module only dispatches. Snakemake rules call these commands and nothing else.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from slrpipe.provenance import record_command

COMMANDS = {
    "generate": "slrpipe.commands.generate",
    "train": "slrpipe.commands.train",
    "train-batch": "slrpipe.commands.train_batch",
    "population": "slrpipe.commands.population",
    "population-batch": "slrpipe.commands.population_batch",
    "length": "slrpipe.commands.length",
    "replica": "slrpipe.commands.replica",
    "rsb1": "slrpipe.commands.rsb1",
    "rsb1-error": "slrpipe.commands.rsb1_error",
    "aggregate": "slrpipe.commands.aggregate",
    "figure": "slrpipe.commands.figure",
    "validate": "slrpipe.commands.validate",
    "tables": "slrpipe.commands.tables",
    "install-profile": "slrpipe.commands.install_profile",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``slrpipe`` argument parser: one subparser per entry of :data:`COMMANDS`, or only the
    one named ``only`` (a key of :data:`COMMANDS`)."""
    parser = argparse.ArgumentParser(prog="slrpipe", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, modname in COMMANDS.items() if only is None else [(only, COMMANDS[only])]:
        mod = importlib.import_module(modname)
        p = sub.add_parser(name, help=(mod.__doc__ or "").strip().splitlines()[0])
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv=None) -> int:
    """Run ``slrpipe <step> …`` (``argv``: the arguments, default ``sys.argv[1:]``); returns the exit
    status: 0, or 2 with a one-line error for bad parameters (a ValueError)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    argv = sys.argv[1:] if argv is None else list(argv)
    record_command(argv)  # the history attribute of the files this step writes
    # a command imports its own module only (all twelve: ~0.6 s more per process, most of it the
    # imports a workflow job then needs anyway); the full parser for --help or a misspelt command
    only = argv[0] if argv and argv[0] in COMMANDS else None
    try:
        args = build_parser(only).parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage error (or --help): its status, no traceback
        return int(exc.code or 0)
    try:
        return int(args._run(args) or 0)
    except ValueError as exc:  # bad parameters: one line, no traceback
        print(f"slrpipe {args.command}: error: {exc}", file=sys.stderr)
        return 2
