"""Train several ERM runs in one process and write one result file per run (``--members``: the
JSON list of :class:`slrpipe.jobs.TrainJob` records, each with its ``out``; or ``--members-file``,
a file holding it: the workflow's batch manifest, :mod:`slrpipe.manifests`).

Runs that share a training set (same law, D, n, seeds) load it once and are measured on one pass
over their test set; runs of one shape reuse the compiled programs of the first (JAX's in-process
cache), so a batch pays Python, JAX and compilation start-up once. Each run is the computation ``slrpipe train`` does for it alone (same programs, same
inputs): its result file is the same, up to the wall-time attributes — except with ``lanes``,
where the members that share a training set (every σ, λ and start) are trained together
(``slrpipe.train.lanes``) and each one's numbers are those it gets as the only lane, to the
solver's tolerance.
"""

from __future__ import annotations

import dataclasses
import logging
import time

from slrpipe.commands.train import EXECUTION, add_execution_arguments, dataset, train_and_write
from slrpipe.job_args import add_arguments as add_record_arguments
from slrpipe.job_args import members_from_json, members_of
from slrpipe.jobs import DataJob, TrainBatchJob, TrainJob

log = logging.getLogger(__name__)


def add_arguments(p) -> None:
    """The options of ``slrpipe train-batch`` (added to its subparser ``p``)."""
    add_record_arguments(p, TrainBatchJob)
    add_execution_arguments(p)


def members(text: str) -> list[TrainJob]:
    """The TrainJob records of ``--members`` (:func:`slrpipe.job_args.members_from_json`).

    Raises:
        ValueError: not a JSON list of records with an ``out`` each.
    """
    return members_from_json(TrainJob, text)


def _data_key(job: TrainJob):
    """The training set of a run: every DataJob field (the sampler included) and the stored path."""
    fields = (getattr(job, f.name) for f in dataclasses.fields(DataJob))
    return (*(tuple(v.items()) if isinstance(v, dict) else v for v in fields), job.data)


def run(args) -> int:
    """Run ``slrpipe train-batch`` on parsed arguments; returns the exit status (0 on success).

    Raises:
        ValueError: a bad parameter (the CLI prints it as one line and exits with 2)."""
    jobs = members_of(TrainJob, args)
    execution = {k: getattr(args, k) for k in EXECUTION}
    groups: dict = {}
    for job in jobs:
        groups.setdefault(_data_key(job), []).append(job)
    start, done = time.time(), 0
    for group in groups.values():  # one training set in memory at a time, shared by its runs
        train_and_write(group, [j.out for j in group], dataset(group[0]), **execution)
        done += len(group)
        log.info("batch: %d/%d runs done (%.1f s)", done, len(jobs), time.time() - start)
    return 0
