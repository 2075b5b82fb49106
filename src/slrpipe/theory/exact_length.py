"""Population expectations A = E σ(χ)_{ε*}, B = E|σ(χ)|² at any sequence length L (docs/theory.md §12).

On the manifold q_k = m_k² the student fields are χ_ℓ = m χ*_ℓ, independent over tokens under the
tilted teacher law (docs/model.md §2). Every quantity here is a sum of per-token one-dimensional
Gaussian expectations, or a one-dimensional integral of products of them, so the cost does not grow
with L (L enters only as an exponent):

* normalised scores σ_ℓ = e^{λ_ℓ}/S, S = Σ e^{λ_ℓ} (softmax: λ = mχ*; softplus_norm:
  λ = log softplus(mχ*); the m → ∞ limit of softplus_norm: λ = log relu(χ*)) through
  1/S = ∫₀^∞ e^{−tS} dt and 1/S² = ∫₀^∞ t e^{−tS} dt. With t = e^s and u = s + λ,
      A = ∫ ds E[h₁(s + λ_{ε*})] Π_{ℓ≠ε*} (1 − E h₀(s + λ_ℓ)),
      B = ∫ ds Σ_ℓ E[h₂(s + λ_ℓ)] Π_{j≠ℓ} (1 − E h₀(s + λ_j)),
  h₀(u) = 1 − exp(−eᵘ), h₁(u) = eᵘ exp(−eᵘ), h₂(u) = e²ᵘ exp(−eᵘ) (bounded, smooth on scale 1
  in u). The product over the L − 1 exchangeable tokens is exp((L − 1) log1p(−E h₀)).
* max-SLR puts the location weights p = softmax(νχ*) in A; for B (no p), for the Bayes risk
  (σ = p at m = c_ν = ν: risk = 1 − B) and for per-token σ (linear, erf: A = L E[σ(χ*₀) p₀], one
  normaliser T = Σ e^{νχ*}) the same 1-D Laplace integral applies. Normalised σ at finite ν ≠ m
  would need a 2-D (T, S) integral: not implemented, :func:`ab_exact` returns None and the caller
  falls back to the field quadrature (with its error bar). ν = ∞: A for linear and erf is
  L ∫ σ(x) φ(x) Φ(x)^{L−1} dx; for normalised σ (argmax indicator inside the expectation) it is left
  to the fallback too.
* linear and erf in spiked-SLR are closed forms (erf: E erfc(−(a + bZ)) = erfc(−a/√(1+2b²)),
  E[(1 + erf(a + bZ))²] = 4[Φ(h) − 2T(h, k)], h = √2 a/√(1+2b²), k = 1/√(1+4b²), T Owen's
  function; log-space quadrature below h = −5, where the difference cancels).
* m = ∞ (the limit score): softmax → argmax, A = ∫ φ(x − √ν) Φ(x)^{L−1} dx, B = 1 (spiked);
  softplus_norm → relu-normalised, argmax when every field is < 0.

Quadrature: per token, composite Gauss–Legendre in x = χ* on [μ − 12, μ + 12] (Gaussian mass
outside < 2·10⁻³³; every h_k is bounded, so only absolute accuracy is needed, and an absolute error
δ in E h₀ moves the product by a relative (L − 1)δ) with panel breaks every 1.5 in x and at the x
where u = s + λ(x) crosses −36, −32, …, −4, −3, …, 4 (h_k's layers: below u = −36 h_k < 3·10⁻¹⁶, above
u = 4 h₀ = 1 to 2·10⁻²⁴); in s, Gauss–Legendre panels of width max(1, m/4) over the range where
some h_k(s + λ) is non-negligible. ``level`` scales the node counts (1.5ᵏ); the change under one
refinement is the reported error (measured ≤ 1e-11 on the risk at default level, tests).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.special import erfc, log_ndtr, ndtr, owens_t, roots_legendre

from slrpipe.scores import log_softplus
from slrpipe.sigmas import get as get_sigma

_X_HALF = 12.0  # Gaussian mass beyond ±12: 3.6e-33
_X_STEP = 1.5
_U_BREAKS = np.array([-36.0, -32, -28, -24, -20, -16, -12, -8, -6, -4, -3, -2, -1, 0, 1, 2, 3, 4])
_V_BREAKS = np.array([-8.0, -4, -2, -1, 0, 1, 2, 4, 8])
_U_LO, _U_HI = -36.0, 4.0
_N_X, _N_S = 10, 10  # Gauss–Legendre nodes per panel at level 0


@lru_cache(maxsize=16)
def _gl(n: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = roots_legendre(n)
    return (x + 1) / 2, w / 2  # on [0, 1]


def _nodes(level: float, base: int) -> int:
    return max(4, int(round(base * 1.5**level)))


def _panels(breaks: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights (rows × panels·n) of composite GL on sorted breakpoints (rows × k)."""
    x, w = _gl(n)
    lo, hi = breaks[..., :-1, None], breaks[..., 1:, None]
    nodes = lo + (hi - lo) * x
    weights = (hi - lo) * w
    shape = breaks.shape[:-1] + (-1,)
    return nodes.reshape(shape), weights.reshape(shape)


