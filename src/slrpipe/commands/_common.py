"""Argument parsing shared by the subcommands (ν, L and grid text forms; see :mod:`slrpipe.lengths`)."""

from __future__ import annotations

import argparse

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


def parse_grid(text: str) -> list[float]:
    """A comma-separated list of numbers (a grid of α, λ or s), non-empty.

    Raises:
        ValueError: one line naming the grid.
    """
    try:
        vals = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"grid: comma-separated numbers expected, got {text!r}") from None
    if not vals:
        raise ValueError(f"grid: empty, got {text!r}")
    return vals


def typed(parse):
    """``parse`` as an argparse ``type``: its ValueError's one-line message becomes argparse's error
    message (``slrpipe <step>: error: argument --x: <message>``, exit status 2)."""

    def convert(text):
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert
