"""Optimal population risk against the sequence length L for one score function (Cor. 4.3, 4.4).

Writes one netCDF file: ``length_sweep(...)`` (dims L, nu; optionally the ν reaching a target
excess risk per L and the risk under L ~ Uniform{1..L_max} over a ν grid), parameters as
coordinates/attributes, with provenance. Example:
``slrpipe length --sigma bayes --model spiked --L-grid 2,10,100 --nu-grid 1,4 --target-risk 0.1 --out l.nc``
"""

from __future__ import annotations

import argparse

from slrpipe.commands._common import parse_nu, typed
from slrpipe.io import write_netcdf
from slrpipe.jobs import LengthJob, from_namespace, text
from slrpipe.provenance import provenance
from slrpipe.vocabulary import BAYES, MODELS, SIGMAS


def _ints(text: str) -> list[int]:
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"L-grid: must be a comma list of integers ≥ 1, got {text!r}") from None
    if not vals or min(vals) < 1:
        raise ValueError(f"L-grid: must be a non-empty comma list of integers ≥ 1, got {text!r}")
    return vals


def _nus(text: str, name: str) -> list[float]:
    vals = [parse_nu(v) for v in text.split(",") if v.strip()]
    if not vals:
        raise ValueError(f"{name}: must be a non-empty comma list, got {text!r}")
    return vals


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``slrpipe length`` (added to its subparser ``p``)."""
    p.add_argument("--sigma", required=True, choices=(*SIGMAS, BAYES), help="score function or the Bayes oracle")
    p.add_argument("--model", required=True, choices=MODELS)
    p.add_argument("--L-grid", required=True, type=typed(_ints), help="comma list of fixed lengths L ≥ 1")
    p.add_argument("--nu-grid", required=True, type=typed(lambda t: _nus(t, "nu-grid")), help="comma list of ν ≥ 0")
    p.add_argument("--delta", type=float, default=0.0, help="label-noise std Δ (default 0)")
    p.add_argument("--target-risk", type=float, default=None, help="also find, per L, the ν reaching this excess risk")
    p.add_argument("--var-L-max", type=int, default=None, help="also the optimum for L ~ Uniform{1..N}")
    p.add_argument(
        "--var-nu-grid",
        default=None,
        type=typed(lambda t: _nus(t, "var-nu-grid")),
        help="ν grid of the variable-length optimum",
    )
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
