"""Replica theory (RS, zero temperature) of ridge ERM on SLR: test error vs α on a λ grid.

Writes one netCDF file (``slrpipe.io.write_netcdf``) holding the ``xarray.Dataset`` of
:func:`slrpipe.theory.replica.replica_sweep` (or of ``bayes_optimal_sweep`` with
``--bayes-optimal``), with provenance attributes.
"""

from __future__ import annotations

from slrpipe.io import write_netcdf
from slrpipe.job_args import add_arguments as add_record_arguments
from slrpipe.job_args import from_namespace, text
from slrpipe.jobs import ReplicaJob
from slrpipe.provenance import provenance


def add_arguments(p) -> None:
    """The options of ``slrpipe replica`` (added to its subparser ``p``): the fields of
    :class:`~slrpipe.jobs.ReplicaJob` and ``--out``."""
    add_record_arguments(p, ReplicaJob)
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
            draw=Draw(n_samples=job.n_samples, seed=job.seed, qmc=job.qmc),
            options=options,
            sweep=sweep,
        )
    ds.attrs.update(provenance(command="replica", nu_text=text(job.nu)))
    write_netcdf(ds, args.out)
    return 0
