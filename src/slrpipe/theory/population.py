"""Population risk of attention estimators on SLR through their order parameters (model.md §4).

D → ∞, n = ∞. On the manifold 𝓜 (cross overlaps zero) the risk of f = σ(χ)ᵀz is
R = Δ² + 1 − 2 m_v A + q_v B with A = E[σ(χ)_{ε*}], B = E|σ(χ)|², χ = m_k χ* + √(q_k − m_k²) η;
the expectations over (ε*, χ*, η) use :mod:`slrpipe.theory.quadrature`. A variable length
L ~ P_L with shared (k, v) averages A and B over P_L before the value overlaps are optimised.
Off the manifold, :func:`risk_gram` conditions the value fields on the key fields analytically.
Optima: value overlaps in closed form (m_v = A/B, q_v = m_v², R* = Δ² + 1 − A²/B), the key overlap
m_k ≥ 0 (with q_k = m_k²) — and c for erf — numerically: a grid on u = m_k/(1 + m_k) ∈ [0, 1]
(u = 1 is the limit m_k → ∞, evaluated with the limiting score, e.g. the argmax for softmax), then
bounded Brent (1-D) or, for erf (2-D with c), L-BFGS-B with analytic gradients from the two best
points of a (u, c) grid.

Sources: model.md §2 (tilts), §3 (estimators), §4 (risk, Bayes risk, linear closed form); the
paper's Prop. 4.2 (softmax attains Bayes), Cor. 4.3, Cor. 4.4.
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
from slrpipe.scores import score
from slrpipe.setting import Setting
from slrpipe.sigmas import get as get_sigma
from slrpipe.theory import exact_length
from slrpipe.theory.quadrature import FieldRule, QuadSpec, field_rule
from slrpipe.vocabulary import BAYES
from slrpipe.vocabulary import check_model_nu as _check_model_nu
from slrpipe.vocabulary import check_sigma as _check_sigma

log = logging.getLogger(__name__)

_CHUNK = 1 << 16  # nodes per vectorised block: bounds memory at ~L·64k doubles per array
_U_GRID = np.linspace(0.0, 1.0, 25)  # m_k = u/(1−u): 0, 1/23, …, 1, …, 23, ∞


# ------------------------------------------------------------------------------------- integrals
def _group_sums(rule: FieldRule, fn, n_out: int) -> np.ndarray:
    """Σ_i weight_i fn(block)_k per independent randomisation: array (n_out, n_groups).

    ``fn(chi_star, eps_prob, eta)`` maps a block of nodes to (n_out, n_block) values. QMC groups
    carry weight 1/n_groups each and are rescaled to estimates of the full expectation.
    """
    out = np.zeros((n_out, rule.n_groups))
    N = rule.weight.size
    M = 1 if rule.eta_grid is None else rule.eta_weight.size
    step = max(1, _CHUNK // M)
    for a in range(0, N, step):
        sl = slice(a, min(a + step, N))
        chi, p, w, grp = rule.chi_star[sl], rule.eps_prob[sl], rule.weight[sl], rule.group[sl]
        if rule.eta_grid is None:
            eta = None if rule.eta is None else rule.eta[sl]
        else:  # expand the (node × η-grid) tensor product for this block only
            n = w.size
            chi, p, grp = np.repeat(chi, M, axis=0), np.repeat(p, M, axis=0), np.repeat(grp, M)
            w = (w[:, None] * rule.eta_weight[None, :]).reshape(-1)
            eta = np.tile(rule.eta_grid, (n, 1))
        vals = fn(chi, p, eta) * w
        if rule.n_groups == 1:
            out[:, 0] += vals.sum(axis=1)
        else:
            for k in range(n_out):
                out[k] += np.bincount(grp, weights=vals[k], minlength=rule.n_groups)
    return out * rule.n_groups


def _rowdot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Σ_ℓ x_ℓ y_ℓ per row (einsum: one pass, much faster than a reduction over a short axis)."""
    return np.einsum("ij,ij->i", x, y)


def _sigma_limit(sigma: str, chi_star: np.ndarray) -> np.ndarray:
    """lim_{m→∞} σ(m χ*) up to a positive factor (A²/B is invariant under σ → aσ): the registry's
    ``Sigma.limit``.

    Raises:
        ValueError: σ not registered.
    """
    return get_sigma(sigma).limit(chi_star)


def _ab_rule(sigma: str, rule: FieldRule, m_k: float, s: float, c: float) -> np.ndarray:
    """(2, n_groups) array of A, B on one rule; χ = m_k χ* + s η; m_k = inf → limiting score."""

    def fn(chi_star, p, eta):
        if math.isinf(m_k):
            sig = _sigma_limit(sigma, chi_star)
        else:
            chi = m_k * chi_star if s == 0 else m_k * chi_star + s * eta
            sig = score(sigma, chi, c=c)
        return np.stack([_rowdot(p, sig), _rowdot(sig, sig)])

    return _group_sums(rule, fn, 2)


