"""CI: the installed environment is the lock. Fails (exit 1) when ``pip freeze`` of this interpreter's
environment, less editable installs (slrpipe itself), differs from constraints.txt by a package or a
version; names are compared in PEP 503 normal form (pip freeze spells them as their metadata does,
the resolver in lower case).

Usage: python .ci/lock_check.py [constraints.txt]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def pins(lines) -> dict[str, str]:
    """{normalised name: version} of the ``name==version`` lines (comments and blank lines skipped)."""
    out = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            (spec,) = req.specifier  # exactly one ==version pin per line
            if spec.operator != "==":
                raise ValueError(f"not an exact pin: {line!r}")
            out[canonicalize_name(req.name)] = spec.version
    return out


def main(argv: list[str]) -> int:
    lock = Path(argv[0] if argv else "constraints.txt")
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable"], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    want, have = pins(lock.read_text().splitlines()), pins(frozen)
    diff = [
        f"  {name}: {lock.name} {want.get(name, '-')}, installed {have.get(name, '-')}"
        for name in sorted(want.keys() | have.keys())
        if want.get(name) != have.get(name)
    ]
    if diff:
        print(f"lock_check: the environment differs from {lock} in {len(diff)} package(s):", *diff, sep="\n")
        return 1
    print(f"lock_check: pip freeze equals {lock} ({len(want)} packages)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
