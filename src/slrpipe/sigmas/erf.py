"""σ = element-wise erf: σ_ℓ = 1 + erf(c + χ_ℓ), c a learned scalar offset; growth without
normalisation (docs/model.md §3)."""

from __future__ import annotations

import numpy as np

from slrpipe.sigmas.base import Sigma
from slrpipe.sigmas.kernels import erf_of, masked


def erf(chi, mask=None, xp=np, c=0.0):
    """σ_ℓ = 1 + erf(c + χ_ℓ), c a learned scalar offset. Shape (..., L)."""
    return masked(1.0 + erf_of(xp)(c + chi), mask, xp)


def _limit(chi_star: np.ndarray) -> np.ndarray:
    return 1.0 + np.sign(chi_star)  # any finite c: erf(c + mχ*) → sign χ*


SIGMA = Sigma(
    name="erf",
    score=erf,
    normalised=False,
    odd=True,
    offset=True,
    limit=_limit,
    limit_up_to_scale=True,
    exact_length="token_erf",
    replica=False,
    replica_note="its learned offset c would be another order parameter, which the solver does not have",
    label="element-wise erf",
    colour="#2ca02c",
    marker="^",
    length_law="log",
)