def _exact_args(sigma, setting: Setting, m_k, q_k, spec):
    """(ν, m) for :func:`exact_length.ab_exact` when it applies at these overlaps, else None.

    Spiked q_k > m_k² is folded into (ν m_k²/q_k, √q_k) as in :func:`_ab_law`; max-SLR needs
    q_k = m_k². Raises ValueError for method "exact" where no reduction exists."""
    if not spec.allows_exact:
        return None
    model, nu = setting.model, setting.nu
    s2 = 0.0 if math.isinf(m_k) else q_k - m_k**2
    if s2 > 0 and model == "spiked":
        nu, m_k = nu * m_k**2 / q_k, math.sqrt(q_k)
    if (s2 <= 0 or model == "spiked") and exact_length.supported(sigma, model, nu, m_k):
        return nu, m_k
    if spec.method == "exact":
        raise ValueError(
            f"method: no exact-in-L reduction for {sigma}, {model}, ν={nu}, m_k={m_k}, "
            f"q_k={q_k} (use 'auto' to fall back to the field quadrature)"
        )
    return None


def _slow_exact(sigma, setting: Setting) -> bool:
    """max-SLR at finite ν with a per-token σ: the reduction integrates over the normaliser of p
    for each token law, ~10× the L = 3 tensor rule's cost (docs/theory.md §12, Cost)."""
    return setting.model == "max" and 0 < setting.nu < math.inf and not get_sigma(sigma).normalised


def _exact_lengths(sigma, setting: Setting, spec) -> dict:
    """The part of the setting's length law computed by the exact reductions under ``spec``
    (where they exist)."""
    first = spec.exact_from(_slow_exact(sigma, setting))  # once: called per evaluation on laws of ~10³ lengths
    return {L: pL for L, pL in setting.L.items() if L >= first}


def _uses_exact(sigma, setting: Setting, m_k, spec) -> bool:
    """Whether every length of the setting's law goes through the exact reductions (at q_k = m_k²)."""
    return _exact_args(sigma, setting, m_k, m_k * m_k, spec) is not None and len(
        _exact_lengths(sigma, setting, spec)
    ) == len(setting.L)


def _ab_law(sigma, setting: Setting, m_k, q_k, c, spec) -> np.ndarray:
    """(2, n_groups) A, B averaged over the setting's length law; spiked q_k > m_k² folded into ν
    (see :func:`ab`); the exact-in-L reductions (one group) where ``spec`` allows them and they
    exist."""
    model, nu, law = setting.model, setting.nu, setting.L
    s2 = 0.0 if math.isinf(m_k) else q_k - m_k**2
    tot = 0.0
    ex = _exact_args(sigma, setting, m_k, q_k, spec)
    if ex is not None:  # the lengths handled exactly, in one pass (weights sum to their mass)
        sub = _exact_lengths(sigma, setting, spec)
        if sub:
            a, b = exact_length.ab_exact(sigma, model, ex[0], sub, ex[1], c, spec.exact_level)
            tot = np.array([[a], [b]])
        law = {L: pL for L, pL in law.items() if L not in sub}
    for L, pL in law.items():
        if s2 > 0 and model == "spiked":
            # spiked: χ_ℓ ~ N(m_k √ν δ_{ℓ0}, q_k) independently, i.e. the q_k = m_k² rule at
            # ν' = ν m_k²/q_k with key overlap √q_k: no extra η dimensions needed.
            rule = field_rule(model, nu * m_k**2 / q_k, L, spec)
            tot = tot + pL * _ab_rule(sigma, rule, math.sqrt(q_k), 0.0, c)
        elif s2 > 0:
            tot = tot + pL * _ab_rule(sigma, field_rule(model, nu, L, spec, True), m_k, math.sqrt(s2), c)
        else:
            tot = tot + pL * _ab_rule(sigma, field_rule(model, nu, L, spec), m_k, 0.0, c)
    return tot


def _check_overlaps(m_k: float, q_k: float) -> None:
    if not (math.isfinite(m_k) and math.isfinite(q_k)):
        raise ValueError(f"m_k, q_k: must be finite, got m_k={m_k}, q_k={q_k}")
    if q_k < m_k**2 * (1 - 1e-12) - 1e-15:
        raise ValueError(f"q_k: must be ≥ m_k² = {m_k**2} (Cauchy–Schwarz), got {q_k}")