# ------------------------------------------------------------------------------ log-score maps λ
def _lam(kind: str, m: float, x: np.ndarray) -> np.ndarray:
    if kind == "exp":
        return m * x
    if kind == "softplus":  # log_softplus(v) = v below v = −30: its logs only above (half the nodes at m ≳ 10)
        v = np.asarray(m * x, dtype=float)
        lam, big = v.copy(), v >= -30.0
        lam[big] = log_softplus(v[big])
        return lam
    with np.errstate(divide="ignore"):  # relu: log x, −∞ for x ≤ 0 (then every h_k = 0)
        return np.where(x > 0, np.log(np.maximum(x, 1e-300)), -np.inf)


def _lam_inv(kind: str, m: float, w: np.ndarray) -> np.ndarray:
    """x with λ(x) = w (λ increasing)."""
    if kind == "exp":
        return w / m
    if kind == "softplus":
        # softplus(v) = y = eʷ → v = log(eʸ − 1); v = y (to 1e-13) for y > 30, v = w for w < −30
        y = np.exp(np.clip(w, -30.0, 3.4))
        mid = np.log(np.expm1(y))
        return np.where(w > 3.4, np.exp(np.minimum(w, 700.0)), np.where(w < -30.0, w, mid)) / m
    return np.exp(np.minimum(w, 700.0))


def _lam_range(kind: str, m: float, mu_lo: float, mu_hi: float) -> tuple[float, float]:
    """(min, max) of λ over the x-ranges [μ − 12, μ + 12] of the tokens (relu: min over x > 0)."""
    if kind == "relu":
        return -36.0 - 4.0, math.log(mu_hi + _X_HALF)  # x < e^{−40}: h_k(s + log x) negligible for s ≤ 40
    lo = _lam(kind, m, np.array(mu_lo - _X_HALF))
    hi = _lam(kind, m, np.array(mu_hi + _X_HALF))
    return float(lo), float(hi)


