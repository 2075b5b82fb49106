"""The planned workflow a command works on: the plan file the workflow writes (``--plan``,
``results/plan.json``: the validated config and the result files of each experiment, as planned
once by the Snakefile) or, by hand, a config file (``--config``, validated and planned here)."""

from __future__ import annotations

import json
from pathlib import Path


def add_config_arguments(p):
    """``--plan`` or ``--config``: the workflow a command reads (exactly one is required)."""
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--plan", help="the workflow's plan file (results/plan.json)")
    g.add_argument("--config", help="a workflow config file (YAML), validated and planned here")


def plan_text(config: dict, members: dict) -> str:
    """The plan file's content: the validated config and {(kind, experiment): [result files]}."""
    rows = [{"kind": kind, "experiment": name, "files": files} for (kind, name), files in members.items()]
    return json.dumps({"config": config, "members": rows}, indent=1)


def load_plan(args, results: str | None = None) -> tuple[dict, dict]:
    """(validated config, members) of ``--plan`` or ``--config``.

    Raises:
        ConfigError (a ValueError: one line) on a bad config; ValueError on an unreadable plan file.
    """
    if args.plan:
        try:
            raw = json.loads(Path(args.plan).read_text())
            members = {(r["kind"], r["experiment"]): r["files"] for r in raw["members"]}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"plan: {args.plan} is not a plan file written by the workflow ({exc})") from None
        return raw["config"], members
    import yaml

    from slrpipe.config import validate
    from slrpipe.workflow import plan

    config = validate(yaml.safe_load(Path(args.config).read_text()))
    return config, plan(config, results=results or "results").members
