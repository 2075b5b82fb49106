"""Optimal population risk vs ν for one score function (model.md §4; the paper's Fig. 2).

Writes one netCDF file: ``population_sweep(...)`` (dim ``nu``; risk, overlaps, quadrature error)
with provenance attributes. Example:
``slrpipe population --sigma softmax --model max --L uniform:1,2,3 --nu-grid 0,1,2,inf --out p.nc``
"""

from __future__ import annotations

import argparse

from slrpipe.commands._common import parse_L, parse_nu, typed
from slrpipe.io import write_netcdf
from slrpipe.jobs import PopulationJob, from_namespace
from slrpipe.provenance import provenance
from slrpipe.vocabulary import BAYES, MODELS, SIGMAS


def _nu_grid(text: str) -> list[float]:
    vals = [parse_nu(v) for v in text.split(",") if v.strip()]
    if not vals:
        raise ValueError(f"nu-grid: must be a non-empty comma list, got {text!r}")
    return vals


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``slrpipe population`` (added to its subparser ``p``)."""
    p.add_argument("--sigma", required=True, choices=(*SIGMAS, BAYES), help="score function or the Bayes oracle")
    p.add_argument("--model", required=True, choices=MODELS)
    p.add_argument(
        "--L", required=True, type=typed(parse_L), help="sequence length: '3', 'uniform:1,2,3' or JSON {\"L\": p}"
    )
    p.add_argument("--nu-grid", required=True, type=typed(_nu_grid), help="comma list of ν ≥ 0; 'inf' allowed for max")
    p.add_argument("--delta", type=float, default=0.0, help="label-noise std Δ (default 0)")
    p.add_argument("--qmc-seed", type=int, default=0, help="seed of the Sobol scramblings (L ≥ 4)")
    p.add_argument("--out", required=True, help="output netCDF path")


def run(args: argparse.Namespace) -> int:
    """Run ``slrpipe population`` on parsed arguments; returns the exit status (0 on success).

    Raises:
        ValueError: a bad parameter (the CLI prints it as one line and exits with 2)."""
    sweep_and_write(from_namespace(PopulationJob, args), args.out, args.qmc_seed)
    return 0


def sweep_and_write(job: PopulationJob, out: str, qmc_seed: int = 0) -> None:
    """The population sweep of ``job`` (``population_sweep``) written to ``out`` with provenance
    (``qmc_seed``: seed of the Sobol scramblings). Raises ValueError on a bad parameter."""
    from slrpipe.theory.population import population_sweep
    from slrpipe.theory.quadrature import QuadSpec

    ds = population_sweep(job.sigma, job.model, job.L, list(job.nu_grid), job.delta, quad=QuadSpec(seed=qmc_seed))
    ds.attrs.update(provenance(command="population", qmc_seed=qmc_seed))  # the parameters are coordinates
    write_netcdf(ds, out)
