"""Optimal population risk against the sequence length L for one score function (Cor. 4.3, 4.4).

Writes one netCDF file: ``length_sweep(...)`` (dims L, nu; optionally the ν reaching a target
excess risk per L and the risk under L ~ Uniform{1..L_max} over a ν grid), parameters as
coordinates/attributes, with provenance. Example:
``slrpipe length --sigma bayes --model spiked --L-grid 2,10,100 --nu-grid 1,4 --target-risk 0.1 --out l.nc``
"""

from __future__ import annotations

import argparse

from slrpipe.io import write_netcdf
from slrpipe.job_args import add_arguments as add_record_arguments
from slrpipe.job_args import from_namespace, text
from slrpipe.jobs import LengthJob
from slrpipe.provenance import provenance


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``slrpipe length`` (added to its subparser ``p``): the fields of
    :class:`~slrpipe.jobs.LengthJob` and ``--out``."""
    add_record_arguments(p, LengthJob)
    p.add_argument("--out", required=True, help="output netCDF path")


def run(args: argparse.Namespace) -> int:
    """Run ``slrpipe length`` on parsed arguments; returns the exit status (0 on success).

    Raises:
        ValueError: a bad parameter (the CLI prints it as one line and exits with 2)."""
    from slrpipe.theory.length_sweep import LengthOptions, length_sweep

    if (args.var_L_max is None) != (args.var_nu_grid is None):
        raise ValueError("var-L-max, var-nu-grid: give both or neither")
    if args.var_L_max is not None and args.var_L_max < 1:
        raise ValueError(f"var-L-max: must be ≥ 1, got {args.var_L_max}")
    job = from_namespace(LengthJob, args)
    ds = length_sweep(
        job.sigma,
        job.model,
        list(job.L_grid),
        list(job.nu_grid),
        job.delta,
        options=LengthOptions(target_risk=job.target_risk, var_L_max=job.var_L_max, var_nus=job.var_nu_grid or ()),
    )
    ds.attrs.update(
        provenance(
            command="length",
            sigma=job.sigma,
            model=job.model,
            L_grid=text(job.L_grid),
            nu_grid=text(job.nu_grid),
            delta=job.delta,
            target_risk=str(job.target_risk),
            var_L_max=str(job.var_L_max),
            var_nu_grid=text(job.var_nu_grid) if job.var_nu_grid else "None",
        )
    )
    write_netcdf(ds, args.out)
    return 0
