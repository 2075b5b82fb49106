"""Empirical risk minimisation of the attention estimator (model.md §5).

Objective, per sample: J(θ) = 𝓛(θ)/n = (1/n)[½ Σ_i (y_i − f(X_i))² + (λ/2)(|k|² + |v|²)], θ =
(k, v[, c]); the erf offset c is not penalised. The reported gradient norm is |∇J|₂ = |∇𝓛|₂/n
(Euclidean over all of θ) and convergence means |∇J|₂ < tol.

Optimisers (one jit-compiled code path for CPU and GPU; X stays on the device as one array, plus on
CPU a transposed copy used by the gradient, which makes an evaluation ~3× faster there):
- ``lbfgs``: full-batch ``optax.lbfgs`` with its zoom line search, gradients reused through
  ``optax.value_and_grad_from_state``; iterations run inside ``lax.while_loop`` in blocks of
  ``record_every`` so that progress can be logged between blocks.
- ``gd``: full-batch gradient descent. The Hessian of J in (k, v) scales as 1/D (f depends on k, v
  through x·k/√D), so the step on k, v is lr·D·∇J (lr ≈ 0.1–1 is the natural range); c gets lr·∇J.
- ``sgd``: the same with minibatches of ``batch_size`` sequences drawn with replacement, the batch of
  step t from ``jax.random.fold_in(PRNGKey(sgd_seed), t)``; the penalty enters as λ/(2n)|θ|².
- ``adam``: ``optax.adam(lr)`` on J, full batch (scale invariant, no D factor).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax
import optax.tree_utils as otu

from slrpipe.models.attention import attention_apply, attention_from_fields
from slrpipe.train.metrics import overlaps
from slrpipe.vocabulary import OPTIMIZERS, check_choice, check_sigma

log = logging.getLogger(__name__)

DEFAULT_LR = {"gd": 0.5, "sgd": 0.2, "adam": 1e-2}


@jax.custom_vjp
def _project(W, X, XT):
    """X @ W for X (n, L, D), W (D, 2), with the backward pass XT @ δ on a stored transpose
    XT = X.reshape(-1, D).T: XLA's CPU kernel for the row-reducing product Xᵀδ is ~4× slower than
    the forward one, the same product on XT is as fast (benchmarks/bench_erm.py)."""
    return X @ W


def _project_fwd(W, X, XT):
    return X @ W, XT


def _project_bwd(XT, g):
    return XT @ g.reshape(-1, g.shape[-1]), None, None


_project.defvjp(_project_fwd, _project_bwd)


def transposed(X):
    """XT = X.reshape(-1, D).T as its own (D, n·L) array (for ``objective(..., XT=XT)``)."""
    X = jnp.asarray(X)
    return jnp.transpose(X.reshape(-1, X.shape[-1]))


def objective(params, X, mask, y, sigma: str, lam, XT=None):
    """J(θ) = (1/n)[½ Σ (y − f)² + (λ/2)(|k|² + |v|²)] (model.md §5 divided by n); scalar.

    X: (n, L, D), mask: bool (n, L), y: (n,). ``XT`` (optional, from ``transposed``): the same data
    transposed, used only by the gradient (same values, faster on CPU). Gradients flow to params only
    when XT is given.
    """
    if XT is None:
        f = attention_apply(params, X, mask, sigma)
    else:
        D = X.shape[-1]
        W = jnp.stack([params["k"], params["v"]], axis=1).astype(X.dtype) / jnp.sqrt(jnp.asarray(D, X.dtype))
        P = _project(W, X, XT)
        chi, z = jnp.where(mask, P[..., 0], 0.0), jnp.where(mask, P[..., 1], 0.0)
        f = attention_from_fields(params, chi, z, mask, sigma)
    r = y - f
    pen = jnp.sum(params["k"] ** 2) + jnp.sum(params["v"] ** 2)
    return (0.5 * jnp.sum(r * r) + 0.5 * lam * pen) / y.shape[0]


@partial(jax.jit, static_argnames=("sigma", "memory_size"))
def _lbfgs_block(params, state, X, mask, y, lam, end, tol, sigma, memory_size, XT=None):
    fun = partial(objective, X=X, mask=mask, y=y, sigma=sigma, lam=lam, XT=XT)
    opt = optax.lbfgs(memory_size=memory_size)
    value_and_grad = optax.value_and_grad_from_state(fun)

    def step(carry):
        p, s = carry
        value, grad = value_and_grad(p, state=s)
        updates, s = opt.update(grad, s, p, value=value, grad=grad, value_fn=fun)
        return optax.apply_updates(p, updates), s

    def cond(carry):
        _, s = carry
        count = otu.tree_get(s, "count")
        return (count == 0) | ((count < end) & (otu.tree_norm(otu.tree_get(s, "grad")) >= tol))

    p, s = jax.lax.while_loop(cond, step, (params, state))
    return p, s, otu.tree_get(s, "value"), otu.tree_norm(otu.tree_get(s, "grad")), otu.tree_get(s, "count")


def _first_order(kind: str, lr: float):
    if kind == "adam":
        return optax.adam(lr)
    return optax.sgd(lr)


@partial(jax.jit, static_argnames=("sigma", "kind", "lr", "nsteps", "batch_size"))
def _first_order_block(params, state, X, mask, y, lam, key, step0, sigma, kind, lr, nsteps, batch_size, XT=None):
    n, D = y.shape[0], X.shape[-1]
    opt = _first_order(kind, lr)
    # D-preconditioning of (k, v) for gd/sgd: see module docstring
    pre = {name: (1.0 if (kind == "adam" or name == "c") else float(D)) for name in params}

    def grad_at(p, i):
        if batch_size is None:
            return jax.grad(objective)(p, X, mask, y, sigma, lam, XT)
        idx = jax.random.randint(jax.random.fold_in(key, step0 + i), (batch_size,), 0, n)
        # batch mean of ½r² plus λ/(2n)|θ|²: an unbiased estimate of J
        return jax.grad(lambda q: objective(q, X[idx], mask[idx], y[idx], sigma, lam * batch_size / n))(p)

    def body(i, carry):
        p, s = carry
        g = grad_at(p, i)
        g = {name: pre[name] * gi for name, gi in g.items()}
        u, s = opt.update(g, s, p)
        return optax.apply_updates(p, u), s

    p, s = jax.lax.fori_loop(0, nsteps, body, (params, state))
    value, grad = jax.value_and_grad(objective)(p, X, mask, y, sigma, lam, XT)
    return p, s, value, otu.tree_norm(grad)


@dataclass
class ERMResult:
    """Outcome of ``minimize``: learned params (numpy), final J, |∇J|₂, iterations, converged flag,
    stop reason, wall time (s) and the trajectory recorded every ``record_every`` steps
    (dict of 1-d arrays: step, loss, gnorm, and the overlaps when the teacher was given)."""

    params: dict
    loss: float
    gnorm: float
    iterations: int
    converged: bool
    reason: str
    wall_time: float
    trajectory: dict = field(default_factory=dict)


def minimize(params0: dict, X, mask, y, sigma: str, lam: float, optimizer: str = "lbfgs", *,
             max_iter: int = 1000, tol: float = 1e-6, lr: float | None = None,
             batch_size: int | None = None, sgd_seed: int = 0, memory_size: int = 10,
             record_every: int = 10, log_every: int = 100, teacher=None,
             transpose: bool | None = None) -> ERMResult:
    """Minimise J (module docstring) from ``params0``.

    Args:
        params0: {"k": (D,), "v": (D,)[, "c": ()]} initial parameters (their dtype is used).
        X: (n, L, D) tokens, mask: bool (n, L), y: (n,) labels — numpy or jax arrays; they are
            put on the default device once, in the dtype of ``params0["k"]``.
        sigma: score function; lam: ridge λ ≥ 0 (on 𝓛, i.e. λ/n on J).
        optimizer: one of ``OPTIMIZERS``; lr: step size for gd/sgd/adam (default ``DEFAULT_LR``);
            batch_size: sgd minibatch size (default min(n, 256)).
        max_iter: maximum iterations (L-BFGS iterations or optimiser steps); tol: on |∇J|₂.
        record_every: trajectory/check granularity in steps; log_every: progress log period.
        teacher: optional (k*, v*) to record overlaps along the trajectory.
        transpose: keep a transposed copy of X on the device for the gradient (see ``_project``;
            doubles the memory of X, ~3× faster evaluations on CPU). Default: on CPU only.

    Raises:
        ValueError: unknown optimizer or sigma, λ < 0, max_iter < 1, tol ≤ 0, lr ≤ 0,
            batch_size outside [1, n].
    """
    check_sigma(sigma)
    check_choice("optimizer", optimizer, OPTIMIZERS)
    if not lam >= 0:
        raise ValueError(f"lam: must be ≥ 0, got {lam}")
    if max_iter < 1 or record_every < 1:
        raise ValueError(f"max_iter, record_every: must be ≥ 1, got {max_iter}, {record_every}")
    if not tol > 0:
        raise ValueError(f"tol: must be > 0, got {tol}")
    n = len(y)
    lr = DEFAULT_LR.get(optimizer) if lr is None else float(lr)
    if optimizer != "lbfgs" and not lr > 0:
        raise ValueError(f"lr: must be > 0, got {lr}")
    if optimizer == "sgd":
        batch_size = min(n, 256) if batch_size is None else int(batch_size)
        if not 1 <= batch_size <= n:
            raise ValueError(f"batch_size: must be in [1, n={n}], got {batch_size}")
    else:
        batch_size = None
    dtype = jnp.asarray(params0["k"]).dtype
    params = {name: jnp.asarray(a, dtype) for name, a in params0.items()}
    X, mask, y = jnp.asarray(X, dtype), jnp.asarray(mask, bool), jnp.asarray(y, dtype)
    lam_j = jnp.asarray(lam, dtype)
    if transpose is None:
        transpose = jax.devices()[0].platform == "cpu"
    XT = transposed(X) if transpose else None

    traj = {name: [] for name in ("step", "loss", "gnorm")}

    def record(step, value, gnorm, p):
        traj["step"].append(int(step))
        traj["loss"].append(float(value))
        traj["gnorm"].append(float(gnorm))
        if teacher is not None:
            for name, val in overlaps(*teacher, np.asarray(p["k"]), np.asarray(p["v"])).items():
                traj.setdefault(name, []).append(float(val))

    value0, grad0 = jax.value_and_grad(objective)(params, X, mask, y, sigma, lam_j, XT)
    record(0, value0, otu.tree_norm(grad0), params)
    t0 = time.perf_counter()
    step, converged, reason = 0, False, "max_iter"
    gnorm = float(otu.tree_norm(grad0))
    if gnorm < tol:
        converged, reason = True, "tol"
    if optimizer == "lbfgs":
        state = optax.lbfgs(memory_size=memory_size).init(params)
    else:
        state = _first_order(optimizer, lr).init(params)
        key = jax.random.PRNGKey(sgd_seed)
    last_value = float(value0)
    while not converged and step < max_iter:
        nsteps = min(record_every, max_iter - step)
        if optimizer == "lbfgs":
            params, state, value, gn, count = _lbfgs_block(params, state, X, mask, y, lam_j, step + nsteps,
                                                           jnp.asarray(tol, dtype), sigma, memory_size, XT)
            new_step = int(count)
        else:
            params, state, value, gn = _first_order_block(params, state, X, mask, y, lam_j, key, step, sigma,
                                                          optimizer, lr, nsteps, batch_size, XT)
            new_step = step + nsteps
        value, gnorm = float(value), float(gn)
        if not (math.isfinite(value) and math.isfinite(gnorm)):
            reason = "nonfinite"
            step = new_step
            record(step, value, gnorm, params)
            log.warning("%s: non-finite loss or gradient at step %d; stopping", optimizer, step)
            break
        stalled = optimizer == "lbfgs" and new_step == step + nsteps and value == last_value
        step, last_value = new_step, value
        record(step, value, gnorm, params)
        if gnorm < tol:
            converged, reason = True, "tol"
        elif stalled:  # line search can no longer decrease J at this precision
            reason = "stalled"
            break
        if step % log_every < record_every or converged:
            extra = "".join(f" {k}={traj[k][-1]:.4f}" for k in ("m_k", "q_k", "m_v", "q_v") if k in traj)
            log.info("%s step %d: J=%.6g |∇J|=%.3g%s", optimizer, step, value, gnorm, extra)
    wall = time.perf_counter() - t0
    return ERMResult({k: np.asarray(a) for k, a in params.items()}, last_value, gnorm, step, converged,
                     reason, wall, {k: np.asarray(v) for k, v in traj.items()})
