"""One ERM experiment end to end: initialise, train, evaluate, and return an ``xarray.Dataset``.

Source: model.md §5 (what is trained and reported).
"""

from __future__ import annotations

import contextlib
import logging
import math

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr
from flax import nnx

from slrpipe.data import SLRDataset
from slrpipe.lengths import format_L
from slrpipe.models import Attention, attention_apply, bayes_predict
from slrpipe.provenance import provenance
from slrpipe.train.erm import minimize
from slrpipe.train.metrics import gram, overlaps, population_risk, streamed_error
from slrpipe.vocabulary import DTYPES, INITS, c_nu, check_choice, default_test_seed

log = logging.getLogger(__name__)

#: key scale used by the informed initialisation at ν = inf (max-SLR): softmax(10 χ*) puts weight
#: ≈ e^{−10·gap} on a runner-up token whose χ* trails the argmax by ``gap``.
C_INF = 10.0


def init_model(train: SLRDataset, sigma: str, init: str, init_seed: int, dtype=jnp.float32,
               c_inf: float = C_INF, init_scale: float = 1e-2) -> Attention:
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


def run_erm(train: SLRDataset, sigma: str, lam: float, optimizer: str = "lbfgs", init: str = "informed",
            init_seed: int = 0, test_seed: int | None = None, n_test: int = 100_000,
            max_iter: int = 1000, tol: float | None = None, dtype: str = "float32",
            lr: float | None = None, batch_size: int | None = None, sgd_seed: int = 0,
            record_every: int = 10, log_every: int = 100, c_inf: float = C_INF,
            init_scale: float = 1e-2, bayes: bool = True, theory: bool = True) -> tuple[Attention, xr.Dataset]:
    """Train on ``train`` (loaded into one device array) and measure the result.

    The test set is ``n_test`` fresh sequences from the same teacher drawn with ``test_seed``
    (default ``slrpipe.vocabulary.default_test_seed``: data seed + 10000), regenerated and evaluated chunk by chunk. ``tol`` defaults
    to 1e-5 (float32) / 1e-8 (float64) on |∇J|₂ = |∇𝓛|₂/n (see ``slrpipe.train.erm``).

    Returns:
        (trained ``Attention`` module, metrics ``xarray.Dataset``) with scalar variables
        train_loss (J = 𝓛/n), train_mse, test_error (+ _se), test_error_theory (``risk_gram`` at
        the empirical Gram of [k*, v*, k, v]/D), test_error_bayes (oracle on the same test set),
        overlaps m_k, q_k, m_v, q_v, k_vstar, v_kstar, k_v, c, iterations, converged, gnorm,
        wall_time; k, v (dim); trajectory traj_* (step); parameters as scalar coordinates.

    Raises:
        ValueError: bad dtype, init, n_test < 1, test_seed == data_seed, or any argument
            ``minimize`` rejects.
    """
    check_choice("dtype", dtype, DTYPES)
    if n_test < 1:
        raise ValueError(f"n_test: must be ≥ 1, got {n_test}")
    test_seed = default_test_seed(train.data_seed) if test_seed is None else int(test_seed)
    if test_seed == train.data_seed:
        raise ValueError(f"test_seed: must differ from data_seed ({train.data_seed})")
    tol = (1e-5 if dtype == "float32" else 1e-8) if tol is None else float(tol)
    ctx = jax.enable_x64(True) if dtype == "float64" else contextlib.nullcontext()
    with ctx:
        return _run(train, sigma, lam, optimizer, init, init_seed, test_seed, n_test, max_iter, tol,
                    dtype, lr, batch_size, sgd_seed, record_every, log_every, c_inf, init_scale, bayes, theory)


