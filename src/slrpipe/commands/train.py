"""Train an attention estimator by ERM (L-BFGS, GD, Adam or SGD) and write its metrics to netCDF.

Data come from a stored dataset (--data store.zarr, see ``slrpipe generate``) or are regenerated
from their seeds (--model --nu --L --delta --D --alpha|--n --teacher-seed --data-seed); the test
error is measured on --n-test fresh sequences drawn with --test-seed, streamed chunk by chunk.
The options are the fields of :class:`slrpipe.jobs.TrainJob` (the workflow writes them with
:func:`slrpipe.jobs.argv`), plus how the run is executed (--batch-size, --sgd-seed, --log-every,
--no-theory).
"""

from __future__ import annotations

import dataclasses

from slrpipe.commands.generate import add_data_arguments
from slrpipe.jobs import DataJob, TrainJob, from_namespace
from slrpipe.vocabulary import DTYPES, INITS, NUMPY, OPTIMIZERS, SIGMAS

#: how a run is executed, beside what it is (the TrainJob): argparse dest -> default
EXECUTION = {"batch_size": None, "sgd_seed": 0, "log_every": 100, "no_theory": False}


def add_arguments(p) -> None:
    """The options of ``slrpipe train`` (added to its subparser ``p``)."""
    p.add_argument("--data", default=None, help="stored dataset (zarr); the data options, if given, must match it")
    g = p.add_argument_group("data regenerated from seeds (when --data is not given)")
    add_data_arguments(g, required=False)
    size = g.add_mutually_exclusive_group()
    size.add_argument("--n", type=int, default=None, help="number of training sequences")
    size.add_argument("--alpha", type=float, default=None, help="sample complexity α = n/D (n = round(αD))")
    p.add_argument("--sigma", required=True, choices=SIGMAS)
    p.add_argument("--lam", type=float, required=True, help="ridge λ on ½Σ(y−f)² + (λ/2)(|k|²+|v|²)")
    p.add_argument("--optimizer", choices=OPTIMIZERS, default="lbfgs")
    p.add_argument("--init", choices=INITS, default="informed")
    p.add_argument("--init-seed", type=int, default=0)
    p.add_argument(
        "--restart",
        type=int,
        default=0,
        help="index of this start among the restarts of its seed (recorded as a coordinate; the "
        "workflow sets --init-seed to slrpipe.vocabulary.init_seed(seed, restart))",
    )
    p.add_argument(
        "--test-seed", type=int, default=None, help="default: data seed + 10000 (slrpipe.vocabulary.default_test_seed)"
    )
    p.add_argument("--n-test", type=int, default=100_000)
    p.add_argument("--max-iter", type=int, default=1000)
    p.add_argument(
        "--tol", type=float, default=None, help="stop when |∇𝓛|₂/n < tol (default 1e-5 float32, 1e-8 float64)"
    )
    p.add_argument("--dtype", choices=DTYPES, default="float32")
    p.add_argument("--lr", type=float, default=None, help="gd/sgd/adam step size (see slrpipe.train.erm)")
    p.add_argument("--record-every", type=int, default=10, help="trajectory period in steps")
    p.add_argument(
        "--lanes",
        action="store_true",
        help="lbfgs: train the starts of each training set together (slrpipe.train.lanes; in "
        "train-batch, the members that differ only in their start)",
    )
    add_execution_arguments(p)
    p.add_argument("--out", required=True, help="output netCDF file (written atomically)")


def add_execution_arguments(p) -> None:
    """How runs are executed (not part of what they are): shared with ``slrpipe train-batch``."""
    p.add_argument("--batch-size", type=int, default=None, help="sgd minibatch size (default 256)")
    p.add_argument("--sgd-seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=100, help="progress log period in steps")
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
    missing = [k for k in names if k not in given and k not in ("delta", "n", "sampler")]
    if missing:
        raise ValueError(f"data: give --data or all of --{', --'.join(m.replace('_', '-') for m in missing)}")
    if "n" not in given:
        raise ValueError("n: give exactly one of --n or --alpha")
    given.setdefault("delta", 0.0)
    given.setdefault("sampler", NUMPY)
    return from_namespace(TrainJob, args, **given)


def dataset(job: TrainJob, chunk_size: int | None = None):
    """The training set of a job: read from ``job.data`` or regenerated from its seeds."""
    from slrpipe.data import SLRDataset, SLRTask
    from slrpipe.setting import Setting

    if job.data is not None:
        return SLRDataset.open(job.data)
    task = SLRTask(Setting(job.model, job.nu, job.L, job.delta), job.D)
    return SLRDataset(task, job.n, job.teacher_seed, job.data_seed, chunk_size, job.sampler)


def options(job: TrainJob, batch_size=None, sgd_seed=0, log_every=100, no_theory=False):
    """The ``ERMOptions`` of a job and its execution options (checked once, here)."""
    from slrpipe.train.options import ERMOptions, SolverOptions

    solver = SolverOptions(
        optimizer=job.optimizer,
        max_iter=job.max_iter,
        tol=job.tol,
        lr=job.lr,
        batch_size=batch_size,
        sgd_seed=sgd_seed,
        record_every=job.record_every,
        log_every=log_every,
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
        theory=not no_theory,
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
