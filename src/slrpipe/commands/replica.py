"""Replica theory (RS, zero temperature) of ridge ERM on SLR: test error vs α on a λ grid.

Writes one netCDF file (``slrpipe.io.write_netcdf``) holding the ``xarray.Dataset`` of
:func:`slrpipe.theory.replica.replica_sweep` (or of ``bayes_optimal_sweep`` with
``--bayes-optimal``), with provenance attributes.
"""

from __future__ import annotations

from slrpipe.commands._common import parse_grid, parse_L, parse_nu, typed
from slrpipe.io import write_netcdf
from slrpipe.jobs import ReplicaJob, from_namespace, text
from slrpipe.provenance import provenance
from slrpipe.vocabulary import MODELS, REPLICA_SIGMAS


def add_arguments(p) -> None:
    """The options of ``slrpipe replica`` (added to its subparser ``p``)."""
    p.add_argument("--sigma", default=None, choices=REPLICA_SIGMAS, help="score function (default softmax)")
    p.add_argument("--model", required=True, choices=MODELS)
    p.add_argument("--nu", required=True, type=typed(parse_nu), help="signal strength (max-SLR: inf allowed)")
    p.add_argument("--L", required=True, type=typed(parse_L), help="fixed sequence length (variable L not supported)")
    p.add_argument("--delta", type=float, default=0.0, help="label-noise standard deviation Δ")
    p.add_argument(
        "--lam-grid", default=None, type=typed(parse_grid), help="comma-separated ridge strengths λ (default 0.1)"
    )
    p.add_argument("--alpha-grid", required=True, type=typed(parse_grid), help="comma-separated α = n/D")
    p.add_argument("--n-samples", type=int, default=20000, help="Monte Carlo samples of the channel")
    p.add_argument("--seed", type=int, default=0, help="seed of the common random numbers")
    p.add_argument(
        "--mc-seeds",
        type=int,
        default=None,
        help="re-solve each converged point with this many scrambles in all (test_error_mc_sd)",
    )
    p.add_argument("--no-qmc", action="store_true", help="iid Gaussian fields instead of scrambled Sobol")
    p.add_argument(
        "--one-way", action="store_true", help="continuation from large α only (no up pass, no second-branch detection)"
    )
    p.add_argument("--bayes-optimal", action="store_true", help="Bayes-optimal state evolution instead (no σ, no λ)")
    p.add_argument("--out", required=True, help="output netCDF path")


def run(args) -> int:
    """Run ``slrpipe replica`` on parsed arguments; returns the exit status (0 on success).

    Raises:
        ValueError: a bad parameter (the CLI prints it as one line and exits with 2)."""
    from slrpipe.setting import Setting
    from slrpipe.theory.replica import Draw, ReplicaTask, bayes_optimal_sweep, replica_sweep
    from slrpipe.theory.replica.options import SolverOptions, SweepOptions

    job = from_namespace(ReplicaJob, args)
    if len(job.L) != 1:
        raise ValueError(f"L: the replica solver needs a fixed length, got {text(job.L)}")
    setting = Setting(job.model, job.nu, job.L, job.delta)
    if job.bayes_optimal:
        if job.sigma is not None or job.lam_grid is not None:
            raise ValueError("bayes-optimal: takes no --sigma or --lam-grid (the state evolution has neither)")
        ds = bayes_optimal_sweep(setting, list(job.alpha_grid), n_samples=job.n_samples, seed=job.seed)
    else:
        # the options are built (and range-checked) once, here, for every solve of the sweep
        options = SolverOptions()
        sweep = SweepOptions(two_way=not job.one_way, mc_seeds=job.mc_seeds or 1)
        ds = replica_sweep(
            ReplicaTask(job.sigma or "softmax", setting),
            list(job.lam_grid or (0.1,)),
            list(job.alpha_grid),
            draw=Draw(n_samples=job.n_samples, seed=job.seed, qmc=not args.no_qmc),
            options=options,
            sweep=sweep,
        )
    ds.attrs.update(provenance(command="replica", nu_text=text(job.nu)))
    write_netcdf(ds, args.out)
    return 0
