"""Provenance attributes that every result file carries (package versions, host, time, the command,
parameters), with the CF global attributes ``Conventions``, ``history`` and ``date_created``."""

from __future__ import annotations

import hashlib
import json
import platform
import shlex
import sys
from datetime import UTC, datetime
from functools import lru_cache
from importlib import resources
from importlib.metadata import PackageNotFoundError, version

from slrpipe import __version__
from slrpipe.cf import CONVENTIONS

#: the attributes that differ between two runs of the same step (the numbers do not): where, when and
#: by which command line (a batch's or a single job's) a file was written
VOLATILE = ("host", "date_created", "history")
#: the libraries whose versions can change a number; recorded with every result
PACKAGES = ("jax", "jaxlib", "flax", "optax", "numpy", "scipy", "xarray", "zarr", "h5netcdf", "snakemake")
#: the pinned versions of an exact reproduction (README: pip install ... -c constraints.txt)
CONSTRAINTS = resources.files("slrpipe") / "resources" / "constraints.txt"
#: the command line of this process's step (:func:`record_command`); None: ``sys.argv``
_COMMAND: list[str] | None = None


def record_command(argv) -> None:
    """Record ``slrpipe <argv>`` as the command that writes this process's files (the ``history``
    attribute; the CLI calls it with the arguments it parses)."""
    global _COMMAND
    _COMMAND = ["slrpipe", *map(str, argv)]


def command_line() -> str:
    """The command that runs this process, shell-quoted: the recorded ``slrpipe …`` command
    (:func:`record_command`), else ``sys.argv``."""
    return shlex.join(_COMMAND if _COMMAND is not None else [sys.executable, *sys.argv])


@lru_cache(maxsize=1)
def package_versions() -> dict[str, str]:
    """{package: installed version} for :data:`PACKAGES` ("absent" where not installed)."""
    out = {}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "absent"
    return out


def constraints_sha256() -> str:
    """sha256 of the pinned constraints.txt shipped with the package ("unknown" if unreadable)."""
    try:
        return hashlib.sha256(CONSTRAINTS.read_bytes()).hexdigest()
    except OSError:
        return "unknown"


def provenance(**extra) -> dict:
    """{Conventions, history, date_created, slrpipe_version, python, host, packages} plus ``extra``
    (dicts and lists as JSON text, since netCDF/zarr attributes hold scalars and strings only).

    ``Conventions``: :data:`slrpipe.cf.CONVENTIONS`; ``date_created``: now, ISO 8601 in UTC to the
    second (``2026-12-01T20:30:25Z``); ``history``: ``"<date_created> <command line>"`` (the CF/NUG
    form: a time stamp and the command that wrote the file, :func:`command_line`)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    attrs = {
        "Conventions": CONVENTIONS,
        "history": f"{now} {command_line()}",
        "date_created": now,
        "slrpipe_version": __version__,
        "python": platform.python_version(),
        "host": platform.node(),
        "packages": package_versions(),
    }
    attrs.update(extra)
    return {k: (json.dumps(v) if isinstance(v, (dict, list, tuple)) else v) for k, v in attrs.items()}
