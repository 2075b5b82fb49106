"""The Bayes-optimal predictor of SLR (model.md §3–4, the paper's Prop. 4.2)."""

from __future__ import annotations

import math

import numpy as np

from slrpipe.scores import softmax
from slrpipe.vocabulary import c_nu, project


def bayes_predict(X, mask, k_star, v_star, model: str, nu: float, xp=np):
    """Posterior-mean prediction E[y | X] = Σ_ℓ p_ℓ z*_ℓ with p = softmax(c_ν χ*).

    That is softmax attention at k = c_ν k*, v = v*; at ν = inf (max-SLR) p is the one-hot
    argmax of χ* over valid tokens.

    Args:
        X: (n, L, D); mask: bool (n, L) or None; k_star, v_star: (D,) teacher (|·|² = D).
        model, nu: the data model (c_ν: ``slrpipe.vocabulary.c_nu``).
        xp: ``numpy`` or ``jax.numpy``.

    Returns:
        (n,) predictions in X's dtype.
    """
    c = c_nu(model, nu)
    chi, z = project(X, k_star, v_star, mask, xp)
    if math.isinf(c):
        m = chi if mask is None else xp.where(mask, chi, -xp.inf)
        idx = xp.argmax(m, axis=-1)
        return xp.take_along_axis(z, idx[..., None], axis=-1)[..., 0]
    p = softmax(c * chi, mask, xp=xp)
    return xp.sum(p * z, axis=-1)
