"""Optimal population risk against the sequence length L (docs/theory.md §12; the paper's Cor. 4.3, 4.4).

For one σ (or the Bayes oracle): the optimum over overlaps on an (L, ν) grid; optionally the ν at
which the excess risk R* − Δ² reaches a target (root of a decreasing function of log ν), and the
optimum under a variable length L ~ Uniform{1, …, L_max} with shared (k, v) over a ν grid. All
through :mod:`slrpipe.theory.population` with the exact-in-L reductions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: xarray is imported where a Dataset is built
    import xarray

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from slrpipe.setting import Setting
from slrpipe.theory.population import bayes_risk, optimal_risk
from slrpipe.theory.quadrature import QuadSpec
from slrpipe.vocabulary import BAYES, check_delta, check_model_nu, check_sigma

log = logging.getLogger(__name__)

_NU_MAX = 1e7  # largest ν searched for the target (linear at L = 10⁴ needs ~10⁵ for excess 0.1)


def _optimum(sigma, setting: Setting, quad) -> float:
    """The optimal population risk of σ in ``setting`` (the Bayes risk for sigma = "bayes")."""
    if sigma == BAYES:
        return bayes_risk(setting, quad=quad)
    return optimal_risk(sigma, setting, quad=quad)["risk"]


def nu_for_risk(sigma, model, L, target: float, *, quad: QuadSpec | None = None) -> float:
    """Smallest ν with optimal excess risk ≤ ``target`` (the risk decreases in ν): Brent's method
    on log ν to relative 1e-8 in ν (the optimiser's tolerance dominates). 0 if already met at
    ν = 0; NaN if not met by ν = 10⁷.

    Raises:
        ValueError: target not in (0, 1), bad σ/model/L.
    """
    if not 0 < target < 1:
        raise ValueError(f"target: must be in (0, 1), got {target}")
    quad = quad or QuadSpec()
    f = lambda lg: _optimum(sigma, Setting(model, math.exp(lg), L), quad) - target
    if _optimum(sigma, Setting(model, 0.0, L), quad) <= target:
        return 0.0
    lo, hi = math.log(1e-3), math.log(10.0)
    while f(hi) > 0:
        lo, hi = hi, hi + math.log(10.0)
        if hi > math.log(_NU_MAX):
            return math.nan
    return float(math.exp(brentq(f, lo, hi, xtol=1e-9, rtol=1e-9)))


@dataclass(frozen=True)
class LengthOptions:
    """The optional outputs of :func:`length_sweep` (docs/theory.md §12; Cor. 4.3, 4.4).

    target_risk: float in (0, 1) or None: also the ν at which the optimal excess risk R* − Δ²
    equals it, per L (:func:`nu_for_risk`).  var_L_max: int ≥ 1 or None: also the optimum for
    L ~ Uniform{1, …, var_L_max} with shared (k, v), on the ν grid ``var_nus`` (a sequence of
    floats ≥ 0, max-SLR: inf allowed; stored as a tuple).

    Raises:
        ValueError: target_risk outside (0, 1), or var_L_max not an integer ≥ 1.
    """

    target_risk: float | None = None
    var_L_max: int | None = None
    var_nus: Sequence[float] = ()

    def __post_init__(self):
        if self.target_risk is not None and not 0 < self.target_risk < 1:
            raise ValueError(f"target_risk: must be in (0, 1), got {self.target_risk}")
        if self.var_L_max is not None and (int(self.var_L_max) != self.var_L_max or self.var_L_max < 1):
            raise ValueError(f"var_L_max: must be an integer ≥ 1, got {self.var_L_max}")
        object.__setattr__(self, "var_nus", tuple(self.var_nus))


def _grid_risks(sigma, model, Ls, nus, delta, quad):
    """(risk, m_k, risk_err), each (L, nu), of the optimum (or the Bayes risk) on the grid."""
    risk, m_k, err = (np.full((Ls.size, nus.size), np.nan) for _ in range(3))
    for i, L in enumerate(Ls):
        for j, nu in enumerate(nus):
            setting = Setting(model, nu, int(L), delta)
            if sigma == BAYES:
                risk[i, j] = bayes_risk(setting, quad=quad)
                m_k[i, j] = setting.c_nu
            else:
                res = optimal_risk(sigma, setting, quad=quad)
                risk[i, j], m_k[i, j], err[i, j] = res["risk"], res["m_k"], res["risk_err"]
        log.info("length %s %s L=%d: risk=%s", sigma, model, L, np.round(risk[i], 6))
    return risk, m_k, err


def _variable_length(ds, sigma, model, delta, var, quad):
    """``ds`` with risk_var (dim nu_var): the optimum for L ~ Uniform{1, …, L_max} with shared
    (k, v), ``var`` = (L_max, ν grid)."""
    var_L_max, var_nus = var
    law = {k: 1.0 / var_L_max for k in range(1, var_L_max + 1)}
    vn = np.asarray([check_model_nu(model, v) for v in var_nus], dtype=float)
    rv = np.array([_optimum(sigma, Setting(model, v, law, delta), quad) for v in vn])
    ds = ds.assign_coords(nu_var=vn)
    ds["risk_var"] = ("nu_var", rv)
    ds.attrs["var_L_max"] = int(var_L_max)
    return ds


def length_sweep(
    sigma,
    model,
    lengths: Sequence[int],
    nus: Sequence[float],
    delta: float = 0.0,
    *,
    options: LengthOptions | None = None,
    quad: QuadSpec | None = None,
) -> xarray.Dataset:
    """Dataset with risk, m_k, risk_err (dims L, nu); nu_target (dim L) when
    ``options.target_risk`` is given (the ν at which the excess risk R* − Δ² equals it,
    :func:`nu_for_risk`); risk_var (dim nu_var) when ``options.var_L_max`` is given: the optimum
    for L ~ Uniform{1, …, var_L_max} with shared (k, v) (Cor. 4.4). Scalar coords sigma, model,
    delta. Source: docs/theory.md §12 (the paper's Cor. 4.3, 4.4).

    Args:
        sigma: str, one of SIGMAS or "bayes".  model: str, 'spiked' | 'max'.
        lengths: 1-D sequence of ints ≥ 1 (the L grid).  nus: 1-D sequence of floats ≥ 0 (the ν
            grid; max-SLR: inf allowed).  delta: label-noise std Δ ≥ 0 (float).
        options: :class:`LengthOptions` (target_risk, var_L_max, var_nus; None: neither output).
        quad: :class:`~slrpipe.theory.quadrature.QuadSpec` of every expectation (default if None).
    Raises:
        ValueError: unknown sigma, bad model/ν/L/Δ, empty grids.
    """
    import xarray as xr

    if sigma != BAYES:
        check_sigma(sigma)
    delta = check_delta(delta)
    o = options or LengthOptions()
    Ls = np.asarray(lengths, dtype=np.int64)
    nus = np.asarray([check_model_nu(model, v) for v in nus], dtype=float)
    if Ls.size == 0 or nus.size == 0 or np.any(Ls < 1):
        raise ValueError("lengths, nus: must be non-empty, lengths ≥ 1")
    quad = quad or QuadSpec()
    risk, m_k, err = _grid_risks(sigma, model, Ls, nus, delta, quad)
    ds = xr.Dataset(
        {"risk": (("L", "nu"), risk), "m_k": (("L", "nu"), m_k), "risk_err": (("L", "nu"), err)},
        coords={"L": Ls, "nu": nus, "sigma": sigma, "model": model, "delta": delta},
    )
    if o.target_risk is not None:
        nt = np.array([nu_for_risk(sigma, model, int(L), o.target_risk, quad=quad) for L in Ls])
        ds["nu_target"] = ("L", nt)
        ds.attrs["target_risk"] = float(o.target_risk)
    if o.var_L_max is not None:
        ds = _variable_length(ds, sigma, model, delta, (o.var_L_max, o.var_nus), quad)
    ds.attrs.update(
        {"method": "population optimum vs L, exact-in-L reductions (docs/theory.md §12)", "quad_spec": repr(quad)}
    )
    return ds
