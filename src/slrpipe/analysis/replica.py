"""The replica sweep read where ERM was run: its node for a data setting and its values
interpolated in log α to an ERM point's realised α.

ERM records its realised α = n/D, which the integer n puts within 1/(2D) of the nominal grid
value; a replica grid point within :data:`ALPHA_RTOL` (relative) of it is that point, and between
two grid points the value is interpolated linearly in log α (docs/results.md §2). The validation
table (slrpipe.analysis.comparison) and the figure 'optimization' read the theory this one way.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

#: a replica grid point within this relative distance of α is that point (the theory moves by ≲ 10⁻³ there)
ALPHA_RTOL = 5e-3
#: the coordinates that make a data setting (a replica node and an ERM node of the same one)
SETTING = ("model", "nu", "L", "delta")


def setting(ds: xr.Dataset) -> tuple:
    """The data setting of a node: its (model, ν, L, Δ) coordinates as strings (None where absent)."""
    return tuple(str(ds[k].values) if k in ds.coords else None for k in SETTING)


def replica_node(tree: xr.DataTree, of_setting: tuple) -> xr.Dataset | None:
    """The first replica node of the store ``tree`` with the data setting ``of_setting``
    (:func:`setting`), or None."""
    for node in (tree.get("replica") or {}).values():
        ds = node.to_dataset()
        if setting(ds) == of_setting:
            return ds
    return None


def alpha_weights(grid, alpha: float) -> tuple[list[int], float] | None:
    """Where ``alpha`` lies on the ascending replica α ``grid``: ([i, i], 0.0) at a grid point
    within ``ALPHA_RTOL``, else ([i − 1, i], w) with the log-α weight w of point i; None outside the
    grid. The value there is (1 − w)·v[i₀] + w·v[i₁]."""
    a = np.asarray(grid, float)
    near = np.abs(np.log(a / alpha)) <= ALPHA_RTOL
    if near.any():
        i = int(np.argmax(near))
        return [i, i], 0.0
    if alpha < a.min() or alpha > a.max():
        return None
    i = int(np.searchsorted(a, alpha))
    return [i - 1, i], float((np.log(alpha) - np.log(a[i - 1])) / (np.log(a[i]) - np.log(a[i - 1])))


def replica_at(rep: xr.Dataset | None, sigma: str, lam: float, alpha: float, var: str = "test_error") -> float:
    """``var`` of the replica node ``rep`` at (σ, λ), interpolated in log α to ``alpha``
    (:func:`alpha_weights`); NaN where there is no node, or it lacks ``var``, σ or λ, or ``alpha``
    lies outside its α grid."""
    if rep is None or var not in rep or sigma not in rep["sigma"].values:
        return np.nan
    lams = rep["lam"].values
    if not np.isclose(lams, lam).any():
        return np.nan
    at = alpha_weights(rep["alpha"].values, alpha)
    if at is None:
        return np.nan
    idx, w = at
    v = rep[var].sel(sigma=sigma).isel(lam=int(np.argmax(np.isclose(lams, lam))), alpha=idx).values.astype(float)
    return float((1 - w) * v[0] + w * v[1])
