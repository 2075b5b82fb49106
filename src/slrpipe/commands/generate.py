"""Draw an SLR dataset (spiked or max, fixed or variable length) into a zarr v3 store.

Streams chunk by chunk (chunk i is drawn from default_rng([data_seed, i]), or on the device from
fold_in(PRNGKey(data_seed), i) with --sampler jax), so memory stays at one chunk; the store records every parameter and seed (see ``slrpipe.data.store``).
"""

from __future__ import annotations

import logging

from slrpipe.job_args import add_arguments as add_record_arguments
from slrpipe.job_args import from_namespace
from slrpipe.jobs import DataJob

log = logging.getLogger(__name__)


def add_arguments(p) -> None:
    """The options of ``slrpipe generate`` (added to its subparser ``p``): the fields of
    :class:`~slrpipe.jobs.DataJob`, how it is written (``--chunk-size``) and where (``--out``)."""
    add_record_arguments(p, DataJob)
    add_chunk_argument(p)
    p.add_argument("--out", required=True, help="output zarr store (written atomically)")


def add_chunk_argument(p) -> None:
    """``--chunk-size``: samples per chunk of a drawn set (how it is drawn, not what: shared with ``train``)."""
    p.add_argument("--chunk-size", type=int, default=None, help="samples per chunk (default: ~64 MiB of X)")


def run(args) -> int:
    """Run ``slrpipe generate`` on parsed arguments; returns the exit status (0 on success).

    Raises:
        ValueError: a bad parameter (the CLI prints it as one line and exits with 2)."""
    from slrpipe.data import SLRDataset, SLRTask, write_dataset
    from slrpipe.setting import Setting

    job = from_namespace(DataJob, args)
    task = SLRTask(Setting(job.model, job.nu, job.L, job.delta), job.D)
    ds = SLRDataset(task, job.n, job.teacher_seed, job.data_seed, args.chunk_size, job.sampler)
    log.info("generating %d chunks of %d sequences (%s) -> %s", ds.n_chunks, ds.chunk_size, task, args.out)
    write_dataset(args.out, ds)
    log.info("wrote %s", args.out)
    return 0
