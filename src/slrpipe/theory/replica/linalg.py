"""Cholesky factorisation and solves of one small dense system (docs/theory.md §5, §9).

Written for ``jax.vmap`` over many (10⁴–10⁵) independent n × n systems, n = L or 2L. Up to
n = 6 (``_UNROLL_MAX``: L = 3's Newton systems and finish) each function is written out entry by
entry on scalars, which XLA fuses into one pass over the lanes; above, it is a
``lax.fori_loop`` over the n columns whose body is elementwise products and sums over whole rows,
so that the compiled program has the same size at every n > 6 (compile time independent of L; a
factorisation written out at every n grew like n³ in program size). The work is the textbook
O(n³) per factorisation and O(n²) per right-hand side. No LAPACK: batched LAPACK calls on tiny
matrices dominate the run time on CPU (and were seen to hang jax 0.10.2 there). Products are
written as ``sum(a * b)``, not as ``dot``, so that XLA fuses them across the vmapped batch.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

#: systems up to this size are written out entry by entry (measured, one full multi-start prox
#: pass at L = 3, softmax, 4096 samples: 0.31 s of CPU looped with the loop unrolled, 0.21 s
#: written out); the program size is then bounded by that of n = _UNROLL_MAX, and constant above
_UNROLL_MAX = 6


def _loop(n, body, init):
    return lax.fori_loop(0, n, body, init)


def _cholesky_small(A, tiny):
    """:func:`cholesky` written out entry by entry (n ≤ _UNROLL_MAX): scalar arithmetic that XLA
    fuses into one pass over the vmapped lanes."""
    n = A.shape[0]
    Lm = [[jnp.zeros((), A.dtype)] * n for _ in range(n)]
    ok = jnp.asarray(True)
    for j in range(n):
        d = A[j, j] - sum(Lm[j][k] ** 2 for k in range(j))
        ok = ok & (d > tiny)
        d = jnp.sqrt(jnp.maximum(d, 1e-300))
        Lm[j][j] = d
        for i in range(j + 1, n):
            Lm[i][j] = (A[i, j] - sum(Lm[i][k] * Lm[j][k] for k in range(j))) / d
    return jnp.stack([jnp.stack(row) for row in Lm]), ok


def _forward_small(Lm, b2):
    n = Lm.shape[0]
    x = [None] * n
    for i in range(n):
        x[i] = (b2[i] - sum(Lm[i, k] * x[k] for k in range(i))) / Lm[i, i]
    return jnp.stack(x)


def _backward_small(Lm, b2):
    n = Lm.shape[0]
    x = [None] * n
    for i in reversed(range(n)):
        x[i] = (b2[i] - sum(Lm[k, i] * x[k] for k in range(i + 1, n))) / Lm[i, i]
    return jnp.stack(x)


def cholesky(A, tiny):
    """Lower Cholesky factor of the symmetric A (n, n), and ok = every pivot > ``tiny``.

    Where a pivot d ≤ tiny (A not positive definite to that margin) the factorisation goes on with
    √max(d, 10⁻³⁰⁰), so the factor stays finite; the caller must not use it where ok is False.
    Left-looking: column j is (A[:, j] − Σ_{k<j} L[:, k] L[j, k]) / L[j, j].
    """
    n = A.shape[0]
    if n <= _UNROLL_MAX:
        return _cholesky_small(A, tiny)
    idx = jnp.arange(n)

    def body(j, carry):
        Lm, ok = carry
        row = Lm[j]  # L[j, k], zero for k ≥ j
        d = A[j, j] - jnp.sum(row * row)
        ok = ok & (d > tiny)
        dj = jnp.sqrt(jnp.maximum(d, 1e-300))
        col = (A[:, j] - jnp.sum(Lm * row[None, :], axis=1)) / dj
        col = jnp.where(idx > j, col, jnp.where(idx == j, dj, 0.0))
        return Lm.at[:, j].set(col), ok

    return _loop(n, body, (jnp.zeros_like(A), jnp.asarray(True)))


def forward(Lm, b):
    """x = L⁻¹ b for the lower-triangular Lm (n, n) with a non-zero diagonal; b (n,) or (n, m)."""
    n = Lm.shape[0]
    b2 = b.reshape(n, -1)
    if n <= _UNROLL_MAX:
        return _forward_small(Lm, b2).reshape(b.shape)

    def body(i, x):  # rows ≥ i of x are still zero
        xi = (b2[i] - jnp.sum(Lm[i][:, None] * x, axis=0)) / Lm[i, i]
        return x.at[i].set(xi)

    return _loop(n, body, jnp.zeros_like(b2)).reshape(b.shape)


def backward(Lm, b):
    """x = L⁻ᵀ b for the lower-triangular Lm (n, n) with a non-zero diagonal; b (n,) or (n, m)."""
    n = Lm.shape[0]
    b2 = b.reshape(n, -1)
    if n <= _UNROLL_MAX:
        return _backward_small(Lm, b2).reshape(b.shape)

    def body(k, x):  # rows ≤ i of x are still zero
        i = n - 1 - k
        xi = (b2[i] - jnp.sum(Lm[:, i][:, None] * x, axis=0)) / Lm[i, i]
        return x.at[i].set(xi)

    return _loop(n, body, jnp.zeros_like(b2)).reshape(b.shape)


def chol_solve(A, b, tiny):
    """Solve A x = b (A (n, n) symmetric, b (n,) or (n, m)) by Cholesky; ok = A positive definite
    with every pivot > ``tiny`` (x is meaningless where ok is False)."""
    Lm, ok = cholesky(A, tiny)
    return backward(Lm, forward(Lm, b)), ok


def inverse_diagonal(Lm):
    """diag(A⁻¹) from the Cholesky factor Lm of A: (A⁻¹)_ii = Σ_k (L⁻¹)_ki², shape (n,)."""
    X = forward(Lm, jnp.eye(Lm.shape[0], dtype=Lm.dtype))
    return jnp.sum(X * X, axis=0)
