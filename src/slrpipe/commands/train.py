"""Train an attention estimator by ERM (L-BFGS, GD, Adam or SGD) and write its metrics to netCDF.

Data come from a stored dataset (--data store.zarr, see ``slrpipe generate``) or are regenerated
from their seeds (--model --nu --L --delta --D --alpha|--n --teacher-seed --data-seed); the test
error is measured on --n-test fresh sequences drawn with --test-seed, streamed chunk by chunk.
"""

from __future__ import annotations

from slrpipe.commands.generate import add_data_arguments
from slrpipe.vocabulary import DTYPES, INITS, OPTIMIZERS, SIGMAS


def add_arguments(p) -> None:
    p.add_argument("--data", default=None, help="stored dataset (zarr); else the data options below")
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
    p.add_argument("--restart", type=int, default=0,
                   help="index of this start among the restarts of its seed (recorded as a coordinate; the "
                        "workflow sets --init-seed to slrpipe.vocabulary.init_seed(seed, restart))")
    p.add_argument("--test-seed", type=int, default=None, help="default: data seed + 10000 (slrpipe.vocabulary.default_test_seed)")
    p.add_argument("--n-test", type=int, default=100_000)
    p.add_argument("--max-iter", type=int, default=1000)
    p.add_argument("--tol", type=float, default=None,
                   help="stop when |∇𝓛|₂/n < tol (default 1e-5 float32, 1e-8 float64)")
    p.add_argument("--dtype", choices=DTYPES, default="float32")
    p.add_argument("--lr", type=float, default=None, help="gd/sgd/adam step size (see slrpipe.train.erm)")
    p.add_argument("--batch-size", type=int, default=None, help="sgd minibatch size (default 256)")
    p.add_argument("--sgd-seed", type=int, default=0)
    p.add_argument("--record-every", type=int, default=10, help="trajectory period in steps")
    p.add_argument("--log-every", type=int, default=100, help="progress log period in steps")
    p.add_argument("--no-theory", action="store_true",
                   help="skip test_error_theory (the population risk at the learned overlaps; NaN instead)")
    p.add_argument("--out", required=True, help="output netCDF file (written atomically)")


def _dataset(args):
    from slrpipe.data import SLRDataset, SLRTask

    opts = ("model", "nu", "L", "delta", "D", "teacher_seed", "data_seed", "chunk_size", "n", "alpha")
    given = [o for o in opts if getattr(args, o) is not None]
    if args.data is not None:
        if given:
            raise ValueError(f"data: --data excludes the data options (got --{', --'.join(given)})")
        return SLRDataset.open(args.data)
    missing = [o for o in ("model", "nu", "L", "D", "teacher_seed", "data_seed") if getattr(args, o) is None]
    if missing:
        raise ValueError(f"data: give --data or all of --{', --'.join(m.replace('_', '-') for m in missing)}")
    if (args.n is None) == (args.alpha is None):
        raise ValueError("n: give exactly one of --n or --alpha")
    n = args.n if args.n is not None else round(args.alpha * args.D)
    task = SLRTask(args.model, args.nu, args.L, 0.0 if args.delta is None else args.delta, args.D)
    return SLRDataset(task, n, args.teacher_seed, args.data_seed, args.chunk_size)


def options(args):
    """The ``ERMOptions`` of the command line (checked once, here)."""
    from slrpipe.train.options import ERMOptions, SolverOptions

    solver = SolverOptions(optimizer=args.optimizer, max_iter=args.max_iter, tol=args.tol, lr=args.lr,
                           batch_size=args.batch_size, sgd_seed=args.sgd_seed, record_every=args.record_every,
                           log_every=args.log_every)
    return ERMOptions(sigma=args.sigma, lam=args.lam, init=args.init, init_seed=args.init_seed,
                      test_seed=args.test_seed, n_test=args.n_test, dtype=args.dtype,
                      theory=not args.no_theory, solver=solver)


def run(args) -> int:
    from slrpipe.io import write_netcdf
    from slrpipe.train.experiment import run_erm

    opts, data = options(args), _dataset(args)
    _, ds = run_erm(data, opts)
    # the start's index and the step size in force, so the store can key runs by them
    ds = ds.assign_coords(restart=int(args.restart), lr=float("nan") if args.lr is None else float(args.lr))
    write_netcdf(ds, args.out)
    return 0
