"""Statistics over the seeds of an ERM experiment (the store's ``seed`` dim)."""

from __future__ import annotations

import numpy as np
import xarray as xr


def mean_se(da: xr.DataArray, dim="seed") -> tuple[xr.DataArray, xr.DataArray]:
    """Mean over ``dim`` and its standard error, s.d. (ddof 1) / √count; NaN values (failed or
    absent runs) are left out, the s.e. is NaN where fewer than two values remain.

    Args:
        da: values with dim ``dim`` (any other dims are kept).
        dim: the dim averaged over, or a tuple of dims, or None for all.
    Returns:
        (mean, se), DataArrays without ``dim``.
    """
    n = da.count(dim)
    return da.mean(dim), (da.std(dim, ddof=1) / np.sqrt(n)).where(n > 1)


def point_mean_se(x: xr.DataArray) -> tuple[float, float, int]:
    """:func:`mean_se` over every dim of ``x`` (the seeds of one point) as floats, and the count of
    values: (NaN, NaN, 0) where there is none."""
    k = int(x.count())
    if k == 0:
        return np.nan, np.nan, 0
    mean, se = mean_se(x, dim=None)
    return float(mean), float(se), k
