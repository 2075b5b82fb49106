"""σ = softplus_norm: σ_ℓ = softplus(χ_ℓ) / Σ softplus(χ_ℓ'), normalisation with sub-exponential
growth (docs/model.md §3)."""

from __future__ import annotations

import numpy as np

from slrpipe.sigmas.base import Sigma
from slrpipe.sigmas.kernels import argmax_indicator, log_softplus, softmax


def softplus_norm(chi, mask=None, xp=np):
    """σ_ℓ = softplus(χ_ℓ) / Σ_ℓ' softplus(χ_ℓ') over valid tokens. Shape (..., L).

    Computed as a softmax of log softplus(χ), so it stays finite when every softplus underflows
    (large negative χ): there the weights tend to softmax(χ)."""
    return softmax(log_softplus(chi, xp), mask, xp)


def _limit(chi_star: np.ndarray) -> np.ndarray:
    """relu-normalised; the argmax where every field is < 0 (there the weights tend to softmax(mχ*))."""
    relu = np.maximum(chi_star, 0.0)
    tot = relu.sum(axis=-1, keepdims=True)
    return np.where(tot > 0, relu / np.where(tot > 0, tot, 1.0), argmax_indicator(chi_star))


SIGMA = Sigma(
    name="softplus_norm",
    score=softplus_norm,
    normalised=True,
    odd=False,
    offset=False,
    limit=_limit,
    limit_up_to_scale=False,
    exact_length="normalised_softplus",
    replica=True,
    replica_note="smooth; the prox's Newton starts spread towards each token",
    label="softplus (normalised)",
    colour="#ff7f0e",
    marker="D",
    length_law="log",
)
