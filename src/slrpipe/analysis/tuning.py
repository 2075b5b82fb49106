"""Regularisation tuned per α on a λ grid, as the paper's finite-α figure is drawn.

Theory: the minimum of the replica test error over the λ grid (``test_error_opt_lam`` / ``lam_opt``
of the replica node, :mod:`slrpipe.analysis.aggregate`). ERM: for each (σ, α) the λ of the grid whose
runs have the lowest mean finite-test-set error over seeds — the test set is drawn independently of
the training set, so it serves as the validation set of a grid search — and reported there by
``report`` (by default the population risk at the learned weights, which the selection never saw).
"""

from __future__ import annotations

import numpy as np
import xarray as xr


def best_lam(erm: xr.Dataset, select: str = "test_error") -> xr.DataArray:
    """λ* (dims sigma, alpha): the grid λ with the lowest seed-mean of ``select``; NaN where no run
    of that (σ, α) finished.

    Raises:
        KeyError: ``select`` not in ``erm``.
    """
    m = erm[select].mean("seed")
    return m.fillna(np.inf).idxmin("lam").where(m.notnull().any("lam"))


def at_best_lam(erm: xr.Dataset, report: str = "test_error_pop", select: str = "test_error") -> xr.DataArray:
    """``report`` (dims sigma, alpha, seed) of the runs at :func:`best_lam`; coordinate ``lam`` = λ*.

    Raises:
        KeyError: ``report`` or ``select`` not in ``erm``.
    """
    lam = best_lam(erm, select)
    out = erm[report].sel(lam=lam.fillna(erm["lam"].values[0])).where(lam.notnull())
    return out.assign_coords(lam=lam)
