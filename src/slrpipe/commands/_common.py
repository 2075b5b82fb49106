"""Helpers shared by the subcommands: parsing of ν and L (see :mod:`slrpipe.lengths`), provenance."""

from __future__ import annotations

import json
import math
import platform
import time

from slrpipe import __version__
from slrpipe.lengths import parse_L  # noqa: F401  (re-exported for the commands)


def parse_nu(text: str) -> float:
    """'inf' or a float ≥ 0 (ν, the signal strength)."""
    v = float(text)
    if not (v >= 0 or math.isinf(v)):
        raise ValueError(f"nu: must be ≥ 0 or inf, got {text}")
    return v


def provenance(**extra) -> dict:
    """Attributes every result file carries (package version, host, time, plus ``extra``)."""
    attrs = {
        "slrpipe_version": __version__,
        "python": platform.python_version(),
        "host": platform.node(),
        "created_unix": time.time(),
    }
    attrs.update({k: (json.dumps(v) if isinstance(v, (dict, list, tuple)) else v) for k, v in extra.items()})
    return attrs
