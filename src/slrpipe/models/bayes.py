"""The Bayes-optimal predictor of SLR (model.md §3–4, the paper's Prop. 4.2)."""

from __future__ import annotations

import math

import numpy as np

from slrpipe.scores import softmax


def bayes_key_scale(model: str, nu: float) -> float:
    """c_ν: √ν for spiked-SLR, ν for max-SLR (inf at ν = inf).

    Raises:
        ValueError: unknown model, ν < 0, or spiked-SLR with ν = inf.
    """
    if model not in ("spiked", "max"):
        raise ValueError(f"model: must be 'spiked' or 'max', got {model!r}")
    if not (nu >= 0):
        raise ValueError(f"nu: must be ≥ 0, got {nu}")
    if model == "spiked":
        if math.isinf(nu):
            raise ValueError("nu: spiked-SLR needs a finite nu")
        return math.sqrt(nu)
    return float(nu)


def bayes_predict(X, mask, k_star, v_star, model: str, nu: float, xp=np):
    """Posterior-mean prediction E[y | X] = Σ_ℓ p_ℓ z*_ℓ with p = softmax(c_ν χ*).

    That is softmax attention at k = c_ν k*, v = v*; at ν = inf (max-SLR) p is the one-hot
    argmax of χ* over valid tokens.

    Args:
        X: (n, L, D); mask: bool (n, L) or None; k_star, v_star: (D,) teacher (|·|² = D).
        model, nu: the data model (see ``bayes_key_scale``).
        xp: ``numpy`` or ``jax.numpy``.

    Returns:
        (n,) predictions in X's dtype.
    """
    c = bayes_key_scale(model, nu)
    D = X.shape[-1]
    W = xp.stack([xp.asarray(k_star), xp.asarray(v_star)], axis=1).astype(X.dtype) / math.sqrt(D)
    P = X @ W
    chi, z = P[..., 0], P[..., 1]
    if mask is not None:
        chi = xp.where(mask, chi, 0.0)
        z = xp.where(mask, z, 0.0)
    if math.isinf(c):
        m = chi if mask is None else xp.where(mask, chi, -xp.inf)
        idx = xp.argmax(m, axis=-1)
        return xp.take_along_axis(z, idx[..., None], axis=-1)[..., 0]
    p = softmax(c * chi, mask, xp=xp)
    return xp.sum(p * z, axis=-1)
