"""Compare every ERM point with the replica prediction; write the table, fail on disagreement."""

from __future__ import annotations

import sys
from pathlib import Path


def add_arguments(p):
    p.add_argument("--store", required=True, help="results/slr.zarr")
    p.add_argument("--config", required=True, help="the workflow config (YAML) the store was built from")
    p.add_argument("--out", required=True, help="table path (.txt); a .json with the rows is written beside it")


def run(args):
    import yaml

    from slrpipe.store.validation import ValidationFailed, validate_store
    from slrpipe.workflow import validate

    config = validate(yaml.safe_load(Path(args.config).read_text()))
    try:
        validate_store(args.store, config, args.out)
    except ValidationFailed as exc:
        print(f"validate: {exc}", file=sys.stderr)
        return 1
    print(Path(args.out).read_text())
    return 0
