"""Score functions σ of the attention estimators f(X) = σ(χ)ᵀ z (model.md §3).

Every function takes the key fields ``chi`` of shape (..., L) — χ_ℓ = x_ℓ·k/√D — and an optional
boolean ``mask`` of the same shape (True = real token). Padded tokens get score 0 and never enter
a normalisation. ``xp`` selects the array backend (``numpy`` for the theory's vectorised
quadratures, ``jax.numpy`` for training); both give the same numbers.

Source: model.md §3 table; softmax = the paper's attention, linear = its linearisation at 0,
erf = element-wise growth without normalisation, softplus_norm = normalisation with
sub-exponential growth.
"""

from __future__ import annotations

import functools

import numpy as np

from slrpipe.vocabulary import check_sigma


def _erf(xp):
    if xp is np:
        from scipy.special import erf
    else:
        from jax.scipy.special import erf
    return erf


def _masked(x, mask, xp):
    return x if mask is None else xp.where(mask, x, 0.0)


#: numpy reduces a short last axis row by row (~5× slower than the exp of the same array at L = 3);
#: below this length the reductions go column by column: the same sequential order, the same bits
_COLUMNS_BELOW = 8


def _last_axis(ufunc, x, xp):
    """ufunc.reduce over the last axis, keepdims (column by column for short numpy axes)."""
    if xp is np and x.shape[-1] < _COLUMNS_BELOW:
        return functools.reduce(ufunc, (x[..., i] for i in range(x.shape[-1])))[..., None]
    return (xp.max if ufunc is np.maximum else xp.sum)(x, axis=-1, keepdims=True)


def softmax(chi, mask=None, xp=np):
    """σ_ℓ = exp(χ_ℓ) / Σ_ℓ' exp(χ_ℓ') over valid tokens; stable (max subtracted). Shape (..., L)."""
    neg = -xp.inf
    z = chi if mask is None else xp.where(mask, chi, neg)
    zmax = _last_axis(np.maximum, z, xp)
    zmax = xp.where(xp.isfinite(zmax), zmax, 0.0)
    e = xp.exp(z - zmax)
    e = _masked(e, mask, xp)
    return e / _last_axis(np.add, e, xp)


def linear(chi, mask=None, xp=np):
    """σ_ℓ = 1 + χ_ℓ (softmax linearised at 0, up to the 1/L normalisation). Shape (..., L)."""
    return _masked(1.0 + chi, mask, xp)


def erf(chi, mask=None, xp=np, c=0.0):
    """σ_ℓ = 1 + erf(c + χ_ℓ), c a learned scalar offset. Shape (..., L)."""
    return _masked(1.0 + _erf(xp)(c + chi), mask, xp)


def softplus(x, xp=np):
    """log(1 + e^x), stable for large |x|."""
    return xp.maximum(x, 0.0) + xp.log1p(xp.exp(-xp.abs(x)))


def log_softplus(x, xp=np):
    """log softplus(x), finite for every x: below x = −30, log log1p(eˣ) = x − eˣ/2 + O(e²ˣ) ≈ x to
    1e-13 relative (the log of the underflowed softplus would be −∞, and its gradient NaN)."""
    small = x < -30.0
    safe = xp.where(small, 0.0, x)  # keeps the unused branch finite, so gradients stay finite too
    return xp.where(small, x, xp.log(softplus(safe, xp)))


def softplus_norm(chi, mask=None, xp=np):
    """σ_ℓ = softplus(χ_ℓ) / Σ_ℓ' softplus(χ_ℓ') over valid tokens. Shape (..., L).

    Computed as a softmax of log softplus(χ), so it stays finite when every softplus underflows
    (large negative χ): there the weights tend to softmax(χ)."""
    return softmax(log_softplus(chi, xp), mask, xp)


def score(name, chi, mask=None, xp=np, c=0.0):
    """Dispatch on the σ name (one of ``SIGMAS``); ``c`` is used by ``erf`` only.

    Raises:
        ValueError: unknown ``name``.
    """
    if name == "softmax":
        return softmax(chi, mask, xp)
    if name == "linear":
        return linear(chi, mask, xp)
    if name == "erf":
        return erf(chi, mask, xp, c)
    if name == "softplus_norm":
        return softplus_norm(chi, mask, xp)
    check_sigma(name)
    raise AssertionError(f"score {name!r} is in SIGMAS but has no implementation")
