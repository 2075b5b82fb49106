"""Cholesky factorisation and solves of one small dense system, as loops (docs/theory.md §5, §9).

Written for ``jax.vmap`` over many (10⁴–10⁵) independent n × n systems, n = L or 2L: each
function is a ``lax.fori_loop`` over the n columns whose body is elementwise products and sums over
whole rows, so that the compiled program has the same size at every n > 6 (compile time independent
of L; up to n = 6 the loop is unrolled, ``_UNROLL_MAX``; the Python-unrolled factorisation it
replaces grew like n³ in program size at every n) and the work is the textbook O(n³) per
factorisation and O(n²) per right-hand side. No LAPACK: batched LAPACK calls on
tiny matrices dominate the run time on CPU (and were seen to hang jax 0.10.2 there). Products are
written as ``sum(a * b)``, not as ``dot``, so that XLA fuses them across the vmapped batch.
"""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

#: systems up to this size have their column loop unrolled (fewer, fused passes over the lanes:
#: at L = 3 the looped prox cost 25 % more CPU than the unrolled one); the program size is then
#: bounded by that of n = _UNROLL_MAX, and constant above it
_UNROLL_MAX = 6


def _loop(n, body, init):
    return lax.fori_loop(0, n, body, init, unroll=n if n <= _UNROLL_MAX else 1)


def cholesky(A, tiny):
    """Lower Cholesky factor of the symmetric A (n, n), and ok = every pivot > ``tiny``.

    Where a pivot d ≤ tiny (A not positive definite to that margin) the factorisation goes on with
    √max(d, 10⁻³⁰⁰), so the factor stays finite; the caller must not use it where ok is False.
    Left-looking: column j is (A[:, j] − Σ_{k<j} L[:, k] L[j, k]) / L[j, j].
    """
    n = A.shape[0]
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

    def body(i, x):  # rows ≥ i of x are still zero
        xi = (b2[i] - jnp.sum(Lm[i][:, None] * x, axis=0)) / Lm[i, i]
        return x.at[i].set(xi)

    return _loop(n, body, jnp.zeros_like(b2)).reshape(b.shape)


def backward(Lm, b):
    """x = L⁻ᵀ b for the lower-triangular Lm (n, n) with a non-zero diagonal; b (n,) or (n, m)."""
    n = Lm.shape[0]
    b2 = b.reshape(n, -1)

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
