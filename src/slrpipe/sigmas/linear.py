"""σ = linear: σ_ℓ = 1 + χ_ℓ, softmax linearised at 0 up to the 1/L normalisation (docs/model.md §3)."""

from __future__ import annotations

import numpy as np

from slrpipe.sigmas.base import Sigma
from slrpipe.sigmas.kernels import masked


def linear(chi, mask=None, xp=np):
    """σ_ℓ = 1 + χ_ℓ (softmax linearised at 0, up to the 1/L normalisation). Shape (..., L)."""
    return masked(1.0 + chi, mask, xp)


def _limit(chi_star: np.ndarray) -> np.ndarray:
    return chi_star  # (1 + mχ*)/m → χ*


SIGMA = Sigma(
    name="linear",
    score=linear,
    normalised=False,
    odd=True,
    offset=False,
    limit=_limit,
    limit_up_to_scale=True,
    exact_length="token_linear",
    replica=True,
    replica_note="smooth; the prox's Newton starts run along ±e_ℓ and ±ω_z",
    label="linear",
    colour="#d62728",
    marker="s",
    length_law="power",
)
