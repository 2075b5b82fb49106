"""A batch job's members by file: the manifest the workflow writes for each batch and the batch
command reads (``--members-file``), so that no job carries its members on the command line.

A manifest holds :func:`slrpipe.job_args.members_json` of one batch record; its path is keyed by the
batch's family and name (:data:`MANIFEST`, the name spelling out the batch's defining parameters,
:func:`slrpipe.workflow.batch_key`). It is written atomically and only when its text changes, so
an unchanged batch keeps its file (and its modification time) across any number of plans.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from slrpipe.io import write_text
from slrpipe.job_args import members_json

#: the manifest of batch ``batch`` of rule family ``family`` (``train_erm``, ``population``)
MANIFEST = "{results}/plan/{family}/{batch}.json"


def manifest_text(batch) -> str:
    """The text of a batch record's manifest: its members' JSON and a final newline."""
    return members_json(batch) + "\n"


def digest(text: str) -> str:
    """A short content key of a manifest's text (sha256, 16 hex digits): a rule's param, so that a
    changed member list reruns its batch, and only then."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def write_manifest(text: str, path) -> bool:
    """Write ``text`` to ``path`` atomically unless the file already holds exactly it; returns
    whether it was written.

    Raises:
        OSError: the directory cannot be created or the file cannot be written."""
    p = Path(path)
    try:
        if p.read_text(encoding="utf-8") == text:
            return False
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    p.parent.mkdir(parents=True, exist_ok=True)
    write_text(text, p)
    return True


def stale_sentinel(done, digest_now: str, members) -> bool:
    """Whether the sentinel ``done`` of a batch stands for member files that are not all there: it
    exists, records the digest ``digest_now`` of the current manifest (the batch was made with
    these members) and one of the ``members`` paths is missing. A sentinel of another member list
    is not stale here: its rule's digest param reruns that batch anyway."""
    p = Path(done)
    try:
        recorded = next(iter(p.read_text(encoding="utf-8").splitlines()), "").strip()
    except FileNotFoundError:
        return False
    return recorded == digest_now and not all(Path(m).exists() for m in members)


def follow_members(done, members) -> bool:
    """Rewrite the sentinel ``done`` when a member file is newer than it (a result file rewritten
    or edited after its batch): its first line (the digest) kept, the newest member's modification
    time added, so that Snakemake, which compares a small input's checksum as well as its time,
    redoes whatever reads the batch, as for a declared output; returns whether it was rewritten.
    Nothing happens without a sentinel."""
    p = Path(done)
    if not p.exists():
        return False
    newest = max((Path(m).stat().st_mtime_ns for m in members if Path(m).exists()), default=0)
    if newest <= p.stat().st_mtime_ns:
        return False
    first = p.read_text(encoding="utf-8").splitlines()[:1]
    write_text("\n".join([*first, f"member modified {newest}"]) + "\n", p)
    if p.stat().st_mtime_ns < newest:  # not older than the member, whatever the clocks
        os.utime(p, ns=(newest, newest))
    return True
