"""The dispatcher of a benchmark with modes (bench_erm.py, bench_workflow.py): ``SCRIPT MODE
[options]`` runs the mode's module of benchmarks/ (its ``main(argv)``); ``SCRIPT --quick`` runs
every mode's quick run, each in a fresh process."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path


def run_mode(script: str, modes: dict[str, str], doc: str, argv=None) -> int:
    """Run the mode ``argv[0]`` of ``script`` (``modes``: mode → module of benchmarks/) with the
    rest of ``argv``; ``["--quick"]`` alone: every mode's ``--quick`` in a fresh process.

    Raises:
        SystemExit: no mode, or one not in ``modes`` (one line naming the allowed; ``doc`` on stderr).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv == ["--quick"]:
        for mode in modes:
            print(f"== {mode}", flush=True)
            subprocess.run([sys.executable, script, mode, "--quick"], check=True)
        return 0
    if not argv or argv[0] not in modes:
        print(doc, file=sys.stderr)
        raise SystemExit(f"{Path(script).name}: a mode expected, one of {', '.join(modes)}; got {argv[:1]}")
    sys.path.insert(0, str(Path(script).resolve().parent))
    return importlib.import_module(modes[argv[0]]).main(argv[1:]) or 0
