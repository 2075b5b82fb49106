"""The workflow config a command works on: a YAML/JSON file (``--config``) or the JSON text the
workflow passes (``--config-json``), validated (defaults filled) by :func:`slrpipe.workflow.validate`."""

from __future__ import annotations

import json
from pathlib import Path


def add_config_arguments(p):
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--config", help="the workflow config file (YAML)")
    g.add_argument("--config-json", help="the workflow config as JSON text (what the Snakemake rules pass)")


def load_config(args) -> dict:
    """Raises ConfigError (a ValueError: one line) on a bad config."""
    import yaml

    from slrpipe.workflow import validate

    raw = json.loads(args.config_json) if args.config_json else yaml.safe_load(Path(args.config).read_text())
    return validate(raw)
