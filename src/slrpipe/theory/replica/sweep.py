"""Replica sweeps over (λ, α) as ``xarray.Dataset``s, warm-started along α (from large α down)."""

from __future__ import annotations

import logging
import math

import numpy as np
import xarray as xr

from slrpipe.theory.replica.fields import draw_fields
from slrpipe.theory.replica.solver import CONJ, STATE, solve_replica

log = logging.getLogger(__name__)

OUTPUTS = ("test_error", "train_loss", "objective") + STATE + CONJ + (
    "iterations", "residual", "converged", "wall_time", "Vhat_k_jac", "Vhat_v_jac",
    "prox_multi", "prox_unconverged", "train_loss_se") + tuple(c + "_se" for c in CONJ)


def replica_sweep(sigma, model, nu, L, delta, lams, alphas, *, n_samples=20000, seed=0, **kw) -> xr.Dataset:
    """RS fixed points on the grid lams × alphas (docs/theory.md), warm-started along α.

    Args: as :func:`solve_replica`; ``lams``, ``alphas``: 1-D sequences of positive floats
    (α solved in decreasing order, each from the previous converged solution). ``kw`` go to
    :func:`solve_replica` (damping, tol, max_iter, vhat, n_steps).
    Returns:
        Dataset with dims (lam, alpha): every output of ``solve_replica`` (``OUTPUTS``); plus
        test_error_opt_lam (alpha) = min over the λ grid of the converged points and lam_opt
        (alpha). Scalar coords sigma, model, nu, L, delta; attrs n_samples, seed and
        test_error_mc_se (a typical Monte Carlo standard error of test_error, measured by
        re-solving the largest-α point with seed + 1 at the best λ; |difference|/√2).
    Raises:
        ValueError: empty or non-positive grids, or any argument of ``solve_replica``.
    """
    lams = np.asarray(sorted(float(v) for v in lams))
    alphas = np.asarray(sorted(float(v) for v in alphas))
    if lams.size == 0 or np.any(lams <= 0):
        raise ValueError(f"lams: need a non-empty grid of λ > 0, got {lams.tolist()}")
    if alphas.size == 0 or np.any(alphas <= 0):
        raise ValueError(f"alphas: need a non-empty grid of α > 0, got {alphas.tolist()}")
    fields = draw_fields(model, float(nu), int(L), float(delta), n_samples, seed)
    data = {k: np.full((lams.size, alphas.size), np.nan) for k in OUTPUTS}
    data["converged"] = np.zeros((lams.size, alphas.size), bool)
    for i, lam in enumerate(lams):
        init = None
        # continuation from large α down: the large-α fixed point is close to the population
        # optimum and easy to reach; linear σ diverges from a cold start at small α
        for j in reversed(range(alphas.size)):
            alpha = alphas[j]
            r = solve_replica(sigma, model, nu, L, delta, lam, alpha, fields=fields, init=init, **kw)
            for k in OUTPUTS:
                data[k][i, j] = r[k]
            init = {k: r[k] for k in STATE} if r["converged"] else init
            log.info("replica %s %s ν=%g L=%d λ=%g α=%g: e_test=%.5f converged=%s it=%d (%.1fs)",
                     sigma, model, nu, L, lam, alpha, r["test_error"], r["converged"],
                     r["iterations"], r["wall_time"])
    te = np.where(data["converged"], data["test_error"], np.inf)
    best = np.argmin(te, axis=0)
    opt = te[best, np.arange(alphas.size)]
    ds = xr.Dataset({k: (("lam", "alpha"), v) for k, v in data.items()},
                    coords=dict(lam=lams, alpha=alphas, sigma=sigma, model=model, nu=float(nu),
                                L=int(L), delta=float(delta)))
    ds["test_error_opt_lam"] = ("alpha", np.where(np.isfinite(opt), opt, np.nan))
    ds["lam_opt"] = ("alpha", np.where(np.isfinite(opt), lams[best], np.nan))
    ds.attrs.update(n_samples=int(fields.n), seed=int(seed), theory="replica-symmetric, zero temperature",
                    test_error_mc_se=_mc_se(sigma, model, nu, L, delta, lams[best[-1]], alphas[-1],
                                            n_samples, seed, ds, **kw))
    return ds


def _mc_se(sigma, model, nu, L, delta, lam, alpha, n_samples, seed, ds, **kw) -> float:
    """Seed-to-seed spread of test_error at one point (|e(seed) − e(seed+1)| / √2)."""
    e0 = float(ds.test_error.sel(lam=lam, alpha=alpha))
    init = {k: float(ds[k].sel(lam=lam, alpha=alpha)) for k in STATE}
    r = solve_replica(sigma, model, nu, L, delta, lam, alpha, n_samples=n_samples, seed=seed + 1,
                      init=init, **kw)
    return abs(r["test_error"] - e0) / math.sqrt(2) if r["converged"] else math.nan
