"""ERM over a D ladder in the store: the largest rung, and the D → ∞ limit of one point.

An ERM experiment with ``D: [D₁, D₂, …]`` (slrpipe.config.ladder) is aggregated with a ``D``
dim (slrpipe.analysis.aggregate.erm_node). Figures draw its largest D (:func:`largest_D`); the
validation table (slrpipe.analysis.comparison) also gets, per (σ, λ, α), the per-D seed means and
their extrapolation D → ∞ (:func:`point_ladder`, by slrpipe.analysis.extrapolate: a + b/D or
a + b/√D, the lower χ², error bar Birge-inflated ⊕ the law-choice systematic). Source:
docs/validation.md §2 (the D ladders).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from slrpipe.analysis.extrapolate import Extrapolation, extrapolate, ladder_means


def largest_D(node: xr.Dataset) -> xr.Dataset:
    """``node`` at its largest D (D kept as a scalar coordinate); a node without a D dim as it is."""
    return node.sel(D=node["D"].max()) if "D" in node.dims else node


@dataclass(frozen=True)
class PointLadder:
    """One quantity of one (σ, λ, α) point over the ladder: per-D seed mean and s.e. (t-corrected,
    slrpipe.analysis.extrapolate.ladder_means) and the extrapolation (None when fewer than 2 rungs
    have ≥ 2 finite seeds)."""

    D: np.ndarray  # (k,) rungs with ≥ 2 finite seeds, ascending
    mean: np.ndarray  # (k,)
    se: np.ndarray  # (k,)
    fit: Extrapolation | None


def point_ladder(values: xr.DataArray) -> PointLadder:
    """Per-D means and the D → ∞ extrapolation of ``values`` (dims D and seed, one (σ, λ, α) point).

    Rungs with fewer than 2 finite seeds (no error estimate) are left out; a rung whose seeds all
    agree exactly (s.e. 0, e.g. an interpolating minimum) cannot weight a fit and is left out too.
    Raises: ValueError: ``values`` lacks the dims D or seed.
    """
    if set(values.dims) != {"D", "seed"}:
        raise ValueError(f"values: need dims (D, seed), got {values.dims}")
    v = values.transpose("D", "seed")
    keep = [i for i in range(v.sizes["D"]) if int(np.isfinite(v.values[i]).sum()) >= 2]
    if not keep:
        return PointLadder(np.array([]), np.array([]), np.array([]), None)
    Ds = np.repeat(v["D"].values[keep], v.sizes["seed"])
    D, mean, se = ladder_means(Ds, v.values[keep].ravel())
    ok = se > 0
    fit = extrapolate(D[ok], mean[ok], se[ok]) if int(ok.sum()) >= 2 else None
    return PointLadder(D, mean, se, fit)
