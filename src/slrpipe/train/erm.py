"""Empirical risk minimisation of the attention estimator (docs/model.md §5).

Objective, per sample: J(θ) = 𝓛(θ)/n = (1/n)[½ Σ_i (y_i − f(X_i))² + (λ/2)(|k|² + |v|²)], θ =
(k, v[, c]); the erf offset c is not penalised. The reported gradient norm is |∇J|₂ = |∇𝓛|₂/n
(Euclidean over all of θ) and convergence means |∇J|₂ < tol.

Optimisers (one jit-compiled code path for CPU and GPU; X stays on the device as one array, plus on
CPU a transposed copy used by the gradient, which makes an evaluation ~3× faster there):
- ``lbfgs``: full-batch ``optax.lbfgs`` with its zoom line search, gradients reused through
  ``optax.value_and_grad_from_state``; iterations run inside ``lax.while_loop`` in blocks of
  ``record_every`` so that progress can be logged between blocks.
- ``gd``: full-batch gradient descent. The Hessian of J in (k, v) scales as 1/D (f depends on k, v
  through x·k/√D), so the step on k, v is lr·D·∇J (lr ≈ 0.05: linear σ diverges from 0.2 on at spiked L = 3, ν = 1); c gets lr·∇J.
- ``sgd``: the same with minibatches of ``batch_size`` sequences drawn with replacement, the batch of
  step t from ``jax.random.fold_in(PRNGKey(sgd_seed), t)``; the penalty enters as λ/(2n)|θ|².
- ``adam``: ``optax.adam(lr)`` on J, full batch (scale invariant, no D factor).

Every device computation is one of a few jit-compiled programs (initial value and gradient norm,
optimiser state, one block of iterations), so that JAX's persistent compilation cache, when the
environment enables it (workflow/rules/train.smk), serves them to every later job of the same shapes.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import optax.tree_utils as otu

from slrpipe.models.attention import attention_apply, attention_from_fields
from slrpipe.train.metrics import overlaps
from slrpipe.train.options import SolverOptions
from slrpipe.vocabulary import check_sigma

log = logging.getLogger(__name__)


@jax.custom_vjp
def transposed_product(W, X, XT):
    """X @ W for X (n, L, D), W (D, 2), with the backward pass XT @ δ on a stored transpose
    XT = X.reshape(-1, D).T: XLA's CPU kernel for the row-reducing product Xᵀδ is ~4× slower than
    the forward one, the same product on XT is as fast (benchmarks/bench_erm.py eval)."""
    return X @ W


def _transposed_fwd(W, X, XT):
    return X @ W, XT


def _transposed_bwd(XT, g):
    return XT @ g.reshape(-1, g.shape[-1]), None, None


transposed_product.defvjp(_transposed_fwd, _transposed_bwd)


def transposed(X):
    """XT = X.reshape(-1, D).T as its own (D, n·L) device array (for ``objective(..., XT=XT)``).

    A numpy X is transposed on the host (no XLA program to compile), a jax array on its device."""
    if isinstance(X, np.ndarray):
        return jnp.asarray(np.ascontiguousarray(X.reshape(-1, X.shape[-1]).T))
    X = jnp.asarray(X)
    return jnp.transpose(X.reshape(-1, X.shape[-1]))


def objective(params, X, mask, y, sigma: str, lam, XT=None):
    """J(θ) = (1/n)[½ Σ (y − f)² + (λ/2)(|k|² + |v|²)] (docs/model.md §5 divided by n); scalar.

    X: (n, L, D), mask: bool (n, L), y: (n,). ``XT`` (optional, from ``transposed``): the same data
    transposed, used only by the gradient (same values, faster on CPU). Gradients flow to params only
    when XT is given.
    """
    if XT is None:
        f = attention_apply(params, X, mask, sigma)
    else:
        D = X.shape[-1]
        W = jnp.stack([params["k"], params["v"]], axis=1).astype(X.dtype) / jnp.sqrt(jnp.asarray(D, X.dtype))
        P = transposed_product(W, X, XT)
        chi, z = jnp.where(mask, P[..., 0], 0.0), jnp.where(mask, P[..., 1], 0.0)
        f = attention_from_fields(params, chi, z, mask, sigma)
    r = y - f
    pen = jnp.sum(params["k"] ** 2) + jnp.sum(params["v"] ** 2)
    return (0.5 * jnp.sum(r * r) + 0.5 * lam * pen) / y.shape[0]


@partial(jax.jit, static_argnames=("sigma",))
def value_gnorm(params, X, mask, y, lam, sigma, XT=None):
    """(J, |∇J|₂) at ``params``: the trajectory's step 0 and the first-order blocks' last step."""
    value, grad = jax.value_and_grad(objective)(params, X, mask, y, sigma, lam, XT)
    return value, otu.tree_norm(grad)


def _strong(tree):
    """``tree`` without weak types: an optimiser state as ``init`` makes it has weakly typed scalars
    that its update returns strongly typed, and the block would otherwise be traced twice."""
    return jax.tree.map(lambda a: jax.lax.convert_element_type(a, a.dtype), tree)


class DeviceData(NamedTuple):
    """The training set on the device, passed to the compiled blocks as one pytree argument:
    X (n, L, D), mask bool (n, L), y (n,) and XT, the transposed copy (D, n·L) the gradient uses
    on CPU (``transposed``), or None."""

    X: jax.Array
    mask: jax.Array
    y: jax.Array
    XT: jax.Array | None = None


# ------------------------------------------------------------------------------------------ L-BFGS
@partial(jax.jit, static_argnames=("memory_size",))
def lbfgs_init(params, memory_size):
    """The ``optax.lbfgs`` state at ``params`` (the pytree {"k": (D,), "v": (D,)[, "c": ()]}) with
    ``memory_size`` stored pairs, strongly typed: where :func:`lbfgs_block` starts."""
    return _strong(optax.lbfgs(memory_size=memory_size).init(params))


@partial(jax.jit, static_argnames=("sigma", "memory_size"))
def lbfgs_block(params, state, data: DeviceData, lam, end, tol, sigma, memory_size):
    """L-BFGS iterations from (``params``, ``state``) until the iteration count reaches ``end`` or
    |∇J|₂ < ``tol`` (at least one). Returns (params, state, J, |∇J|₂, iteration count)."""
    X, mask, y, XT = data
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


def _lbfgs_blocks(params, data, lam, sigma, o: SolverOptions, value0: float):
    """Yield (params, step, J, |∇J|₂, stalled) after each block of at most ``record_every``
    iterations up to ``max_iter``; a block stops early once |∇J|₂ < tol. ``stalled``: a full block
    left J unchanged from the previous block's (or the initial ``value0``) — the line search can no
    longer decrease J at this precision."""
    dtype = data.X.dtype
    state = lbfgs_init(params, o.memory_size)
    step, last = 0, value0
    while step < o.max_iter:
        nsteps = min(o.record_every, o.max_iter - step)
        params, state, value, gn, count = lbfgs_block(
            params, state, data, lam, step + nsteps, jnp.asarray(o.tol, dtype), sigma, o.memory_size
        )
        value, new_step = float(value), int(count)
        stalled = new_step == step + nsteps and value == last
        step, last = new_step, value
        yield params, step, value, float(gn), stalled


# ------------------------------------------------------------------------------------ first order
def _first_order(kind: str, lr: float):
    if kind == "adam":
        return optax.adam(lr)
    return optax.sgd(lr)


@partial(jax.jit, static_argnames=("kind", "lr"))
def _first_order_init(params, kind, lr):
    return _strong(_first_order(kind, lr).init(params))


class _FirstOrderBlock(NamedTuple):
    """The static settings of one block of first-order steps (hashable: each distinct value is
    one compiled program). ``kind``: "gd"/"sgd" (optax.sgd) or "adam"; ``lr``: step size;
    ``nsteps``: steps in the block; ``batch_size``: None for full batch."""

    sigma: str
    kind: str
    lr: float
    nsteps: int
    batch_size: int | None


@partial(jax.jit, static_argnames=("spec",))
def _first_order_block(params, state, data: DeviceData, lam, key, step0, spec: _FirstOrderBlock):
    """``spec.nsteps`` first-order steps from (``params``, ``state``); minibatch t (t = ``step0`` + i)
    drawn with ``fold_in(key, t)``. Returns (params, state, J, |∇J|₂) after the block."""
    X, mask, y, XT = data
    sigma, kind, lr, nsteps, batch_size = spec
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
    value, gnorm = value_gnorm(p, X, mask, y, lam, sigma, XT)
    return p, s, value, gnorm


def _first_order_blocks(params, data, lam, sigma, o: SolverOptions, value0: float):
    """Yield (params, step, J, |∇J|₂, False) after each block of ``record_every`` steps (``value0``
    unused: first-order steps never count as stalled)."""
    state = _first_order_init(params, o.optimizer, o.lr)
    key = jax.random.PRNGKey(o.sgd_seed)
    step = 0
    while step < o.max_iter:
        spec = _FirstOrderBlock(sigma, o.optimizer, o.lr, min(o.record_every, o.max_iter - step), o.batch_size)
        params, state, value, gn = _first_order_block(params, state, data, lam, key, step, spec)
        step += spec.nsteps
        yield params, step, float(value), float(gn), False


# -------------------------------------------------------------------------------------- recording
class _Recorder:
    """The trajectory (step, loss, gnorm, and the overlaps with the teacher when given) and the
    progress log."""

    def __init__(self, teacher, optimizer: str, log_every: int, record_every: int):
        self.teacher, self.optimizer = teacher, optimizer
        self.log_every, self.record_every = log_every, record_every
        self.traj = {name: [] for name in ("step", "loss", "gnorm")}

    def add(self, step: int, value: float, gnorm: float, params, converged: bool = False) -> None:
        t = self.traj
        t["step"].append(int(step))
        t["loss"].append(float(value))
        t["gnorm"].append(float(gnorm))
        if self.teacher is not None:
            for name, val in overlaps(*self.teacher, np.asarray(params["k"]), np.asarray(params["v"])).items():
                t.setdefault(name, []).append(float(val))
        if step and (step % self.log_every < self.record_every or converged):
            extra = "".join(f" {k}={t[k][-1]:.4f}" for k in ("m_k", "q_k", "m_v", "q_v") if k in t)
            log.info("%s step %d: J=%.6g |∇J|=%.3g%s", self.optimizer, step, value, gnorm, extra)

    def arrays(self) -> dict:
        return {k: np.asarray(v) for k, v in self.traj.items()}


@dataclass
class ERMResult:
    """Outcome of ``minimize``: learned params (numpy), final J, |∇J|₂, iterations, converged flag,
    stop reason ("tol", "max_iter", "stalled", "nonfinite"), wall time of the iterations (s, with
    their compilation), the trajectory recorded every ``record_every`` steps (dict of 1-d
    arrays: step, loss, gnorm, and the overlaps when the teacher was given) and ``lanes``: the
    number of starts trained together (``slrpipe.train.lanes``; 0: alone, with ``optax.lbfgs`` or
    a first-order optimiser)."""

    params: dict
    loss: float
    gnorm: float
    iterations: int
    converged: bool
    reason: str
    wall_time: float
    trajectory: dict = field(default_factory=dict)
    lanes: int = 0


def checked_options(sigma: str, lam, options: SolverOptions | None, n: int, dtype) -> SolverOptions:
    """The run's options resolved for n sequences in ``dtype``, after checking σ and λ ≥ 0 (one
    check for ``minimize`` and ``slrpipe.train.lanes.minimize_lanes``).

    Raises:
        ValueError: unknown sigma, λ < 0, or options ``SolverOptions.resolved`` rejects."""
    check_sigma(sigma)
    if not lam >= 0:
        raise ValueError(f"lam: must be ≥ 0, got {lam}")
    return (options or SolverOptions()).resolved(n, str(np.dtype(dtype)))


def stop_reason(value: float, gnorm: float, tol: float, stalled: bool) -> str:
    """Why a run stops after a block (``ERMResult.reason``): "nonfinite", "tol" (|∇J|₂ < tol),
    "stalled" (a full block left J unchanged), or "max_iter" (it goes on while budget is left)."""
    if not (math.isfinite(value) and math.isfinite(gnorm)):
        return "nonfinite"
    return "tol" if gnorm < tol else "stalled" if stalled else "max_iter"


def keeps_transpose(transpose: bool | None) -> bool:
    """Whether a run keeps the transposed copy XT: ``SolverOptions.transpose`` resolved (None: on
    CPU only)."""
    return jax.devices()[0].platform == "cpu" if transpose is None else bool(transpose)


def place_data(X, mask, y, dtype, transpose: bool | None = None) -> DeviceData:
    """The training set on the default device in ``dtype``: X (n, L, D), mask bool (n, L), y (n,)
    and, where ``keeps_transpose(transpose)``, the transposed copy XT (D, n·L) of ``transposed``.
    Numpy inputs are converted on the host, so that no XLA program is compiled for a cast or a
    transpose. The runs of one training set share one (``minimize``'s ``data``): at D = 1024,
    n = 20 480 placing it costs 0.95 s of CPU from host arrays (the numpy sampler) and ~0.2 s from
    device arrays (benchmarks/bench_erm.py job), which each run used to pay again."""
    np_dtype = np.dtype(dtype)
    if not isinstance(X, jax.Array):
        X = np.asarray(X, np_dtype)
    XT = transposed(X) if keeps_transpose(transpose) else None
    return DeviceData(
        jnp.asarray(X, np_dtype), jnp.asarray(np.asarray(mask, bool)), jnp.asarray(np.asarray(y, np_dtype)), XT
    )


def minimize(
    params0: dict,
    X,
    mask,
    y,
    sigma: str,
    lam: float,
    options: SolverOptions | None = None,
    *,
    teacher=None,
    data: DeviceData | None = None,
) -> ERMResult:
    """Minimise J (module docstring) from ``params0``.

    Args:
        params0: {"k": (D,), "v": (D,)[, "c": ()]} initial parameters (their dtype is used).
        X: (n, L, D) tokens, mask: bool (n, L), y: (n,) labels — numpy or jax arrays; they are
            put on the default device once, in the dtype of ``params0["k"]``.
        sigma: score function; lam: ridge λ ≥ 0 (on 𝓛, i.e. λ/n on J).
        options: ``SolverOptions`` (default: L-BFGS, max_iter 1000, the dtype's tol); defaults
            are filled by ``SolverOptions.resolved``.
        teacher: optional (k*, v*) to record overlaps along the trajectory.
        data: the same X, mask, y already on the device (``place_data`` with this run's dtype and
            resolved ``transpose``), shared by the runs of one training set; None: placed here.

    Raises:
        ValueError: unknown sigma, λ < 0, options ``SolverOptions`` rejects (batch_size
            outside [1, n]), or ``data`` of another dtype or transpose than the run's.
    """
    dtype = jnp.asarray(params0["k"]).dtype
    o = checked_options(sigma, lam, options, len(y), dtype)
    params = {name: jnp.asarray(a, dtype) for name, a in params0.items()}
    if data is None:
        data = place_data(X, mask, y, dtype, o.transpose)
    elif data.X.dtype != dtype or (data.XT is not None) != keeps_transpose(o.transpose) or data.y.shape != (len(y),):
        raise ValueError(
            f"data: placed as {data.X.dtype}, n={data.y.shape[0]}, transpose={data.XT is not None}; the run "
            f"needs {dtype}, n={len(y)}, transpose={keeps_transpose(o.transpose)}"
        )
    lam_j = jnp.asarray(lam, dtype)

    rec = _Recorder(teacher, o.optimizer, o.log_every, o.record_every)
    t0 = time.perf_counter()
    value, gnorm = (float(a) for a in value_gnorm(params, *data[:3], lam_j, sigma, data[3]))
    rec.add(0, value, gnorm, params)
    step, reason = 0, "max_iter"
    if gnorm < o.tol:
        reason = "tol"
    else:
        blocks = _lbfgs_blocks if o.optimizer == "lbfgs" else _first_order_blocks
        for block in blocks(params, data, lam_j, sigma, o, value):
            params, step, value, gnorm, stalled = block
            reason = stop_reason(value, gnorm, o.tol, stalled)
            rec.add(step, value, gnorm, params, converged=reason == "tol")
            if reason == "nonfinite":
                log.warning("%s: non-finite loss or gradient at step %d; stopping", o.optimizer, step)
            if reason != "max_iter":
                break
    wall = time.perf_counter() - t0
    return ERMResult(
        {k: np.asarray(a) for k, a in params.items()}, value, gnorm, step, reason == "tol", reason, wall, rec.arrays()
    )
