"""Array kernels the score functions share (docs/model.md §3): masking, a reduction over the token
axis, the masked softmax normalisation, softplus and its log, and the erf of the array backend.

Every function takes ``xp``, ``numpy`` or ``jax.numpy``; both give the same numbers. Arrays are
(..., L) with an optional boolean ``mask`` of the same shape (True = real token).
"""

from __future__ import annotations

import functools

import numpy as np


def erf_of(xp):
    """The error function of the backend ``xp`` (scipy's for numpy, jax.scipy's for jax.numpy)."""
    if xp is np:
        from scipy.special import erf
    else:
        from jax.scipy.special import erf
    return erf


def masked(x, mask, xp):
    """``x`` with padded tokens (mask False) set to 0; ``x`` itself when ``mask`` is None."""
    return x if mask is None else xp.where(mask, x, 0.0)


#: numpy reduces a short last axis row by row (~5× slower than the exp of the same array at L = 3);
#: below this length the reductions go column by column: the same sequential order, the same bits
_COLUMNS_BELOW = 8


def last_axis(ufunc, x, xp):
    """ufunc.reduce over the last axis, keepdims (column by column for short numpy axes);
    ``ufunc``: ``np.maximum`` or ``np.add``."""
    if xp is np and x.shape[-1] < _COLUMNS_BELOW:
        return functools.reduce(ufunc, (x[..., i] for i in range(x.shape[-1])))[..., None]
    return (xp.max if ufunc is np.maximum else xp.sum)(x, axis=-1, keepdims=True)


def softmax(chi, mask=None, xp=np):
    """σ_ℓ = exp(χ_ℓ) / Σ_ℓ' exp(χ_ℓ') over valid tokens; stable (max subtracted). Shape (..., L)."""
    neg = -xp.inf
    z = chi if mask is None else xp.where(mask, chi, neg)
    zmax = last_axis(np.maximum, z, xp)
    zmax = xp.where(xp.isfinite(zmax), zmax, 0.0)
    e = xp.exp(z - zmax)
    e = masked(e, mask, xp)
    return e / last_axis(np.add, e, xp)


def softplus(x, xp=np):
    """log(1 + e^x), stable for large |x|."""
    return xp.maximum(x, 0.0) + xp.log1p(xp.exp(-xp.abs(x)))


def log_softplus(x, xp=np):
    """log softplus(x), finite for every x: below x = −30, log log1p(eˣ) = x − eˣ/2 + O(e²ˣ) ≈ x to
    1e-13 relative (the log of the underflowed softplus would be −∞, and its gradient NaN)."""
    small = x < -30.0
    safe = xp.where(small, 0.0, x)  # keeps the unused branch finite, so gradients stay finite too
    return xp.where(small, x, xp.log(softplus(safe, xp)))


def argmax_indicator(chi_star: np.ndarray) -> np.ndarray:
    """One-hot of the largest field per row (numpy, (n, L) → (n, L)): the limit of softmax(m χ*)."""
    return np.eye(chi_star.shape[-1])[np.argmax(chi_star, axis=-1)]