def ab(sigma, setting: Setting, m_k, q_k, c=0.0, *, quad: QuadSpec | None = None) -> tuple[float, float]:
    """A = E[σ(χ)_{ε*}] and B = E[|σ(χ)|²] at key overlaps (m_k, q_k) (model.md §4).

    χ_ℓ = m_k χ*_ℓ + √(q_k − m_k²) η_ℓ over the tilted teacher law of ``setting``
    (:class:`~slrpipe.setting.Setting`; A, B averaged over its length law; Δ unused). ``c``: erf
    offset. ``quad``: quadrature spec (default :class:`QuadSpec`: leader+gaps tensor rule for
    L ≤ 3, scrambled Sobol beyond).

    Raises:
        ValueError: unknown sigma, q_k < m_k², non-finite overlaps.
    """
    _check_sigma(sigma)
    m_k, q_k = float(m_k), float(q_k)
    _check_overlaps(m_k, q_k)
    a, b = _ab_law(sigma, setting, m_k, q_k, float(c), quad or QuadSpec()).mean(axis=1)
    return float(a), float(b)


def risk(sigma, setting: Setting, overlaps, c=0.0, *, quad: QuadSpec | None = None) -> float:
    """Population risk on 𝓜: Δ² + 1 − 2 m_v A + q_v B (model.md §4) at ``overlaps`` =
    (m_k, q_k, m_v, q_v); the other arguments as in :func:`ab` (Δ: the setting's).

    Raises:
        ValueError: as :func:`ab`, plus q_v < m_v².
    """
    m_k, q_k, m_v, q_v = overlaps
    delta = setting.delta
    if q_v < m_v**2 * (1 - 1e-12) - 1e-15:
        raise ValueError(f"q_v: must be ≥ m_v² = {m_v**2} (Cauchy–Schwarz), got {q_v}")
    a, b = ab(sigma, setting, m_k, q_k, c, quad=quad)
    return float(delta**2 + 1.0 - 2.0 * m_v * a + q_v * b)


def _check_gram(gram) -> np.ndarray:
    G = np.asarray(gram, dtype=float)
    if G.shape != (4, 4) or not np.all(np.isfinite(G)):
        raise ValueError(f"gram: must be a finite (4, 4) array, got shape {G.shape}")
    if not np.allclose(G, G.T, atol=1e-10):
        raise ValueError("gram: must be symmetric")
    if np.linalg.eigvalsh(G).min() < -1e-10 * max(1.0, np.abs(G).max()):
        raise ValueError("gram: must be positive semi-definite (a Gram matrix WᵀW/D)")
    if abs(G[0, 0] - 1) > 1e-8:
        raise ValueError(f"gram: gram[0,0] = |k*|²/D must be 1, got {G[0, 0]}")
    return G


def risk_gram(sigma, setting: Setting, gram, c=0.0, *, quad: QuadSpec | None = None) -> float:
    """Full population risk E(y − σ(χ)ᵀz)² at any Gram matrix of (k*, v*, k, v)/D (model.md §4).

    gram: (4, 4) = WᵀW/D, W = [k*, v*, k, v]; gram[0,0] must be 1. Per token, under the base
    measure, (χ*, z*, χ, z) ~ N(0, gram); the tilt acts on χ* only; y = z*_{ε*} + Δξ. Writing
    χ = g₀₂ χ* + s η (s² = g₂₂ − g₀₂²), the value fields are Gaussian given (χ*, η) with means
    a_ℓ (for z*), b_ℓ (for z) linear in (χ*_ℓ, η_ℓ) and residual covariance S, independent over
    tokens, so with σ = σ(χ), P_ℓ = P(ε* = ℓ | χ*):
        R = Δ² + Σ P_ℓ a_ℓ² + S** − 2 [(Σ P_ℓ a_ℓ)(σ·b) + S*z Σ P_ℓ σ_ℓ] + (σ·b)² + S_zz |σ|²,
    averaged over the 2L-dim (χ*, η) law (L-dim when s = 0), and over the setting's length law.
    On 𝓜 it equals :func:`risk`.

    Raises:
        ValueError: unknown sigma; gram not symmetric PSD (4, 4) or gram[0,0] ≠ 1.
    """
    _check_sigma(sigma)
    model, nu, law, delta = setting.model, setting.nu, setting.L, setting.delta
    G = _check_gram(gram)
    spec = quad or QuadSpec()
    m = G[0, 2]
    s2 = G[2, 2] - m**2
    s = math.sqrt(s2) if s2 > 1e-14 * max(1.0, G[2, 2]) else 0.0
    # regression of (z*, z) (indices 1, 3) on the independent standard normals (χ*, η)
    beta_x = np.array([G[1, 0], G[3, 0]])
    beta_e = np.array([G[1, 2] - m * G[1, 0], G[3, 2] - m * G[3, 0]]) / s if s > 0 else np.zeros(2)
    S = G[np.ix_([1, 3], [1, 3])] - np.outer(beta_x, beta_x) - np.outer(beta_e, beta_e)

    def fn(chi_star, p, eta):
        chi = m * chi_star + (s * eta if s > 0 else 0.0)
        sig = score(sigma, chi, c=c)
        a = beta_x[0] * chi_star + (beta_e[0] * eta if s > 0 else 0.0)
        b = beta_x[1] * chi_star + (beta_e[1] * eta if s > 0 else 0.0)
        pa = p * a
        sb = _rowdot(sig, b)
        e1 = _rowdot(pa, a) + S[0, 0]
        e2 = pa.sum(axis=1) * sb + S[0, 1] * _rowdot(p, sig)
        e3 = sb * sb + S[1, 1] * _rowdot(sig, sig)
        return (e1 - 2 * e2 + e3)[None, :]

    tot = 0.0
    for Lv, pL in law.items():
        rule = field_rule(model, nu, Lv, spec, s > 0)
        tot += pL * float(_group_sums(rule, fn, 1).mean())
    return float(delta**2 + tot)


