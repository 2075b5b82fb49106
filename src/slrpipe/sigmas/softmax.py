"""σ = softmax, the paper's attention: σ_ℓ = e^{χ_ℓ} / Σ e^{χ_ℓ'} (docs/model.md §3)."""

from __future__ import annotations

from slrpipe.sigmas.base import Sigma
from slrpipe.sigmas.kernels import argmax_indicator, softmax

SIGMA = Sigma(
    name="softmax",
    score=softmax,
    normalised=True,
    odd=False,
    offset=False,
    limit=argmax_indicator,  # m → ∞: the argmax of the fields
    limit_up_to_scale=False,
    exact_length="normalised_exp",
    replica=True,
    replica_note="smooth; the prox's Newton starts spread towards each token",
    label="softmax",
    colour="#1f77b4",
    marker="o",
    length_law="log",
)
