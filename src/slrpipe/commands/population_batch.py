"""Several population sweeps in one process, one result file each (``--members``: the
JSON list of :class:`slrpipe.jobs.PopulationJob` records, each with its ``out``; or ``--members-file``,
a file holding it: the workflow's batch manifest, :mod:`slrpipe.manifests`).

The workflow gives one batch per population experiment (its σ and the Bayes oracle), so that a run
pays Python and library start-up once per experiment instead of once per σ. Each member is the
computation ``slrpipe population`` does for it alone: its result file is the same, up to the
creation-time attributes.
"""

from __future__ import annotations

import logging
import time

from slrpipe.commands.population import add_qmc_seed_argument, sweep_and_write
from slrpipe.job_args import add_arguments as add_record_arguments
from slrpipe.job_args import members_from_json, members_of
from slrpipe.jobs import PopulationBatchJob, PopulationJob

log = logging.getLogger(__name__)


def add_arguments(p) -> None:
    """The options of ``slrpipe population-batch`` (added to its subparser ``p``)."""
    add_record_arguments(p, PopulationBatchJob)
    add_qmc_seed_argument(p)


def members(text: str) -> list[PopulationJob]:
    """The PopulationJob records of ``--members`` (:func:`slrpipe.job_args.members_from_json`).

    Raises:
        ValueError: not a JSON list of records with an ``out`` each.
    """
    return members_from_json(PopulationJob, text)


def run(args) -> int:
    """Run ``slrpipe population-batch`` on parsed arguments; returns the exit status (0 on success).

    Raises:
        ValueError: a bad parameter (the CLI prints it as one line and exits with 2)."""
    jobs = members_of(PopulationJob, args)
    start = time.time()
    for i, job in enumerate(jobs, 1):
        sweep_and_write(job, job.out, args.qmc_seed)
        log.info("batch: %d/%d sweeps done (%s, %.1f s)", i, len(jobs), job.sigma, time.time() - start)
    return 0
