"""One evaluation and one line-search step of every lane of ``slrpipe.train.lanes``' solve: J and
∇J of all lanes from one product of X with W (D, 2S), and a strong-Wolfe bracketing and
cubic-interpolation search (Nocedal & Wright, *Numerical Optimization*, 2nd ed., Alg. 3.5–3.6)
written lane-wise with ``jnp.where``, so that each of its steps is one evaluation for all lanes
(docs/model.md §5; the objective J is ``slrpipe.train.erm.objective``'s).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from slrpipe.models.attention import attention_from_fields
from slrpipe.train.erm import transposed_product

#: sufficient decrease (Armijo) and strong curvature constants, those of optax's zoom line search
C1, C2 = 1e-4, 0.9
#: the relative rise of J the approximate decrease condition allows (optax's default)
APPROX_DEC_RTOL = 1e-6
#: trial steps per line search; a search that ends without a Wolfe step takes its best Armijo step
#: (or none: the lane then stalls, as ``slrpipe.train.erm`` reports it)
MAX_LINESEARCH_STEPS = 20


#: above this many columns of W (four lanes) the fields are computed as Wᵀ·Xᵀ (X read along its
#: rows) and their gradient as δ·XTᵀ (the stored transpose read along its rows), both lane-major:
#: XLA's CPU kernels for X (n·L, D) @ W (D, C) and XT @ δ fall to ~60 % of these forms' rate from
#: C ≈ 10 on, and below it the other way round (``benchmarks/bench_erm.py products``). No transpose
#: may sit between a product and its operands: XLA folds it into the product, changing its form.
WIDE_COLUMNS = 8


def _rows_dot(a, b):
    """a (C, D) · bᵀ for b (m, D): (C, m), both operands reduced along their last axis."""
    return jax.lax.dot_general(a, b, (((1,), (1,)), ((), ())))


@jax.custom_vjp
def _wide_project(Wt, X, XT):
    """Wt (C, D) · Xᵀ: (C, n·L) for X (n, L, D); its backward pass δ (C, n·L) · XTᵀ on the stored
    transpose XT (D, n·L)."""
    return _rows_dot(Wt, X.reshape(-1, X.shape[-1]))


def _wide_fwd(Wt, X, XT):
    return _wide_project(Wt, X, XT), XT


def _wide_bwd(XT, g):
    return _rows_dot(g, XT), None, None


_wide_project.defvjp(_wide_fwd, _wide_bwd)


def _fields(P, X, XT):
    """(χ, z) of every lane, each (S, n, L): X·k/√D and X·v/√D for P = {"k": (S, D), "v": (S, D)},
    from one product with W = (k, v) of all lanes, in the form fastest for its 2S columns
    (``WIDE_COLUMNS``; with the stored transpose XT, as on CPU) or one plain product (without)."""
    n, L, D = X.shape
    S = P["k"].shape[0]
    scale = jnp.sqrt(jnp.asarray(D, X.dtype))
    if XT is not None and 2 * S > WIDE_COLUMNS:
        Wt = jnp.stack([P["k"], P["v"]], axis=1).astype(X.dtype).reshape(2 * S, D) / scale
        F = _wide_project(Wt, X, XT).reshape(S, 2, n, L)
    else:
        # W built column-wise: from Wᵀ, XLA would fold the transpose into the backward product
        W = jnp.stack([P["k"], P["v"]], axis=-1).astype(X.dtype) / scale  # (S, D, 2)
        W = jnp.transpose(W, (1, 0, 2)).reshape(D, 2 * S)
        proj = X @ W if XT is None else transposed_product(W, X, XT)  # (n, L, 2S)
        F = jnp.moveaxis(proj.reshape(n, L, S, 2), (2, 3), (0, 1))
    return F[:, 0], F[:, 1]


def widths(S: int) -> tuple[int, ...]:
    """The product widths (in lanes) a solve of S lanes uses: S and the powers of two below it,
    widest first (14: 14, 8, 4, 2, 1)."""
    return (S,) + tuple(1 << k for k in reversed(range((S - 1).bit_length())))


def _width_index(on):
    """The index in ``widths(S)`` of the narrowest width that holds the lanes where ``on``."""
    return jnp.sum(jnp.asarray(widths(on.shape[0])[1:]) >= jnp.sum(on))


def lane_fields(P, X, XT, on=None):
    """(χ, z) of every lane, each (S, n, L), as ``_fields``; with ``on`` (bool (S,)) only the lanes
    where it holds are computed, in the narrowest product of ``widths`` that holds them (one
    compiled branch per width, ``lax.switch``), the others' fields left 0: stopped lanes drop out of
    the pass over X. The lanes of a width are the ``on`` ones first, then others (distinct lanes, so
    that the gather and its scatter back are a permutation and the gradients exact)."""
    S = P["k"].shape[0]
    kv = {"k": P["k"], "v": P["v"]}
    if on is None or S == 1:
        return _fields(kv, X, XT)
    idx = jnp.argsort(jnp.where(on, 0, 1), stable=True)

    def branch(w):
        def fields(kv):
            if w == S:
                return _fields(kv, X, XT)
            sub = _fields(jax.tree.map(lambda a: a[idx[:w]], kv), X, XT)
            return tuple(jnp.zeros((S,) + F.shape[1:], F.dtype).at[idx[:w]].set(F) for F in sub)

        return fields

    return jax.lax.switch(_width_index(on), [branch(w) for w in widths(S)], kv)


def lane_objectives(P, X, mask, y, XT, segments, lam, on=None):
    """J of every lane: (S,) for P = {"k": (S, D), "v": (S, D)[, "c": (S,)]}.

    One product of X with W (D, 2S) for all lanes, or those where ``on`` only (``lane_fields``;
    the others' J is then meaningless). After it, each lane's own
    attention and penalty: ``segments`` ((σ, count), …) gives the σ of consecutive lanes (a str:
    one σ for every lane), ``lam`` the ridge λ, a scalar or (S,).
    """
    S = P["k"].shape[0]
    chi, z = (jnp.where(mask[None], F, 0.0) for F in lane_fields(P, X, XT, on))
    parts, a = [], 0
    for sigma, count in ((segments, S),) if isinstance(segments, str) else segments:
        seg = jax.tree.map(lambda x, a=a, count=count: x[a : a + count], P)
        fields = (chi[a : a + count], z[a : a + count])
        parts.append(jax.vmap(lambda p, c, zz, s=sigma: attention_from_fields(p, c, zz, mask, s))(seg, *fields))
        a += count
    if a != S:
        raise ValueError(f"segments: {a} lanes, P has {S}")
    r = y[None, :] - jnp.concatenate(parts, axis=0)  # (S, n)
    pen = jnp.sum(P["k"] ** 2, axis=1) + jnp.sum(P["v"] ** 2, axis=1)
    return (0.5 * jnp.sum(r * r, axis=1) + 0.5 * lam * pen) / y.shape[0]


def _values_and_grads(P, data, segments, lam, on=None):
    """(J (S,), ∇J per lane): the gradient of Σ_lanes J is each lane's own, the lanes being
    independent (with ``on``: only the lanes where it holds are meaningful)."""
    X, mask, y, XT = data

    def total(Q):
        values = lane_objectives(Q, X, mask, y, XT, segments, lam, on)
        return jnp.sum(values), values

    (_, values), grads = jax.value_and_grad(total, has_aux=True)(P)
    return values, grads


def lane_shaped(x, like):
    """x (S,) shaped to broadcast against the lane-stacked array ``like`` (S, …)."""
    return x.reshape(x.shape + (1,) * (like.ndim - 1))


def _along(P, t, d):
    """P + t d per lane (t (S,))."""
    return jax.tree.map(lambda p, u: p + lane_shaped(t, p) * u, P, d)


def _lane_dot(a, b):
    """⟨a, b⟩ per lane for two lane-stacked pytrees: (S,)."""
    return sum(jnp.sum((x * y).reshape(x.shape[0], -1), axis=1) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def _where(mask, a, b):
    """Lane-wise select between two lane-stacked pytrees (mask (S,))."""
    return jax.tree.map(lambda x, y: jnp.where(lane_shaped(mask, x), x, y), a, b)


def _cubic_step(a, fa, da, b, fb, db):
    """The minimiser of the cubic through (a, fa, slope da) and (b, fb, db), kept 10 % of |b − a|
    inside the interval; the midpoint where the cubic has none there (Nocedal & Wright eq. 3.59)."""
    d1 = da + db - 3.0 * (fa - fb) / (a - b)
    rad = d1 * d1 - da * db
    d2 = jnp.sign(b - a) * jnp.sqrt(jnp.maximum(rad, 0.0))
    t = b - (b - a) * (db + d2 - d1) / (db - da + 2.0 * d2)
    lo, hi = jnp.minimum(a, b), jnp.maximum(a, b)
    ok = jnp.isfinite(t) & (rad >= 0) & (t > lo + 0.1 * (hi - lo)) & (t < hi - 0.1 * (hi - lo))
    return jnp.where(ok, t, 0.5 * (a + b))


def _decrease(ft, st, t, f0, s0):
    """Sufficient decrease at step t: Armijo's, or near a minimum, where J's differences reach its
    rounding, the approximate one of Hager & Zhang (2005, eq. 23: a slope ≤ (2 C1 − 1) s0 and J ≤
    J(0) + ``APPROX_DEC_RTOL`` |J(0)|), as optax's zoom line search takes it."""
    armijo = ft <= f0 + C1 * t * s0
    approx = (st <= (2.0 * C1 - 1.0) * s0) & (ft <= f0 + APPROX_DEC_RTOL * jnp.abs(f0))
    return jnp.isfinite(ft) & (armijo | approx)


class LaneState(NamedTuple):
    """Every lane's L-BFGS run (leading axis S): the accepted point P with its J and ∇J, optax's
    ``scale_by_lbfgs`` state (vmapped), the iteration count (int32), the direction d of the
    current line search with the slope s0 = ⟨∇J, d⟩ at P, and that search's state: the trial step
    t, the bracket end ``lo`` with the lowest J satisfying Armijo (0: P itself) with its J, slope
    along d and ∇J, the other end ``hi`` (inf: not bracketed yet) with its J and slope, and the
    trials made."""

    P: dict
    value: jax.Array
    grad: dict
    lbfgs: optax.OptState
    count: jax.Array
    d: dict
    s0: jax.Array
    t: jax.Array
    lo: jax.Array
    f_lo: jax.Array
    s_lo: jax.Array
    g_lo: dict
    hi: jax.Array
    f_hi: jax.Array
    s_hi: jax.Array
    trials: jax.Array


def _new_search(s: LaneState, opt) -> LaneState:
    """The next L-BFGS direction at the accepted point (memory updated with the last step) and a
    fresh line search along it: first trial t = 1 (a non-descent direction: −∇J instead)."""
    u, lbfgs = jax.vmap(opt.update)(s.grad, s.lbfgs, s.P)
    d = jax.tree.map(jnp.negative, u)
    d = _where(_lane_dot(s.grad, d) < 0, d, jax.tree.map(jnp.negative, s.grad))
    s0 = _lane_dot(s.grad, d)
    one, zero, inf = jnp.ones_like(s0), jnp.zeros_like(s0), jnp.full_like(s0, jnp.inf)
    return s._replace(
        lbfgs=lbfgs,
        d=d,
        s0=s0,
        t=one,
        lo=zero,
        f_lo=s.value,
        s_lo=s0,
        g_lo=s.grad,
        hi=inf,
        f_hi=inf,
        s_hi=s0,
        trials=jnp.zeros_like(s.count),
    )


def _tick(s: LaneState, on, data, segments, lam, opt, compact) -> LaneState:
    """One evaluation of J and ∇J for all lanes, each at its own trial step, and the lanes where
    ``on`` moved on: the bracket updated (Nocedal & Wright Alg. 3.6), and where the search has
    ended (a strong-Wolfe step, or ``MAX_LINESEARCH_STEPS`` trials: its best Armijo step, or none)
    the step taken, the count advanced and the next search started. With ``compact`` the
    evaluation is of the ``on`` lanes only (``lane_fields``)."""
    ft, gt = _values_and_grads(_along(s.P, s.t, s.d), data, segments, lam, on if compact else None)
    st = _lane_dot(gt, s.d)
    decrease = _decrease(ft, st, s.t, s.value, s.s0)
    accept = decrease & (jnp.abs(st) <= -C2 * s.s0)
    shrink = ~accept & (~decrease | (ft >= s.f_lo))
    flip = ~shrink & ~accept & (st * (s.hi - s.lo) >= 0)  # the minimum lies back towards lo
    new_hi, new_lo = shrink | flip, ~shrink
    hi = jnp.where(new_hi, jnp.where(shrink, s.t, s.lo), s.hi)
    f_hi = jnp.where(new_hi, jnp.where(shrink, ft, s.f_lo), s.f_hi)
    s_hi = jnp.where(new_hi, jnp.where(shrink, st, s.s_lo), s.s_hi)
    lo, f_lo, s_lo = (jnp.where(new_lo, a, b) for a, b in ((s.t, s.lo), (ft, s.f_lo), (st, s.s_lo)))
    g_lo = _where(new_lo, gt, s.g_lo)
    bracketed = jnp.isfinite(hi)
    t = jnp.where(bracketed, _cubic_step(lo, f_lo, s_lo, jnp.where(bracketed, hi, 0.0), f_hi, s_hi), 2.0 * lo)
    trials = s.trials + 1
    searched = s._replace(t=t, lo=lo, f_lo=f_lo, s_lo=s_lo, g_lo=g_lo, hi=hi, f_hi=f_hi, s_hi=s_hi, trials=trials)
    ended = accept | (trials >= MAX_LINESEARCH_STEPS)
    moved = searched._replace(P=_along(s.P, lo, s.d), value=f_lo, grad=g_lo, count=s.count + 1)
    new = _where(ended, _new_search(moved, opt), searched)
    return _where(on, new, s)


def lanes_init(P, data, lam, segments, memory_size) -> LaneState:
    """The ``LaneState`` at lane-stacked params P (count 0): J and ∇J evaluated there, the first
    search started along optax's first L-BFGS direction."""
    value, grad = _values_and_grads(P, data, segments, lam)
    opt = optax.scale_by_lbfgs(memory_size=memory_size)
    lbfgs = jax.vmap(opt.init)(P)
    count = jnp.zeros(value.shape, jnp.int32)
    # the search fields are placeholders: _new_search sets every one of them
    search = dict.fromkeys(("s0", "t", "lo", "f_lo", "s_lo", "hi", "f_hi", "s_hi"), jnp.zeros_like(value))
    s = LaneState(P=P, value=value, grad=grad, lbfgs=lbfgs, count=count, d=grad, g_lo=grad, trials=count, **search)
    return _new_search(s, opt)


def lane_gnorm(grad):
    """|∇J|₂ per lane: (S,)."""
    return jnp.sqrt(_lane_dot(grad, grad))


def lanes_block(state: LaneState, data, lam, live, end, tol, segments, memory_size, counts, compact):
    """Ticks (``_tick``) until every lane where ``live`` (bool (S,)) has reached the count ``end``
    or |∇J|₂ < ``tol``; the other lanes are left as they are. Each lane's line search goes at its
    own pace: a tick costs one pass over X for the lanes it moves on (with ``compact``: in the
    narrowest of ``widths``; without, for all lanes), whatever each lane's step in its search.
    Returns (state, ``counts`` + (the ticks made, the lanes their products held)), int32."""
    opt = optax.scale_by_lbfgs(memory_size=memory_size)
    S = state.value.shape[0]

    def active(s):
        return live & (s.count < end) & (lane_gnorm(s.grad) >= tol)

    def body(c):
        s, (ticks, work) = c
        on = active(s)
        width = jnp.asarray(widths(S), jnp.int32)[_width_index(on)] if compact else S
        return _tick(s, on, data, segments, lam, opt, compact), (ticks + 1, work + width)

    return jax.lax.while_loop(lambda c: jnp.any(active(c[0])), body, (state, counts))
