"""Write the markdown tables of a run (results/tables/<name>.md) from the comparison's rows."""

from __future__ import annotations


def add_arguments(p):
    """The options of ``slrpipe tables`` (added to its subparser ``p``)."""
    p.add_argument(
        "--validation",
        help="the comparison's rows (results/validation.json); omitted: a run without a comparison",
    )
    p.add_argument("--out", required=True, help="the folder of the tables (results/tables)")


def run(args):
    """Run ``slrpipe tables`` on parsed arguments: write every table of
    :data:`slrpipe.analysis.tables.TABLES` into ``--out``; returns the exit status (0 on success).

    Raises:
        ValueError: a row with an unknown column or verdict (the CLI prints it as one line and exits with 2)."""
    from slrpipe.analysis.rows import read_rows
    from slrpipe.analysis.tables import write_tables

    rows = read_rows(args.validation) if args.validation else None
    for path in write_tables(rows, args.out):
        print(path)
    return 0
