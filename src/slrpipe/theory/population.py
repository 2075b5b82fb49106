"""Optimal population risk of attention estimators on SLR over their order parameters (model.md §4).

D → ∞, n = ∞. The risk at given overlaps, R = Δ² + 1 − 2 m_v A + q_v B on the manifold 𝓜, is
:mod:`slrpipe.theory.overlap_risk`'s (``ab``, ``risk``, ``risk_gram``, re-exported here). This
module optimises it: value overlaps in closed form (m_v = A/B, q_v = m_v², R* = Δ² + 1 − A²/B;
with a variable length L ~ P_L, A and B are averaged over P_L before the value overlaps are
optimised), the key overlap m_k ≥ 0 (with q_k = m_k²) — and c for erf — numerically: a grid on
u = m_k/(1 + m_k) ∈ [0, 1] (u = 1 is the limit m_k → ∞, evaluated with the limiting score, e.g.
the argmax for softmax), then bounded Brent (1-D) or, for erf (2-D with c), L-BFGS-B with analytic
gradients from the two best points of a (u, c) grid. Also the Bayes risk, the closed-form optimum
of linear attention and the sweep over ν.

Sources: model.md §4 (risk, Bayes risk, linear closed form); the paper's Prop. 4.2 (softmax
attains Bayes), Cor. 4.3, Cor. 4.4.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: xarray is imported where a Dataset is built
    import xarray

import logging
import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from scipy.optimize import minimize, minimize_scalar
from scipy.special import erf

from slrpipe.lengths import format_L
from slrpipe.setting import Setting
from slrpipe.sigmas import get as get_sigma
from slrpipe.theory.overlap_risk import (
    ab,
    ab_law,
    exact_args,
    exact_lengths,
    group_sums,
    risk,
    risk_gram,
    rowdot,
    uses_exact,
)
from slrpipe.theory.quadrature import QuadSpec, field_rule
from slrpipe.vocabulary import BAYES
from slrpipe.vocabulary import check_model_nu as _check_model_nu
from slrpipe.vocabulary import check_sigma as _check_sigma

__all__ = ["ab", "risk", "risk_gram", "optimal_risk", "bayes_risk", "linear_risk_spiked", "population_sweep"]

log = logging.getLogger(__name__)

_U_GRID = np.linspace(0.0, 1.0, 25)  # m_k = u/(1−u): 0, 1/23, …, 1, …, 23, ∞


# ------------------------------------------------------------------------------------ optimisers
def _u_to_m(u: float) -> float:
    return math.inf if u >= 1.0 else u / (1.0 - u)


def _gain(sigma, setting: Setting, spec, u, c=0.0) -> float:
    """A²/B at m_k = u/(1−u), q_k = m_k² (the risk is Δ² + 1 − gain)."""
    a, b = ab_law(sigma, setting, _u_to_m(u), _u_to_m(u) ** 2, c, spec).mean(axis=1)
    return a * a / b if b > 1e-300 else 0.0


def _coarse(spec: QuadSpec, law: dict) -> QuadSpec:
    # the grid search only has to find the basin: a ~4× cheaper rule (error ≲ 1e-4) suffices
    return spec.coarse(max(law))


def _opt_1d(sigma, setting: Setting, spec) -> tuple[float, float]:
    """max over u ∈ [0, 1] of the gain: grid (coarse rule), then bounded Brent (full rule)."""
    coarse = _coarse(spec, setting.L)
    g = np.array([_gain(sigma, setting, coarse, u) for u in _U_GRID])
    g = np.where(np.isfinite(g), g, -np.inf)  # a failed evaluation never wins
    i = int(np.argmax(g))
    best_u = float(_U_GRID[i])
    best_g = _gain(sigma, setting, spec, best_u)
    lo = _U_GRID[max(i - 1, 0)]
    # finite m_k ≤ 999 only: the rules resolve layers of width ≳ 1e-3 (quadrature.py); beyond,
    # the exact limit u = 1 stands in (the gain is within O(1/m_k) of it)
    hi = min(_U_GRID[min(i + 1, _U_GRID.size - 1)], 0.999)
    if hi > lo:
        res = minimize_scalar(
            lambda u: -_gain(sigma, setting, spec, u),
            bounds=(lo, hi),
            method="bounded",
            options={"xatol": 1e-10},
        )
        # at the top end keep the exact limit u = 1 unless Brent finds a clearly better finite m_k
        # > rule error at m_k ≲ 1e3 for L ≤ 2 (exact reductions: ≤ 1e-11 up to m_k = 999)
        margin = 0.0 if best_u < 1.0 else (1e-11 if uses_exact(sigma, setting, 999.0, spec) else 1e-7)
        if -res.fun > best_g + margin:
            best_u, best_g = float(res.x), float(-res.fun)
    return best_u, best_g


def _erf_gain_grad(setting: Setting, spec, x) -> tuple[float, np.ndarray]:
    """−A²/B for erf at (u, c) = x and its gradient (dσ/dc = 2/√π e^{−(c+mχ*)²}, dσ/dm = χ* dσ/dc)."""
    u, c = float(x[0]), float(x[1])
    m = _u_to_m(u)
    if exact_args("erf", setting, m, m * m, spec) is not None:  # smooth closed forms: central differences

        def g(uu, cc):
            return -_gain("erf", setting, spec, uu, cc)

        h = 1e-6
        du = (g(min(u + h, 0.999999), c) - g(max(u - h, 0.0), c)) / (min(u + h, 0.999999) - max(u - h, 0.0))
        dc = (g(u, c + h) - g(u, c - h)) / (2 * h)
        return g(u, c), np.array([du, dc])
    model, nu = setting.model, setting.nu
    tot = np.zeros(6)
    for L, pL in setting.L.items():

        def fn(chi_star, p, eta):
            arg = c + m * chi_star
            sig = 1.0 + erf(arg)
            dc = (2.0 / math.sqrt(math.pi)) * np.exp(-arg * arg)
            dm = chi_star * dc
            return np.stack(
                [
                    rowdot(p, sig),
                    rowdot(sig, sig),
                    rowdot(p, dm),
                    rowdot(p, dc),
                    2 * rowdot(sig, dm),
                    2 * rowdot(sig, dc),
                ]
            )

        tot += pL * group_sums(field_rule(model, nu, L, spec), fn, 6).mean(axis=1)
    A, B, Am, Ac, Bm, Bc = tot
    if B <= 1e-300:
        return 0.0, np.zeros(2)
    gm = 2 * A * Am / B - A * A * Bm / B**2
    gc = 2 * A * Ac / B - A * A * Bc / B**2
    return -A * A / B, -np.array([gm / (1.0 - u) ** 2, gc])


def _opt_offset(sigma, setting: Setting, spec) -> tuple[float, float, float]:
    """max over (u, c) ∈ [0, 0.999] × [−20, 20] of the gain of a σ with a learned offset: 9 × 9
    grid, then L-BFGS-B with the analytic gradient from the 2 best grid points (grid on the coarse
    rule). The gradient is erf's (:func:`_erf_gain_grad`).

    Raises:
        ValueError: σ other than erf (no gradient for its offset here).
    """
    if sigma != "erf":
        raise ValueError(f"sigma: the population optimum over an offset c is implemented for erf only, got {sigma!r}")
    uu, cc = np.linspace(0.0, 0.9, 9), np.linspace(-3.0, 3.0, 9)
    coarse = _coarse(spec, setting.L)
    g = np.array([[_gain("erf", setting, coarse, u, c) for c in cc] for u in uu])
    g = np.where(np.isfinite(g), g, -np.inf)
    order = np.argsort(g, axis=None)[::-1][:2]
    u0, c0 = float(uu[order[0] // cc.size]), float(cc[order[0] % cc.size])
    best = (u0, c0, _gain("erf", setting, spec, u0, c0))
    for flat in order:
        x0 = [uu[flat // cc.size], cc[flat % cc.size]]
        res = minimize(
            lambda x: _erf_gain_grad(setting, spec, x),
            x0,
            jac=True,
            method="L-BFGS-B",
            bounds=[(0.0, 0.999), (-20.0, 20.0)],
            options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 200},
        )
        if -res.fun > best[2]:
            best = (float(res.x[0]), float(res.x[1]), float(-res.fun))
    return best


def _gain_error(sigma, setting: Setting, spec, u, c) -> float:
    """Quadrature error of the gain at fixed overlaps: spread of the independent QMC scramblings
    (standard error) or, for tensor rules and the exact-in-L reductions, the change under
    refinement (≈1.5× nodes per dim)."""
    m = _u_to_m(u)
    errs = 0.0
    law = setting.L
    if exact_args(sigma, setting, m, m * m, spec) is not None:  # exact lengths: one pass
        sub = exact_lengths(sigma, setting, spec)
        if sub:
            mass = sum(sub.values())
            part = setting.replace(L={L: pL / mass for L, pL in sub.items()})
            a0, b0 = ab_law(sigma, part, m, m * m, c, spec).mean(axis=1)
            fine = replace(spec, exact_level=spec.exact_level + 1)
            a1, b1 = ab_law(sigma, part, m, m * m, c, fine).mean(axis=1)
            errs += mass * float(abs(a1 * a1 / b1 - a0 * a0 / b0))
        law = {L: pL for L, pL in law.items() if L not in sub}
    for L, pL in law.items():
        one = setting.replace(L=L)
        if not uses_exact(sigma, one, m, spec) and spec.resolve(L) == "qmc":
            a, b = ab_law(sigma, one, m, m * m, c, spec)
            gains = a * a / b
            err = float(gains.std(ddof=1) / math.sqrt(gains.size))
        else:  # exact reductions and tensor rules: change under one refinement
            a0, b0 = ab_law(sigma, one, m, m * m, c, spec).mean(axis=1)
            a1, b1 = ab_law(sigma, one, m, m * m, c, spec.refined(L)).mean(axis=1)
            err = abs(a1 * a1 / b1 - a0 * a0 / b0)
        errs += pL * err  # conservative: errors of the L-components added in absolute value
    return errs


def optimal_risk(sigma, setting: Setting, *, quad: QuadSpec | None = None) -> dict:
    """Minimum population risk over the overlaps (model.md §4).

    Value overlaps analytic: m_v = A/B, q_v = m_v², R* = Δ² + 1 − A²/B; q_k = m_k² (optimal at
    population level — checked in tests); m_k ≥ 0 (and c for erf) numerical, see the module
    docstring. m_k = q_k = inf means the infimum is the limit m_k → ∞ (e.g. softmax, max-SLR,
    ν = ∞: the argmax, risk = Δ²).

    Returns:
        dict with risk, m_k, q_k, m_v, q_v, c (0 unless erf) and risk_err (quadrature error
        estimate of the risk at the returned overlaps).

    Raises:
        ValueError: as :func:`ab`.
    """
    _check_sigma(sigma)
    spec = quad or QuadSpec()
    if get_sigma(sigma).offset:
        u, c, gain = _opt_offset(sigma, setting, spec)
        if u == 0.0:
            c = 0.0  # m_k = 0: σ is the same constant on every token, the gain does not depend on c
    else:
        (u, gain), c = _opt_1d(sigma, setting, spec), 0.0
    m_k = _u_to_m(u)
    a, b = ab_law(sigma, setting, m_k, m_k**2, c, spec).mean(axis=1)
    m_v = float(a / b)
    if math.isinf(m_k) and get_sigma(sigma).limit_up_to_scale:
        m_v = math.nan  # the limit score is only defined up to scale: no finite representative
    out = {
        "risk": setting.delta**2 + 1.0 - gain,
        "m_k": m_k,
        "q_k": m_k**2,
        "m_v": m_v,
        "q_v": m_v**2,
        "c": c,
        "risk_err": _gain_error(sigma, setting, spec, u, c),
    }
    return {k: float(v) for k, v in out.items()}


def bayes_risk(setting: Setting, *, quad: QuadSpec | None = None) -> float:
    """Bayes risk Δ² + 1 − E[Σ_ℓ p_ℓ²], p = softmax(c_ν χ*) (argmax at ν = ∞), under the tilted
    law of ``setting`` (model.md §4); averaged over its length law (the length is observed, so
    the posterior is per length).
    """
    cn = setting.c_nu
    _, b = ab_law("softmax", setting, cn, cn * cn, 0.0, quad or QuadSpec()).mean(axis=1)
    return float(setting.delta**2 + 1.0 - b)


def linear_risk_spiked(setting: Setting) -> float:
    """Closed-form optimum of linear attention, spiked-SLR, fixed L: Δ² + L(L−1)/((L−1)ν + L²)
    (model.md §4, the paper's Cor. 4.3).

    Raises:
        ValueError: a max-SLR or variable-length setting.
    """
    if setting.model != "spiked":
        raise ValueError(f"model: the closed form is for 'spiked' only, got {setting.model!r}")
    L, nu = setting.length, setting.nu
    return setting.delta**2 + L * (L - 1) / ((L - 1) * nu + L * L)


def _sweep_point(sigma, setting: Setting, spec) -> dict:
    """The optimum of :func:`population_sweep` at one ν (the Bayes risk for sigma = "bayes")."""
    if sigma != BAYES:
        return optimal_risk(sigma, setting, quad=spec)
    cn = setting.c_nu
    r = bayes_risk(setting, quad=spec)
    err = _gain_error("softmax", setting, spec, cn / (1 + cn) if math.isfinite(cn) else 1.0, 0.0)
    return {"risk": r, "m_k": cn, "q_k": cn * cn, "m_v": 1.0, "q_v": 1.0, "c": 0.0, "risk_err": err}


def _methods_used(sigma, settings: Sequence[Setting], spec) -> dict:
    """Per length of the settings' length law (str), the quadrature method(s) used over the
    settings (a ν grid; "a/b")."""
    methods = {}
    for setting in settings:
        exact = sigma == BAYES or exact_args(sigma, setting, 1.0, 1.0, spec) is not None
        ex = exact_lengths("softmax" if sigma == BAYES else sigma, setting, spec) if exact else {}
        for Lv in setting.L:
            used = methods.setdefault(str(Lv), [])
            m = "exact_length" if Lv in ex else spec.resolve(Lv)
            if m not in used:
                used.append(m)
    return {k: "/".join(v) for k, v in methods.items()}


def population_sweep(
    sigma, model, L, nus: Sequence[float], delta=0.0, *, quad: QuadSpec | None = None
) -> xarray.Dataset:
    """Optimal population risk over a ν grid (Fig. 2 of the paper; model.md §4, §7).

    sigma: one of SIGMAS or "bayes" (Bayes risk at k = c_ν k*, v = v*). Returns a Dataset with
    dim "nu" and data vars risk, m_k, q_k, m_v, q_v, c, risk_err (quadrature error estimate);
    scalar coords sigma, model, delta, L (string, :func:`format_L`); attrs describe the method.

    Raises:
        ValueError: unknown sigma, bad model/ν/L/Δ, empty ν grid.
    """
    import xarray as xr

    if sigma != BAYES:
        _check_sigma(sigma)
    nus = np.asarray([_check_model_nu(model, v) for v in nus], dtype=float)
    if nus.size == 0:
        raise ValueError("nus: must contain at least one value")
    settings = [Setting(model, nu, L, delta) for nu in nus]
    delta, law = settings[0].delta, settings[0].L
    spec = quad or QuadSpec()
    keys = ("risk", "m_k", "q_k", "m_v", "q_v", "c", "risk_err")
    out = {k: np.empty(nus.size) for k in keys}
    for i, (nu, setting) in enumerate(zip(nus, settings)):
        res = _sweep_point(sigma, setting, spec)
        for k in keys:
            out[k][i] = res[k]
        log.info(
            "population %s %s L=%s nu=%g: risk=%.6f (%d/%d)",
            sigma,
            model,
            format_L(law),
            nu,
            res["risk"],
            i + 1,
            nus.size,
        )
    ds = xr.Dataset(
        {k: ("nu", out[k]) for k in keys},
        coords={"nu": nus, "sigma": sigma, "model": model, "delta": delta, "L": format_L(law)},
    )
    ds.attrs.update(
        {
            "method": "population optimum over overlaps (model.md §4)",
            "quadrature": str(_methods_used(sigma, settings, spec)),
            "quad_spec": repr(spec),
            "qmc_seed": spec.seed,
            "optimiser": "grid on u=m_k/(1+m_k) + bounded Brent (erf: 9x9 (u, c) grid + L-BFGS-B from 2 starts)",
        }
    )
    return ds