def _s_rule(kind: str, m: float, mu_lo: float, mu_hi: float, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights in s = log t over the range where some h_k(s + λ) matters for some token."""
    lam_lo, lam_hi = _lam_range(kind, m, mu_lo, mu_hi)
    a, b = _U_LO - lam_hi, _U_HI - lam_lo
    # integrands vary on scale 1 in s (h_k's layers) or, where λ = m x (softmax; softplus for
    # s > 44, where only fields with m x < −40 reach u ≥ −36), on the scale m of the field spread:
    # panels of width 1, or max(1, m/4) there
    c = b if kind == "exp" else min(max(a, 44.0), b)
    width = max(1.0, m / 4.0) if kind != "relu" else 1.0
    fine = np.linspace(a, c, max(1, int(math.ceil((c - a) / (width if kind == "exp" else 1.0)))) + 1)
    coarse = np.linspace(c, b, max(1, int(math.ceil((b - c) / width))) + 1)
    return _panels(np.concatenate([fine, coarse[1:]]), _nodes(level, _N_S))


def _token(kind: str, m: float, mu: float, s: np.ndarray, level: float, g=None, g_breaks=()) -> np.ndarray:
    """E over x ~ N(μ, 1) of [h₀, h₁·g, h₂](s + λ(x)) for each s: array (3, n_s); g(x) a weight
    with steep layers at ``g_breaks`` (extra panel breaks)."""
    lo, hi = mu - _X_HALF, mu + _X_HALF
    if kind == "relu":
        lo = max(lo, 0.0)
    fixed = np.arange(lo, hi + 1e-9, _X_STEP)
    fixed = np.append(fixed[fixed < hi], hi)
    fixed = np.clip(np.concatenate([fixed, np.asarray(g_breaks, float)]), lo, hi)
    if kind == "softplus":  # softplus(v) bends on |v| ≲ 4: breaks in v = m x
        fixed = np.clip(np.concatenate([fixed, _V_BREAKS / m]), lo, hi)
    xu = np.clip(_lam_inv(kind, m, _U_BREAKS[None, :] - s[:, None]), lo, hi)
    breaks = np.sort(np.concatenate([np.broadcast_to(fixed, (s.size, fixed.size)), xu], axis=1), axis=1)
    x, w = _panels(breaks, _nodes(level, _N_X))
    w = w * np.exp(-0.5 * (x - mu) ** 2) / math.sqrt(2 * math.pi)
    # h_k only on nodes of positive weight left of the u = _U_HI = 4 break, xu[:, -1] (about half; the rest
    # are in clipped zero-width panels, or at u ≥ 4 up to rounding, where h₀ = 1 − exp(−eᵘ) rounds to
    # 1 exactly and h₁ = eᵘ exp(−eᵘ) < 2e-22, h₂ < 1e-20, both decreasing in u: set to 1, 0, 0)
    live = (w > 0) & (x < xu[:, -1:])
    h = np.zeros((3, *x.shape))
    h[0] = 1.0
    u = np.minimum(np.broadcast_to(s[:, None], x.shape)[live] + _lam(kind, m, x[live]), 50.0)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        eu = np.exp(u)
        h[0][live] = -np.expm1(-eu)
        h[1][live] = np.exp(u - eu)
        h[2][live] = np.exp(2 * u - eu)
    if g is not None:
        h[1] *= g(x)
    return np.stack([(w * h[0]).sum(1), (w * h[1]).sum(1), (w * h[2]).sum(1)])


# --------------------------------------------------------------------------------- normalised σ
# A length law enters through (Ls, ps): lengths and their (possibly sub-normalised) weights; the
# per-token expectations do not depend on L, only the powers Σ_L p_L c_L (1 − E h₀)^{L−k} do.
def _mix(h0: np.ndarray, Ls: np.ndarray, coef: np.ndarray, k: int) -> np.ndarray:
    """Σ_L coef_L (1 − E h₀)^{L−k} for each s (shape of h0); terms with L < k must have coef 0.
    Powers as exp((L − k) log1p(−E h₀)): accurate when E h₀ ≪ 1/L; 0 where E h₀ = 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lp = np.log1p(-np.clip(h0, 0.0, 1.0))
        e = np.clip(Ls - k, 0, None).astype(float)
        pw = np.exp(np.where(e[None, :] == 0, 0.0, lp[..., None] * e[None, :]))
    return pw @ coef


#: the log-score maps λ of the normalised reductions: (finite m, m = ∞); softmax's limit, the argmax,
#: is handled in closed form (``None``)
_NORMALISED_KINDS = {"normalised_exp": ("exp", None), "normalised_softplus": ("softplus", "relu")}
#: the per-token reductions (σ = 1 + χ, σ = 1 + erf(c + χ))
_TOKEN_REDUCTIONS = ("token_linear", "token_erf")


def _reduction(sigma: str) -> str | None:
    """The exact-in-L reduction σ declares (``Sigma.exact_length``), None where it has none.

    Raises:
        ValueError: σ not registered, or a reduction this module does not implement.
    """
    red = get_sigma(sigma).exact_length
    if red is not None and red not in _NORMALISED_KINDS and red not in _TOKEN_REDUCTIONS:
        raise ValueError(f"sigma: {sigma!r} declares exact_length {red!r}, which slrpipe.theory.exact_length lacks")
    return red


def _kind(sigma: str, m: float) -> str:
    """The log-score map λ ("exp", "softplus" or "relu") of normalised σ at key overlap m.

    Raises:
        ValueError: σ declares no normalised reduction (or m = ∞ for one whose limit is closed-form).
    """
    red = _reduction(sigma)
    if red not in _NORMALISED_KINDS:
        raise ValueError(f"sigma: {sigma!r} has no normalised exact-in-L reduction (exact_length={red!r})")
    kind = _NORMALISED_KINDS[red][math.isinf(m)]
    if kind is None:
        raise ValueError(f"sigma: the m = ∞ limit of {sigma!r} is handled in closed form, not by a log-score map")
    return kind


def _gauss_rule(mu: float, level: float, hi: float = math.inf, breaks=()) -> tuple[np.ndarray, np.ndarray]:
    """x ~ N(μ, 1) restricted to x < hi: GL on [μ − 12, min(μ + 12, hi)] in panels of ≤ 0.5
    (Φ(x)^{L−1} sharpens to scale ~1/√(2 log L)), plus extra panel ``breaks``."""
    top = min(mu + _X_HALF, hi)
    k = max(1, int(math.ceil((top - mu + _X_HALF) / 0.5)))
    b = np.unique(
        np.clip(np.concatenate([np.linspace(mu - _X_HALF, top, k + 1), np.asarray(breaks, float)]), mu - _X_HALF, top)
    )
    x, w = _panels(b, _nodes(level, _N_X))
    return x, w * np.exp(-0.5 * (x - mu) ** 2) / math.sqrt(2 * math.pi)


def _argmax_mix(x: np.ndarray, Ls: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """Σ_L coef_L Φ(x)^{L−1}."""
    return np.exp(log_ndtr(x)[:, None] * (Ls - 1)[None, :]) @ coef


@lru_cache(maxsize=256)
def _spiked_tokens(kind: str, m: float, mu: float, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """s-weights and :func:`_token` of the spike token (mean μ) and of the others (mean 0). They do
    not depend on the length law: cached (≲ 0.1 MB each), as a sweep over L repeats the optimiser's
    grid in m, and its error estimate the optimum."""
    s, ws = _s_rule(kind, m, 0.0, mu, level)
    out = ws, _token(kind, m, mu, s, level), _token(kind, m, 0.0, s, level)
    for a in out:
        a.setflags(write=False)
    return out


def clear_token_cache() -> None:
    """Forget the per-token quadratures of spiked-SLR cached so far (:func:`_spiked_tokens`): the
    next evaluation computes them anew, as a first one does (a benchmark's cold start)."""
    _spiked_tokens.cache_clear()


def _spiked_normalised(sigma, nu, Ls, ps, m, level) -> tuple[float, float]:
    mu = math.sqrt(nu)
    if m == 0.0:
        return float((ps / Ls).sum()), float((ps / Ls).sum())
    if math.isinf(m) and _reduction(sigma) == "normalised_exp":  # argmax: A = P(spike token leads), B = 1
        x, w = _gauss_rule(mu, level)
        return float((w * _argmax_mix(x, Ls, ps)).sum()), float(ps.sum())
    kind = _kind(sigma, m)
    ws, Hs, H0 = _spiked_tokens(kind, m, mu, level)
    P1 = _mix(H0[0], Ls, ps, 1)
    A = (ws * Hs[1] * P1).sum()
    B = (ws * (Hs[2] * P1 + H0[2] * (1 - Hs[0]) * _mix(H0[0], Ls, ps * (Ls - 1), 2))).sum()
    if kind == "relu":  # every field < 0: the limit score is the argmax
        x, w = _gauss_rule(mu, level, hi=0.0)
        A += (w * _argmax_mix(x, Ls, ps)).sum()
        B += (ps * np.exp(log_ndtr(-mu) + (Ls - 1) * log_ndtr(0.0))).sum()
    return float(A), float(B)


def _max_B(sigma, Ls, ps, m, level) -> float:
    """B = E|σ|² in max-SLR (no location weights): L ∫ ds E h₂ (1 − E h₀)^{L−1}."""
    if m == 0.0:
        return float((ps / Ls).sum())
    if math.isinf(m) and _reduction(sigma) == "normalised_exp":  # argmax: B = 1
        return float(ps.sum())
    kind = _kind(sigma, m)
    s, ws = _s_rule(kind, m, 0.0, 0.0, level)
    H = _token(kind, m, 0.0, s, level)
    B = (ws * H[2] * _mix(H[0], Ls, ps * Ls, 1)).sum()
    if kind == "relu":
        B += (ps * np.exp(Ls * log_ndtr(0.0))).sum()
    return float(B)


def _max_tilted_mean(g, nu, Ls, ps, level, g_breaks=()) -> float:
    """E Σ_ℓ p_ℓ g(χ*_ℓ), p = softmax(νχ*) (argmax at ν = ∞), χ* iid N(0, 1): L E[g(χ*₀) p₀].
    ``g_breaks``: where g has steep layers (panel breaks)."""
    if nu == 0.0:
        x, w = _gauss_rule(0.0, level, breaks=g_breaks)
        return float((w * g(x)).sum() * ps.sum())
    if math.isinf(nu):
        x, w = _gauss_rule(0.0, level, breaks=g_breaks)
        return float((w * g(x) * _argmax_mix(x, Ls, ps * Ls)).sum())
    s, ws = _s_rule("exp", nu, 0.0, 0.0, level)
    H = _token("exp", nu, 0.0, s, level, g=g, g_breaks=g_breaks)
    return float((ws * H[1] * _mix(H[0], Ls, ps * Ls, 1)).sum())


# --------------------------------------------------------------------------------- per-token σ
def _phi_sq_mean(alpha: float, beta: float) -> float:
    """E Φ(α + βZ)², Z ~ N(0, 1), β ≥ 0, to full relative precision: Φ(h) − 2T(h, k) (h = α/√(1+β²),
    k = 1/√(1+2β²)) while h ≥ −5, where the cancellation costs < 1e-9 relative; below, Gauss–Legendre
    over z on ±12 widths around the integrand's peak z* = −2αβ/(1+2β²) (log-space integrand)."""
    h = alpha / math.sqrt(1 + beta * beta)
    if h >= -5.0:
        return float(ndtr(h) - 2.0 * owens_t(h, 1.0 / math.sqrt(1 + 2 * beta * beta)))
    zc, wd = -2 * alpha * beta / (1 + 2 * beta * beta), 1.0 / math.sqrt(1 + 2 * beta * beta)
    z, w = _panels(np.linspace(zc - 12 * wd, zc + 12 * wd, 13), 16)
    return float((w * np.exp(-0.5 * z * z + 2 * log_ndtr(alpha + beta * z))).sum() / math.sqrt(2 * math.pi))


def _erf_mean(mu: float, m: float, c: float) -> float:
    """E σ for σ = 1 + erf(c + m x) = erfc(−(c + m x)), x ~ N(μ, 1) (no cancellation at c ≪ 0)."""
    return float(erfc(-(c + m * mu) / math.sqrt(1 + 2 * m * m)))


def _erf_sq_mean(mu: float, m: float, c: float) -> float:
    """E σ² for σ = 1 + erf(c + m x) = 2Φ(√2 (c + m x)), x ~ N(μ, 1): 4 E Φ(α + βZ)²."""
    return 4.0 * _phi_sq_mean(math.sqrt(2) * (c + m * mu), math.sqrt(2) * m)


# ------------------------------------------------------------------------------------------ API
def supported(sigma: str, model: str, nu: float, m: float) -> bool:
    """Whether :func:`ab_exact` has a reduction for these arguments (else the caller falls back):
    never for a σ that declares none (``Sigma.exact_length`` None).

    Raises:
        ValueError: σ not registered, or it declares a reduction this module lacks.
    """
    red = _reduction(sigma)
    if red is None:
        return False
    if model == "spiked" or red in _TOKEN_REDUCTIONS:
        return True
    # max-SLR, normalised σ: B always; A only at ν = 0 (p uniform) or ν = m (softmax: A = B)
    return nu == 0.0 or m == 0.0 or (red == "normalised_exp" and m == nu)


def ab_exact(
    sigma: str, model: str, nu: float, L, m: float, c: float = 0.0, level: float = 0.0
) -> tuple[float, float] | None:
    """A = E σ(χ)_{ε*}, B = E|σ(χ)|² at χ = m χ* (q_k = m_k²), any L ≥ 1 (docs/theory.md §12).

    L: an int or a law {length: weight} (A, B are the weighted sums; weights need not sum to 1, so
    a law can be split between methods). m = inf: the limit score up to a positive factor (as
    overlap_risk._sigma_limit): argmax for softmax, relu-normalised for softplus_norm, χ* for
    linear, 1 + sign χ* for erf. ``c``: erf offset. ``level``: node counts × 1.5^level.
    The reduction is the one σ declares (``Sigma.exact_length``: normalised_exp, normalised_softplus,
    token_linear, token_erf). Returns None where none is implemented (a σ that declares none;
    max-SLR, normalised σ at 0 < ν ≠ m); the other arguments are assumed checked by the caller.
    Cost independent of L for fixed L; a law adds a (nodes × lengths) matrix product.

    Raises:
        ValueError: σ not registered, or it declares a reduction this module lacks.
    """
    if not supported(sigma, model, nu, m):
        return None
    red = _reduction(sigma)
    law = {int(L): 1.0} if not isinstance(L, dict) else L
    Ls = np.array(list(law), dtype=np.int64)
    ps = np.array(list(law.values()), dtype=float)
    mass, EL = float(ps.sum()), float((ps * Ls).sum())
    mu = math.sqrt(nu) if model == "spiked" else 0.0
    if red == "token_linear":
        if model == "spiked":
            if math.isinf(m):  # σ = χ*
                return mu * mass, EL + nu * mass
            return (1.0 + m * mu) * mass, EL + (2 * m * mu + m * m * nu) * mass + m * m * EL
        if math.isinf(m):
            return _max_tilted_mean(lambda x: x, nu, Ls, ps, level), EL
        return mass + m * _max_tilted_mean(lambda x: x, nu, Ls, ps, level), EL * (1.0 + m * m)
    if red == "token_erf":
        if math.isinf(m):  # σ = 1 + sign χ* = 2·1{χ* > 0}
            if model == "spiked":
                return 2 * ndtr(mu) * mass, 4 * (ndtr(mu) * mass + 0.5 * (EL - mass))
            return _max_tilted_mean(lambda x: 2.0 * (x > 0), nu, Ls, ps, level, [0.0]), 2.0 * EL
        if model == "spiked":
            A = _erf_mean(mu, m, c) * mass
            return A, _erf_sq_mean(mu, m, c) * mass + (EL - mass) * _erf_sq_mean(0.0, m, c)
        if nu == 0.0:  # p uniform: Σ p σ has mean E σ
            return _erf_mean(0.0, m, c) * mass, EL * _erf_sq_mean(0.0, m, c)
        # erf(c + m x) steps at x = −c/m over a width ~1/m: graded panel breaks there
        kink = -c / m + np.array([-30.0, -10, -4, -2, -1, -0.5, 0, 0.5, 1, 2, 4, 10, 30]) / m if m > 0 else ()
        return (_max_tilted_mean(lambda x: erfc(-(c + m * x)), nu, Ls, ps, level, kink), EL * _erf_sq_mean(0.0, m, c))
    if model == "spiked":
        return _spiked_normalised(sigma, nu, Ls, ps, m, level)
    B = _max_B(sigma, Ls, ps, m, level)
    if m == 0.0 or nu == 0.0:
        return float((ps / Ls).sum()), B  # σ or p uniform: Σ p σ has mean 1/L
    return B, B  # softmax at m = ν: σ = p, A = E Σ p² = B
