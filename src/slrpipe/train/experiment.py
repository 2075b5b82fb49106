"""One ERM experiment end to end: initialise, train, evaluate, and return an ``xarray.Dataset``.

The estimator is the Flax NNX module ``Attention``; training optimises its ``nnx.Param`` state
(``nnx.split`` → ``nnx.to_pure_dict`` → ``minimize`` → ``nnx.replace_by_pure_dict`` → ``nnx.update``). Test
errors are measured where the data are drawn: on the host for the numpy sampler (numpy, the same
formula as ``attention_apply``; nothing compiled), on the device for the jax sampler (the same
formula, jitted; only the (c,) predictions and labels of a chunk reach the host). The fresh test set
is drawn once for the estimator and the Bayes oracle.

Source: docs/model.md §5 (what is trained and reported).
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr
from flax import nnx

from slrpipe.data import SLRDataset
from slrpipe.data.store import RNG
from slrpipe.lengths import format_L
from slrpipe.models import Attention, attention_apply, bayes_predict
from slrpipe.provenance import provenance
from slrpipe.train.erm import ERMResult, keeps_transpose, minimize, place_data
from slrpipe.train.lanes import minimize_lanes
from slrpipe.train.metrics import gram, overlaps, streamed_errors
from slrpipe.train.options import C_INF, ERMOptions
from slrpipe.vocabulary import INITS, JAX, c_nu, check_choice, default_test_seed

log = logging.getLogger(__name__)

__all__ = ["C_INF", "ERMOptions", "init_model", "run_erm", "run_erm_batch"]


def init_model(
    train: SLRDataset,
    sigma: str,
    init: str,
    init_seed: int,
    dtype=jnp.float32,
    c_inf: float = C_INF,
    init_scale: float = 1e-2,
) -> Attention:
    """The initial estimator: informed (k = c_ν k*, v = v*; c_ν → ``c_inf`` at ν = inf), random
    (k, v ~ N(0, I_D), ``nnx.Rngs(init_seed)``) or small (N(0, init_scale² I_D)).

    Raises:
        ValueError: unknown init.
    """
    D = train.task.D
    if init == "informed":
        c = c_nu(train.task.model, train.task.nu)
        c = c_inf if math.isinf(c) else c
        k_star, v_star = train.teacher
        return Attention(D, sigma, init=(c * k_star, v_star), dtype=dtype)
    if init in ("random", "small"):
        return Attention(D, sigma, nnx.Rngs(int(init_seed)), init=init, scale=init_scale, dtype=dtype)
    check_choice("init", init, INITS)
    raise AssertionError(f"init {init!r} is in INITS but not handled here")


@dataclass
class RunErrors:
    """The errors measured of one trained run: training MSE, test MSE and the Bayes oracle's on the
    same test set, each test error with its standard error (NaN where not measured)."""

    train_mse: float
    test: tuple[float, float]  # (mse, standard error)
    bayes: tuple[float, float]


def run_erm(train: SLRDataset, options: ERMOptions, loaded=None) -> tuple[Attention, xr.Dataset]:
    """Train on ``train`` (loaded into one device array; ``loaded``: ``train.load()`` when the caller
    already holds it, shared between runs) and measure the result.

    The test set is ``options.n_test`` fresh sequences from the same teacher drawn with
    ``options.test_seed`` (default ``slrpipe.vocabulary.default_test_seed``: data seed + 10000),
    regenerated and evaluated chunk by chunk.

    Returns:
        (trained ``Attention`` module, metrics ``xarray.Dataset``) with scalar variables
        train_loss (J = 𝓛/n), train_mse, test_error (+ _se), test_error_theory (population risk at
        the empirical Gram of [k*, v*, k, v]/D, ``slrpipe.theory.learned``; NaN with
        theory=False), test_error_bayes (+ _se; oracle on the same test set, NaN with bayes=False),
        overlaps m_k, q_k, m_v, q_v, k_vstar, v_kstar, k_v, c, iterations, converged, gnorm,
        wall_time; gram (w, w2); k, v (dim); trajectory traj_* (step); parameters as scalar
        coordinates.

    Raises:
        ValueError: test_seed == data_seed, or any option ``minimize`` rejects.
    """
    ((model, ds),) = run_erm_batch(train, [options], loaded)
    return model, ds


def run_erm_batch(train: SLRDataset, options: list[ERMOptions], loaded=None) -> list[tuple[Attention, xr.Dataset]]:
    """:func:`run_erm` for several runs on one training set: each trained in turn (one compiled
    program per shape, reused), or, where ``solver.lanes``, the runs of one dtype and solver
    settings trained together whatever their σ, λ and start (``slrpipe.train.lanes``: one pass over
    X per evaluation for all of them); then every run measured on one pass over each distinct test
    set (runs of the same ``(test_seed, n_test)`` share its draw and the Bayes oracle's error). Each
    run's numbers are those :func:`run_erm` gives it alone (the same programs on the same inputs),
    except lane runs: theirs are those the run gets as the only lane, to the solver's tolerance.

    Returns:
        [(module, dataset)] in the order of ``options``.

    Raises:
        ValueError: as :func:`run_erm`.
    """
    t0 = time.perf_counter()
    loaded = jax.block_until_ready(train.load() if loaded is None else loaded)  # timed whole, not dispatched
    t_sample = time.perf_counter() - t0
    seeds_of = [default_test_seed(train.data_seed) if o.test_seed is None else int(o.test_seed) for o in options]
    if train.data_seed in seeds_of:
        raise ValueError(f"test_seed: must differ from data_seed ({train.data_seed})")
    trained, placed = [None] * len(options), {}  # the training set on the device, shared by the runs of one dtype
    for group in _lane_groups(options):
        o = options[group[0]]
        with _precision(o.dtype):
            jdtype = jnp.float64 if o.dtype == "float64" else jnp.float32
            log.info(
                "ERM %s/%s λ=%s on %s (n=%d, D=%d), device %s%s",
                "+".join(dict.fromkeys(options[i].sigma for i in group)),
                o.solver.optimizer,
                "+".join(f"{lam:g}" for lam in dict.fromkeys(options[i].lam for i in group)),
                train.task,
                train.n,
                train.task.D,
                jax.devices()[0].platform,
                f", {len(group)} models as lanes" if o.solver.lanes else "",
            )
            models = [
                init_model(
                    train,
                    options[i].sigma,
                    options[i].init,
                    options[i].init_seed,
                    jdtype,
                    options[i].c_inf,
                    options[i].init_scale,
                )
                for i in group
            ]
            for i, model, out in zip(group, models, _train(models, train, [options[i] for i in group], loaded, placed)):
                trained[i] = (model, *out)
    t_train = time.perf_counter() - t0 - t_sample
    for key in dict.fromkeys((s, o.n_test) for s, o in zip(seeds_of, options)):
        runs = [i for i, (s, o) in enumerate(zip(seeds_of, options)) if (s, o.n_test) == key]
        measured = _test_errors([trained[i][0] for i in runs], train, [options[i] for i in runs], *key)
        for i, (test, bayes) in zip(runs, measured):
            trained[i][2].test, trained[i][2].bayes = test, bayes
    # one parseable line per training set (benchmarks/bench_erm.py batch reads it)
    log.info(
        "timing: %d runs, training set %.2f s, training %.2f s, test sets %.2f s",
        len(options),
        t_sample,
        t_train,
        time.perf_counter() - t0 - t_sample - t_train,
    )
    return [
        (model, result_dataset(train, o, s, res, errors))
        for (model, res, errors), o, s in zip(trained, options, seeds_of)
    ]


def _host_params(model: Attention) -> dict:
    return {k: np.asarray(a) for k, a in model.params().items()}


def _lane_groups(options: list[ERMOptions]) -> list[list[int]]:
    """Indices of ``options`` trained together: the runs with ``solver.lanes`` of one dtype and
    solver settings form one group whatever their σ, λ and start (an erf run, whose parameters hold
    the offset c, only with erf runs); every other run is its own."""
    groups: dict = {}
    for i, o in enumerate(options):
        key = (o.dtype, o.solver, o.sigma == "erf") if o.solver.lanes else i
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def _train(models: list[Attention], train: SLRDataset, opts: list[ERMOptions], loaded, placed: dict) -> list:
    """Minimise J over each module's parameters (updated in place; ``opts``: each one's options):
    one run, or the models of a lane group together (``solver.lanes``). Returns [(ERMResult,
    RunErrors with the training MSE)]. ``placed``: {(dtype, transpose): the training set on the device}, the last one placed, kept
    for the next run of the same dtype."""
    o = opts[0]
    states = [nnx.split(model, nnx.Param)[1] for model in models]
    data = loaded
    transpose = keeps_transpose(o.solver.transpose)
    key = (o.dtype, transpose)
    if key not in placed:
        placed.clear()  # one copy on the device at a time: a batch's memory law assumes one
        placed[key] = place_data(data.X, data.mask, data.y, np.dtype(o.dtype), transpose)
    starts = [nnx.to_pure_dict(state) for state in states]
    if o.solver.lanes:
        sigmas, lams = [p.sigma for p in opts], [p.lam for p in opts]
        results = minimize_lanes(starts, placed[key], sigmas, lams, o.solver, teacher=train.teacher)
    else:
        (start,) = starts
        results = [
            minimize(
                start, data.X, data.mask, data.y, o.sigma, o.lam, o.solver, teacher=train.teacher, data=placed[key]
            )
        ]
    out = []
    for model, state, res, o in zip(models, states, results, opts):
        nnx.replace_by_pure_dict(state, res.params)
        nnx.update(model, state)
        log.info(
            "ERM done: %d iterations, converged=%s (%s), |∇J|=%.3g, %.1f s",
            res.iterations,
            res.converged,
            res.reason,
            res.gnorm,
            res.wall_time,
        )
        f = predictor(model, o, isinstance(data.X, jax.Array))(data.X, data.mask)
        train_mse = float(np.mean((np.asarray(data.y, np.float64) - np.asarray(f, np.float64)) ** 2))
        out.append((res, RunErrors(train_mse, (math.nan, math.nan), (math.nan, math.nan))))
    return out


def predictor(model: Attention, o: ERMOptions, on_device: bool = False):
    """f(X, mask) of the trained module in the training dtype: numpy on host arrays, or jitted on
    device arrays (``on_device``; the jax sampler's)."""
    params, dt = _host_params(model), np.dtype(o.dtype)
    if not on_device:
        return lambda X, mask: attention_apply(params, X.astype(dt, copy=False), mask, o.sigma, xp=np)

    def predict(X, mask):
        with _precision(o.dtype):
            return _apply_on_device({k: jnp.asarray(a) for k, a in params.items()}, X, mask, o.sigma, o.dtype)

    return predict


@partial(jax.jit, static_argnames=("sigma", "dtype"))
def _apply_on_device(params, X, mask, sigma, dtype):  # one program per (σ, dtype, chunk shape)
    return attention_apply(params, X.astype(dtype), mask, sigma)


def _precision(dtype: str):
    """The context a run of ``dtype`` computes in (x64 on for float64)."""
    return jax.enable_x64(True) if dtype == "float64" else contextlib.nullcontext()


def _bayes_predictor(train: SLRDataset, on_device: bool):
    """The Bayes oracle's prediction in float64 (host numpy, or jitted on the device)."""
    task, (k_star, v_star) = train.task, train.teacher
    if not on_device:
        return lambda X, mask: bayes_predict(X, mask, k_star, v_star, task.model, task.nu)

    def predict(X, mask):
        with jax.enable_x64(True):
            return _bayes_on_device(X, mask, jnp.asarray(k_star), jnp.asarray(v_star), model=task.model, nu=task.nu)

    return predict


_bayes_on_device = jax.jit(partial(bayes_predict, xp=jnp), static_argnames=("model", "nu"))


def _test_errors(
    models: list[Attention], train: SLRDataset, options: list[ERMOptions], test_seed: int, n_test: int
) -> list[tuple[tuple, tuple]]:
    """[((test MSE, s.e.), (Bayes oracle MSE, s.e.))] of each module, all on one pass over the
    fresh test set of ``test_seed`` (the oracle's pair NaN for a run without ``bayes``)."""
    on_device = train.sampler == JAX
    predictors = {i: predictor(m, o, on_device) for i, (m, o) in enumerate(zip(models, options))}
    if any(o.bayes for o in options):
        predictors["bayes"] = _bayes_predictor(train, on_device)
    test = SLRDataset(train.task, n_test, train.teacher_seed, test_seed, sampler=train.sampler)
    out = streamed_errors(predictors, test.chunks())
    nan = (math.nan, math.nan)
    return [(out[i][:2], out["bayes"][:2] if o.bayes else nan) for i, o in enumerate(options)]


def result_dataset(train: SLRDataset, o: ERMOptions, test_seed: int, res: ERMResult, errors: RunErrors) -> xr.Dataset:
    """The result file's content: metrics, overlaps, weights, trajectory, parameters, provenance."""
    k_star, v_star = train.teacher
    G = gram(k_star, v_star, res.params["k"], res.params["v"])
    c = float(res.params.get("c", 0.0))
    theory = _theory_at_gram(train, o, G, c)
    (test_mse, test_se), (bayes_mse, _) = errors.test, errors.bayes
    log.info(
        "test error %.5f ± %.5f (theory at learned overlaps %.5f, Bayes oracle %.5f)",
        test_mse,
        test_se,
        theory,
        bayes_mse,
    )
    return xr.Dataset(
        _data_vars(train, res, errors, G, c, theory),
        coords=_coords(train, o, test_seed, res.trajectory["step"]),
        attrs=_attrs(train, o, res),
    )


def _theory_at_gram(train: SLRDataset, o: ERMOptions, G: np.ndarray, c: float) -> float:
    """The population risk at the learned Gram matrix ``G`` (4, 4) and offset ``c``; NaN unless
    ``o.theory`` — the workflow evaluates it at aggregation instead: a theory edit never reruns
    training."""
    if not o.theory:
        return math.nan
    from slrpipe.theory.learned import risk_at_gram

    return risk_at_gram(o.sigma, train.task.setting, G, c)


def _data_vars(train: SLRDataset, res: ERMResult, errors: RunErrors, G: np.ndarray, c: float, theory: float) -> dict:
    """The result's variables: scalar metrics and overlaps, the Gram matrix (w, w2), the weights
    k, v (dim) in float64 and the trajectory traj_* (step)."""
    k_star, v_star = train.teacher
    (test_mse, test_se), (bayes_mse, bayes_se) = errors.test, errors.bayes
    scalars = {
        "train_loss": res.loss,
        "train_mse": errors.train_mse,
        "test_error": test_mse,
        "test_error_se": test_se,
        "test_error_theory": theory,
        "test_error_bayes": bayes_mse,
        "test_error_bayes_se": bayes_se,
        **overlaps(k_star, v_star, res.params["k"], res.params["v"]),
        "c": c,
        "iterations": res.iterations,
        "converged": res.converged,
        "gnorm": res.gnorm,
        "wall_time": res.wall_time,
    }
    data_vars = {k: ((), v) for k, v in scalars.items()}
    data_vars["gram"] = (("w", "w2"), G)
    data_vars["k"] = (("dim",), res.params["k"].astype(np.float64))
    data_vars["v"] = (("dim",), res.params["v"].astype(np.float64))
    for name, arr in res.trajectory.items():
        if name != "step":
            data_vars[f"traj_{name}"] = (("step",), arr)
    return data_vars


def _coords(train: SLRDataset, o: ERMOptions, test_seed: int, steps: np.ndarray) -> dict:
    """The result's coordinates: the trajectory's ``steps``, the Gram matrix's labels and every
    parameter of the run as a scalar coordinate (the store concatenates runs along them)."""
    task = train.task
    w = ["k_star", "v_star", "k", "v"]
    return {
        "step": steps,
        "w": w,
        "w2": w,
        "model": task.model,
        "nu": task.nu,
        "L": format_L(task.L),
        "L_max": task.L_max,
        "delta": task.delta,
        "sigma": o.sigma,
        "lam": float(o.lam),
        "alpha": train.n / task.D,
        "D": task.D,
        "n": train.n,
        "teacher_seed": train.teacher_seed,
        "data_seed": train.data_seed,
        "test_seed": test_seed,
        "init_seed": int(o.init_seed),
        "init": o.init,
        "optimizer": o.solver.optimizer,
        "dtype": o.dtype,
        "n_test": o.n_test,
    }


def _attrs(train: SLRDataset, o: ERMOptions, res: ERMResult) -> dict:
    """The result's attributes: provenance, the device, the solver's resolved settings and how it
    stopped."""
    task, s = train.task, o.solver
    device = jax.devices()[0]
    transpose = keeps_transpose(o.solver.transpose)
    return provenance(
        device=device.platform,
        device_kind=getattr(device, "device_kind", ""),
        tol=s.resolved(train.n, o.dtype).tol,
        transposed_copy=int(transpose),
        gnorm_normalisation="|grad L|_2 / n over (k, v[, c])",
        stop_reason=res.reason,
        lanes=res.lanes,
        max_iter=s.max_iter,
        lr=s.lr if s.lr is not None else "default",
        batch_size=s.batch_size or 0,
        sgd_seed=s.sgd_seed,
        c_inf=o.c_inf,
        init_scale=o.init_scale,
        chunk_size=train.chunk_size,
        sampler=train.sampler,
        rng=RNG[train.sampler],
        data_source=str(train.path) if train.path else "regenerated from seeds",
        L_law={str(k): p for k, p in task.L.items()},
    )
