"""Train an attention estimator by ERM (L-BFGS, GD, Adam or SGD) and write its metrics to netCDF.

Data come from a stored dataset (--data store.zarr, see ``slrpipe generate``) or are regenerated
from their seeds (--model --nu --L --delta --D --alpha|--n --teacher-seed --data-seed); the test
error is measured on --n-test fresh sequences drawn with --test-seed, streamed chunk by chunk.
The options are the fields of :class:`slrpipe.jobs.TrainJob` (the workflow writes them with
:func:`slrpipe.job_args.argv`), plus how the run is executed (--batch-size, --sgd-seed, --log-every,
--no-theory).
"""

from __future__ import annotations

import dataclasses

from slrpipe.commands.generate import add_chunk_argument
from slrpipe.job_args import add_arguments as add_record_arguments
from slrpipe.job_args import defaults, from_namespace
from slrpipe.jobs import DataJob, TrainJob
from slrpipe.vocabulary import DEFAULTS

_RUN = DEFAULTS["execution"]
#: how a run is executed, beside what it is (the TrainJob): argparse dest -> default
EXECUTION = {"batch_size": None, "sgd_seed": _RUN["sgd_seed"], "log_every": _RUN["log_every"], "no_theory": False}


def add_arguments(p) -> None:
    """The options of ``slrpipe train`` (added to its subparser ``p``): the fields of
    :class:`~slrpipe.jobs.TrainJob` (its data law and seeds optional: ``--data`` holds them), the
    size as ``--alpha`` instead of ``--n``, how the run is executed and where it is written."""
    add_record_arguments(p, TrainJob, optional=[f.name for f in dataclasses.fields(DataJob)])
    p.add_argument("--alpha", type=float, default=None, help="sample complexity α = n/D instead of --n (n = round(αD))")
    add_chunk_argument(p)
    add_execution_arguments(p)
    p.add_argument("--out", required=True, help="output netCDF file (written atomically)")


def add_execution_arguments(p) -> None:
    """How runs are executed (not part of what they are): shared with ``slrpipe train-batch``."""
    e = EXECUTION
    p.add_argument("--batch-size", type=int, default=e["batch_size"], help="sgd minibatch size (default min(n, 256))")
    p.add_argument("--sgd-seed", type=int, default=e["sgd_seed"], help="seed of the sgd minibatch stream")
    p.add_argument("--log-every", type=int, default=e["log_every"], help="progress log period in steps")
    p.add_argument(
        "--no-theory",
        action="store_true",
        help="skip test_error_theory (the population risk at the learned overlaps; NaN instead)",
    )


def _stored(path) -> dict:
    """The DataJob fields of a stored dataset."""
    from slrpipe.data import SLRDataset

    d = SLRDataset.open(path)
    t = d.task
    return {
        "model": t.model,
        "nu": t.nu,
        "L": t.L,
        "delta": t.delta,
        "D": t.D,
        "n": d.n,
        "teacher_seed": d.teacher_seed,
        "data_seed": d.data_seed,
        "sampler": d.sampler,
    }


def job_of(args) -> TrainJob:
    """The :class:`TrainJob` of a parsed command line.

    Raises:
        ValueError: data options missing (without --data), contradicting the stored dataset, or
            both/neither of --n and --alpha.
    """
    names = [f.name for f in dataclasses.fields(DataJob)]
    given = {k: getattr(args, k) for k in names if getattr(args, k, None) is not None}
    if args.alpha is not None and args.n is not None:
        raise ValueError("n: give exactly one of --n or --alpha")
    if args.alpha is not None and "D" in given:
        given["n"] = round(args.alpha * given["D"])
    if args.data is not None:
        stored = _stored(args.data)
        clash = [k for k, v in given.items() if DataJob(**{**stored, k: v}) != DataJob(**stored)]
        if clash:
            raise ValueError(
                f"data: --{', --'.join(c.replace('_', '-') for c in clash)} contradict the stored dataset {args.data}"
            )
        given = stored
    fill = defaults(DataJob)
    missing = [k for k in names if k not in given and k not in fill and k != "n"]
    if missing:
        raise ValueError(f"data: give --data or all of --{', --'.join(m.replace('_', '-') for m in missing)}")
    if "n" not in given:
        raise ValueError("n: give exactly one of --n or --alpha")
    given = {**fill, **given}
    return from_namespace(TrainJob, args, **given)


def dataset(job: TrainJob, chunk_size: int | None = None):
    """The training set of a job: read from ``job.data`` or regenerated from its seeds."""
    from slrpipe.data import SLRDataset, SLRTask
    from slrpipe.setting import Setting

    if job.data is not None:
        return SLRDataset.open(job.data)
    task = SLRTask(Setting(job.model, job.nu, job.L, job.delta), job.D)
    return SLRDataset(task, job.n, job.teacher_seed, job.data_seed, chunk_size, job.sampler)


def options(job: TrainJob, **execution):
    """The ``ERMOptions`` of a job and its execution options (:data:`EXECUTION`; checked once, here)."""
    from slrpipe.train.options import ERMOptions, SolverOptions

    unknown = sorted(set(execution) - set(EXECUTION))
    if unknown:
        raise TypeError(f"options: unknown execution options {unknown}; allowed: {sorted(EXECUTION)}")
    e = {**EXECUTION, **execution}

    solver = SolverOptions(
        optimizer=job.optimizer,
        max_iter=job.max_iter,
        tol=job.tol,
        lr=job.lr,
        batch_size=e["batch_size"],
        sgd_seed=e["sgd_seed"],
        record_every=job.record_every,
        log_every=e["log_every"],
        lanes=job.lanes,
    )
    return ERMOptions(
        sigma=job.sigma,
        lam=job.lam,
        init=job.init,
        init_seed=job.init_seed,
        test_seed=job.test_seed,
        n_test=job.n_test,
        dtype=job.dtype,
        theory=not e["no_theory"],
        solver=solver,
    )


def train_and_write(jobs: list[TrainJob], outs: list, data, **execution) -> None:
    """Train jobs that share the training set ``data`` (``slrpipe.train.experiment.run_erm_batch``)
    and write each one's result file atomically to its path in ``outs``."""
    from slrpipe.io import write_netcdf
    from slrpipe.train.experiment import run_erm_batch

    results = run_erm_batch(data, [options(j, **execution) for j in jobs])
    for job, out, (_, ds) in zip(jobs, outs, results):
        # the start's index and the step size in force, so the store can key runs by them
        ds = ds.assign_coords(restart=int(job.restart), lr=float("nan") if job.lr is None else float(job.lr))
        write_netcdf(ds, out)


def run(args) -> int:
    """Run ``slrpipe train`` on parsed arguments; returns the exit status (0 on success).

    Raises:
        ValueError: a bad parameter (the CLI prints it as one line and exits with 2)."""
    job = job_of(args)
    train_and_write([job], [args.out], dataset(job, args.chunk_size), **{k: getattr(args, k) for k in EXECUTION})
    return 0
