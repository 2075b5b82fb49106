"""Optimal population risk vs ν for one score function (model.md §4; the paper's Fig. 2).

Writes one netCDF file: ``population_sweep(...)`` (dim ``nu``; risk, overlaps, quadrature error)
with provenance attributes. Example:
``slrpipe population --sigma softmax --model max --L uniform:1,2,3 --nu-grid 0,1,2,inf --out p.nc``
"""

from __future__ import annotations

import argparse

from slrpipe.io import write_netcdf
from slrpipe.job_args import add_arguments as add_record_arguments
from slrpipe.job_args import from_namespace
from slrpipe.jobs import PopulationJob
from slrpipe.provenance import provenance

#: seed of the Sobol scramblings (L ≥ 4): how a sweep is computed, not what (shared with population-batch)
QMC_SEED = 0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``slrpipe population`` (added to its subparser ``p``): the fields of
    :class:`~slrpipe.jobs.PopulationJob`, ``--qmc-seed`` and ``--out``."""
    add_record_arguments(p, PopulationJob)
    add_qmc_seed_argument(p)
    p.add_argument("--out", required=True, help="output netCDF path")


def add_qmc_seed_argument(p) -> None:
    """``--qmc-seed`` (:data:`QMC_SEED`)."""
    p.add_argument("--qmc-seed", type=int, default=QMC_SEED, help="seed of the Sobol scramblings (L ≥ 4)")


def run(args: argparse.Namespace) -> int:
    """Run ``slrpipe population`` on parsed arguments; returns the exit status (0 on success).

    Raises:
        ValueError: a bad parameter (the CLI prints it as one line and exits with 2)."""
    sweep_and_write(from_namespace(PopulationJob, args), args.out, args.qmc_seed)
    return 0


def sweep_and_write(job: PopulationJob, out: str, qmc_seed: int = QMC_SEED) -> None:
    """The population sweep of ``job`` (``population_sweep``) written to ``out`` with provenance
    (``qmc_seed``: seed of the Sobol scramblings). Raises ValueError on a bad parameter."""
    from slrpipe.theory.population import population_sweep
    from slrpipe.theory.quadrature import QuadSpec

    ds = population_sweep(job.sigma, job.model, job.L, list(job.nu_grid), job.delta, quad=QuadSpec(seed=qmc_seed))
    ds.attrs.update(provenance(command="population", qmc_seed=qmc_seed))  # the parameters are coordinates
    write_netcdf(ds, out)
