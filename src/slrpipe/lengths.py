"""Sequence-length laws P_L: one normalised form ({length: probability}) and one text form.

Fixed length L is the law {L: 1}; variable length (model.md §2) is any {length ≥ 1: p}. Text
forms (CLI arguments, result coordinates): "3", "uniform:1,2,3", or a JSON object {"1": p1, …}.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np


def length_law(L) -> dict[int, float]:
    """Normalise L — an int ≥ 1 or a dict {length ≥ 1: probability ≥ 0} summing to 1 — to a sorted
    dict without zero-probability lengths.

    Raises:
        ValueError: lengths < 1, negative probabilities or probabilities not summing to 1 (1e-9).
    """
    if isinstance(L, Mapping):
        law = {int(k): float(p) for k, p in L.items()}
    elif isinstance(L, (int, np.integer)) and not isinstance(L, bool):
        law = {int(L): 1.0}
    else:
        raise ValueError(f"L: must be an int ≥ 1 or a dict {{length: probability}}, got {L!r}")
    if not law or any(k < 1 for k in law) or any(p < 0 for p in law.values()) or abs(sum(law.values()) - 1) > 1e-9:
        raise ValueError(f"L: lengths must be ≥ 1 and probabilities ≥ 0 summing to 1, got {L!r}")
    return {k: p for k, p in sorted(law.items()) if p > 0}


def format_L(L) -> str:
    """Text form of a length law: "3", "uniform:1,2,3", else JSON {"1": p1, …} (read by :func:`parse_L`)."""
    law = length_law(L)
    ks = list(law)
    if len(ks) == 1:
        return str(ks[0])
    if all(abs(p - 1 / len(ks)) < 1e-12 for p in law.values()):
        return "uniform:" + ",".join(map(str, ks))
    return json.dumps({str(k): p for k, p in law.items()})


def parse_L(text: str) -> dict[int, float]:
    """Read a text form ("3", "uniform:1,2,3" or a JSON object) into a normalised law.

    Raises:
        ValueError: unreadable text, or a law :func:`length_law` rejects.
    """
    text = text.strip()
    try:
        if text.startswith("uniform:"):
            vals = [int(v) for v in text.split(":", 1)[1].split(",")]
            law = {v: 1.0 / len(vals) for v in vals}
        elif text.startswith("{"):
            law = {int(k): float(p) for k, p in json.loads(text).items()}
        else:
            law = int(text)
    except (ValueError, json.JSONDecodeError) as exc:
        raise ValueError(f"L: expected '3', 'uniform:1,2,3' or a JSON object, got {text!r}") from exc
    return length_law(law)
