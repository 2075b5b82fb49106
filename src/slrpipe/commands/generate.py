"""Draw an SLR dataset (spiked or max, fixed or variable length) into a zarr v3 store.

Streams chunk by chunk (chunk i is drawn from default_rng([data_seed, i]), or on the device from
fold_in(PRNGKey(data_seed), i) with --sampler jax), so memory stays at one chunk; the store records every parameter and seed (see ``slrpipe.data.store``).
"""

from __future__ import annotations

import logging

from slrpipe.commands._common import parse_L, parse_nu
from slrpipe.jobs import DataJob, from_namespace
from slrpipe.vocabulary import MODELS, NUMPY, SAMPLERS

log = logging.getLogger(__name__)


def add_data_arguments(p, required: bool = True) -> None:
    """The data-model options shared by ``generate`` and ``train``."""
    p.add_argument("--model", choices=MODELS, required=required)
    p.add_argument("--nu", type=parse_nu, required=required, help="signal strength ν ≥ 0 or inf (max only)")
    p.add_argument(
        "--L", type=parse_L, required=required, help="length law: '3', 'uniform:1,2,3' or JSON {\"1\": 0.5, \"2\": 0.5}"
    )
    p.add_argument(
        "--delta", type=float, default=0.0 if required else None, help="label noise standard deviation Δ (default 0)"
    )
    p.add_argument("--D", type=int, required=required, help="token dimension")
    p.add_argument("--teacher-seed", type=int, required=required)
    p.add_argument("--data-seed", type=int, required=required)
    p.add_argument(
        "--sampler",
        choices=SAMPLERS,
        default=NUMPY if required else None,
        help="numpy: drawn on the host (default); jax: on JAX's default device (another draw of the same law)",
    )
    p.add_argument("--chunk-size", type=int, default=None, help="samples per chunk (default: ~64 MiB of X)")


def add_arguments(p) -> None:
    """The options of ``slrpipe generate`` (added to its subparser ``p``)."""
    add_data_arguments(p)
    p.add_argument("--n", type=int, required=True, help="number of sequences")
    p.add_argument("--out", required=True, help="output zarr store (written atomically)")


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