# ------------------------------------------------------------------------------------ optimisers
def _u_to_m(u: float) -> float:
    return math.inf if u >= 1.0 else u / (1.0 - u)


def _gain(sigma, setting: Setting, spec, u, c=0.0) -> float:
    """A²/B at m_k = u/(1−u), q_k = m_k² (the risk is Δ² + 1 − gain)."""
    a, b = _ab_law(sigma, setting, _u_to_m(u), _u_to_m(u) ** 2, c, spec).mean(axis=1)
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
        margin = 0.0 if best_u < 1.0 else (1e-11 if _uses_exact(sigma, setting, 999.0, spec) else 1e-7)
        if -res.fun > best_g + margin:
            best_u, best_g = float(res.x), float(-res.fun)
    return best_u, best_g


def _erf_gain_grad(setting: Setting, spec, x) -> tuple[float, np.ndarray]:
    """−A²/B for erf at (u, c) = x and its gradient (dσ/dc = 2/√π e^{−(c+mχ*)²}, dσ/dm = χ* dσ/dc)."""
    u, c = float(x[0]), float(x[1])
    m = _u_to_m(u)
    if _exact_args("erf", setting, m, m * m, spec) is not None:  # smooth closed forms: central differences

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
                    _rowdot(p, sig),
                    _rowdot(sig, sig),
                    _rowdot(p, dm),
                    _rowdot(p, dc),
                    2 * _rowdot(sig, dm),
                    2 * _rowdot(sig, dc),
                ]
            )

        tot += pL * _group_sums(field_rule(model, nu, L, spec), fn, 6).mean(axis=1)
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
    if _exact_args(sigma, setting, m, m * m, spec) is not None:  # exact lengths: one pass
        sub = _exact_lengths(sigma, setting, spec)
        if sub:
            mass = sum(sub.values())
            part = setting.replace(L={L: pL / mass for L, pL in sub.items()})
            a0, b0 = _ab_law(sigma, part, m, m * m, c, spec).mean(axis=1)
            fine = replace(spec, exact_level=spec.exact_level + 1)
            a1, b1 = _ab_law(sigma, part, m, m * m, c, fine).mean(axis=1)
            errs += mass * float(abs(a1 * a1 / b1 - a0 * a0 / b0))
        law = {L: pL for L, pL in law.items() if L not in sub}
    for L, pL in law.items():
        one = setting.replace(L=L)
        if not _uses_exact(sigma, one, m, spec) and spec.resolve(L) == "qmc":
            a, b = _ab_law(sigma, one, m, m * m, c, spec)
            gains = a * a / b
            err = float(gains.std(ddof=1) / math.sqrt(gains.size))
        else:  # exact reductions and tensor rules: change under one refinement
            a0, b0 = _ab_law(sigma, one, m, m * m, c, spec).mean(axis=1)
            a1, b1 = _ab_law(sigma, one, m, m * m, c, spec.refined(L)).mean(axis=1)
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
    a, b = _ab_law(sigma, setting, m_k, m_k**2, c, spec).mean(axis=1)
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
    _, b = _ab_law("softmax", setting, cn, cn * cn, 0.0, quad or QuadSpec()).mean(axis=1)
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
        exact = sigma == BAYES or _exact_args(sigma, setting, 1.0, 1.0, spec) is not None
        ex = _exact_lengths("softmax" if sigma == BAYES else sigma, setting, spec) if exact else {}
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
