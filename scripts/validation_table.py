"""The verdict table of a validation run as markdown, as docs/validation.md quotes it: per point
the theory, ERM from the informed start and the ground state at each D of the ladder, the D → ∞
limit of each (law; z against the theory), RS stability (replicon, prox ties among the theory's
samples) and the verdict (slrpipe.analysis.verdict); then the count of each verdict.

The rendering is :func:`slrpipe.analysis.validation.format_markdown` (the one that also writes
``results/validation.txt``'s rows); this script only reads ``results/validation.json``.

Usage: python scripts/validation_table.py [results/validation.json]
"""

from __future__ import annotations

import json
import sys

from slrpipe.analysis.validation import format_markdown


def main(path="results/validation.json"):
    with open(path) as f:
        print(format_markdown(json.load(f)))


if __name__ == "__main__":
    main(*sys.argv[1:])
