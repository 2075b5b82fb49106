"""Helpers shared by the subcommands: parsing of L specs and ν, provenance attributes."""

from __future__ import annotations

import json
import math
import platform
import time

from slrpipe import __version__


def parse_nu(text: str) -> float:
    """'inf' or a float ≥ 0 (ν, the signal strength)."""
    v = float(text)
    if not (v >= 0 or math.isinf(v)):
        raise ValueError(f"nu: must be ≥ 0 or inf, got {text}")
    return v


def parse_L(text: str) -> dict[int, float]:
    """Sequence-length law P_L: '3' (fixed) or a JSON object '{"1": 0.3333, "2": 0.3333, ...}' or
    'uniform:1,2,3'. Returns {L: probability} with probabilities summing to 1."""
    text = text.strip()
    if text.startswith("uniform:"):
        vals = [int(v) for v in text.split(":", 1)[1].split(",")]
        law = {v: 1.0 / len(vals) for v in vals}
    elif text.startswith("{"):
        law = {int(k): float(p) for k, p in json.loads(text).items()}
    else:
        law = {int(text): 1.0}
    if any(k < 1 for k in law) or abs(sum(law.values()) - 1) > 1e-9:
        raise ValueError(f"L: lengths must be ≥ 1 and probabilities sum to 1, got {text}")
    return dict(sorted(law.items()))


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