def _run(train, sigma, lam, optimizer, init, init_seed, test_seed, n_test, max_iter, tol, dtype, lr,
         batch_size, sgd_seed, record_every, log_every, c_inf, init_scale, bayes, theory):
    task = train.task
    jdtype = jnp.float64 if dtype == "float64" else jnp.float32
    device = jax.devices()[0]
    log.info("ERM %s/%s λ=%g on %s (n=%d, D=%d), device %s", sigma, optimizer, lam, task, train.n, task.D,
             device.platform)
    model = init_model(train, sigma, init, init_seed, jdtype, c_inf, init_scale)
    data = train.load()
    # one device copy of the training set; the host copy is dropped before training
    X, mask, y = jnp.asarray(data.X, jdtype), jnp.asarray(data.mask), jnp.asarray(data.y, jdtype)
    del data
    k_star, v_star = train.teacher
    res = minimize(model.params(), X, mask, y, sigma, lam, optimizer, max_iter=max_iter,
                   tol=tol, lr=lr, batch_size=batch_size, sgd_seed=sgd_seed, record_every=record_every,
                   log_every=log_every, teacher=(k_star, v_star))
    model.set_params(res.params)
    log.info("ERM done: %d iterations, converged=%s (%s), |∇J|=%.3g, %.1f s", res.iterations, res.converged,
             res.reason, res.gnorm, res.wall_time)

    params = {k: jnp.asarray(a) for k, a in res.params.items()}
    predict = jax.jit(lambda X, mask: attention_apply(params, X.astype(jdtype), mask, sigma))
    train_mse = float(jnp.mean((y - predict(X, mask)) ** 2))
    del X, mask, y
    test = SLRDataset(task, n_test, train.teacher_seed, test_seed)
    test_mse, test_se, _ = streamed_error(predict, test.chunks())
    bayes_mse = bayes_se = math.nan
    if bayes:
        bayes_mse, bayes_se, _ = streamed_error(
            lambda X, mask: bayes_predict(X, mask, k_star, v_star, task.model, task.nu), test.chunks())
    G = gram(k_star, v_star, res.params["k"], res.params["v"])
    c = float(res.params.get("c", 0.0))
    # theory=False (the workflow): the population formula is evaluated at aggregation instead, so
    # editing the theory never reruns training
    theory = population_risk(sigma, task, G, c) if theory else math.nan
    ov = overlaps(k_star, v_star, res.params["k"], res.params["v"])
    log.info("test error %.5f ± %.5f (theory at learned overlaps %.5f, Bayes oracle %.5f)", test_mse, test_se,
             theory, bayes_mse)

    scalars = {"train_loss": res.loss, "train_mse": train_mse, "test_error": test_mse, "test_error_se": test_se,
               "test_error_theory": theory, "test_error_bayes": bayes_mse, "test_error_bayes_se": bayes_se,
               **ov, "c": c, "iterations": res.iterations, "converged": res.converged, "gnorm": res.gnorm,
               "wall_time": res.wall_time}
    data_vars = {k: ((), v) for k, v in scalars.items()}
    data_vars["gram"] = (("w", "w2"), G)
    data_vars["k"] = (("dim",), res.params["k"].astype(np.float64))
    data_vars["v"] = (("dim",), res.params["v"].astype(np.float64))
    traj = res.trajectory
    for name, arr in traj.items():
        if name != "step":
            data_vars[f"traj_{name}"] = (("step",), arr)
    coords = {"step": traj["step"], "w": ["k_star", "v_star", "k", "v"], "w2": ["k_star", "v_star", "k", "v"],
              "model": task.model, "nu": task.nu, "L": format_L(task.L), "L_max": task.L_max,
              "delta": task.delta, "sigma": sigma, "lam": float(lam), "alpha": train.n / task.D, "D": task.D,
              "n": train.n, "teacher_seed": train.teacher_seed, "data_seed": train.data_seed,
              "test_seed": test_seed, "init_seed": int(init_seed), "init": init, "optimizer": optimizer,
              "dtype": dtype, "n_test": n_test}
    attrs = provenance(device=device.platform, device_kind=getattr(device, "device_kind", ""), tol=tol,
                       transposed_copy=int(device.platform == "cpu"),
                       gnorm_normalisation="|grad L|_2 / n over (k, v[, c])", stop_reason=res.reason,
                       max_iter=max_iter, lr=lr if lr is not None else "default", batch_size=batch_size or 0,
                       sgd_seed=sgd_seed, c_inf=c_inf, init_scale=init_scale, chunk_size=train.chunk_size,
                       data_source=str(train.path) if train.path else "regenerated from seeds",
                       L_law={str(k): p for k, p in task.L.items()})
    return model, xr.Dataset(data_vars, coords=coords, attrs=attrs)
