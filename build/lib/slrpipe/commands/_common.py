"""Argument parsing shared by the subcommands (ν and L text forms; see :mod:`slrpipe.lengths`)."""

from __future__ import annotations

from slrpipe.lengths import parse_L  # noqa: F401  (re-exported for the commands)


def parse_nu(text: str) -> float:
    """'inf' or a float ≥ 0 (ν, the signal strength); NaN and negative values are refused.

    Raises:
        ValueError: one line naming nu.
    """
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"nu: must be a number ≥ 0 or inf, got {text!r}") from None
    if not (v >= 0):
        raise ValueError(f"nu: must be ≥ 0 or inf, got {text}")
    return v
