"""Install a Snakemake profile of this repository (profiles/<name>/) where Snakemake looks up named
profiles, so that ``snakemake --profile <name>`` works from the repository root."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

#: the profiles shipped as package data (the repository's profiles/ links to them)
PROFILES = resources.files("slrpipe") / "resources" / "profiles"


def add_arguments(p):
    """The options of ``slrpipe install-profile`` (added to its subparser ``p``)."""
    p.add_argument(
        "name", nargs="?", default="slurm", help="profile to install (a folder of profiles/; default: slurm)"
    )
    p.add_argument(
        "--dest",
        help="profile folder to create (default: Snakemake's user config dir "
        "$XDG_CONFIG_HOME/snakemake/<name>, usually ~/.config/snakemake/<name>)",
    )
    p.add_argument(
        "--force", action="store_true", help="replace an installed profile that differs (site edits are lost)"
    )


def run(args):
    """Run ``slrpipe install-profile`` on parsed arguments; returns the exit status (0 on success).

    Raises:
        ValueError: a bad parameter (the CLI prints it as one line and exits with 2)."""
    from snakemake.common import get_appdirs  # the directory Snakemake itself searches

    src = PROFILES / args.name
    if not (src / "config.yaml").is_file():
        raise ValueError(
            f"name: no profile {args.name!r}; allowed: {sorted(p.name for p in PROFILES.iterdir() if p.is_dir())}"
        )
    dest = Path(args.dest) if args.dest else Path(get_appdirs().user_config_dir) / args.name
    target = dest / "config.yaml"
    if target.exists() and target.read_bytes() != (src / "config.yaml").read_bytes() and not args.force:
        print(
            f"install-profile: {target} exists and differs (site edits?); kept. Use --force to replace it.",
            file=sys.stderr,
        )
        return 1
    dest.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".yaml.tmp")
    tmp.write_bytes((src / "config.yaml").read_bytes())
    tmp.replace(target)
    print(target)
    return 0
