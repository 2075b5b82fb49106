"""Population risk of attention estimators at given order parameters (model.md §4).

D → ∞, n = ∞. On the manifold 𝓜 (cross overlaps zero) the risk of f = σ(χ)ᵀz is
R = Δ² + 1 − 2 m_v A + q_v B with A = E[σ(χ)_{ε*}], B = E|σ(χ)|², χ = m_k χ* + √(q_k − m_k²) η;
the expectations over (ε*, χ*, η) use :mod:`slrpipe.theory.quadrature`, or the exact-in-L
reductions of :mod:`slrpipe.theory.exact_length` where they apply. A variable length L ~ P_L with
shared (k, v) averages A and B over P_L. Off the manifold, :func:`risk_gram` conditions the value
fields on the key fields analytically. The optimum over the overlaps is
:mod:`slrpipe.theory.population`'s.

Sources: model.md §2 (tilts), §3 (estimators), §4 (risk).
"""

from __future__ import annotations

import math

import numpy as np

from slrpipe.scores import score
from slrpipe.setting import Setting
from slrpipe.sigmas import get as get_sigma
from slrpipe.theory import exact_length
from slrpipe.theory.quadrature import FieldRule, QuadSpec, field_rule
from slrpipe.vocabulary import check_sigma as _check_sigma

_CHUNK = 1 << 16  # nodes per vectorised block: bounds memory at ~L·64k doubles per array


# ------------------------------------------------------------------------------------- integrals
def group_sums(rule: FieldRule, fn, n_out: int) -> np.ndarray:
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


def rowdot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
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
        return np.stack([rowdot(p, sig), rowdot(sig, sig)])

    return group_sums(rule, fn, 2)


def exact_args(sigma, setting: Setting, m_k, q_k, spec):
    """(ν, m) for :func:`exact_length.ab_exact` when it applies at these overlaps, else None.

    Spiked q_k > m_k² is folded into (ν m_k²/q_k, √q_k) as in :func:`ab_law`; max-SLR needs
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


def exact_lengths(sigma, setting: Setting, spec) -> dict:
    """The part of the setting's length law computed by the exact reductions under ``spec``
    (where they exist)."""
    first = spec.exact_from(_slow_exact(sigma, setting))  # once: called per evaluation on laws of ~10³ lengths
    return {L: pL for L, pL in setting.L.items() if L >= first}


def uses_exact(sigma, setting: Setting, m_k, spec) -> bool:
    """Whether every length of the setting's law goes through the exact reductions (at q_k = m_k²)."""
    return exact_args(sigma, setting, m_k, m_k * m_k, spec) is not None and len(
        exact_lengths(sigma, setting, spec)
    ) == len(setting.L)


def ab_law(sigma, setting: Setting, m_k, q_k, c, spec) -> np.ndarray:
    """(2, n_groups) A, B averaged over the setting's length law; spiked q_k > m_k² folded into ν
    (see :func:`ab`); the exact-in-L reductions (one group) where ``spec`` allows them and they
    exist."""
    model, nu, law = setting.model, setting.nu, setting.L
    s2 = 0.0 if math.isinf(m_k) else q_k - m_k**2
    tot = 0.0
    ex = exact_args(sigma, setting, m_k, q_k, spec)
    if ex is not None:  # the lengths handled exactly, in one pass (weights sum to their mass)
        sub = exact_lengths(sigma, setting, spec)
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
    a, b = ab_law(sigma, setting, m_k, q_k, float(c), quad or QuadSpec()).mean(axis=1)
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
        sb = rowdot(sig, b)
        e1 = rowdot(pa, a) + S[0, 0]
        e2 = pa.sum(axis=1) * sb + S[0, 1] * rowdot(p, sig)
        e3 = sb * sb + S[1, 1] * rowdot(sig, sig)
        return (e1 - 2 * e2 + e3)[None, :]

    tot = 0.0
    for Lv, pL in law.items():
        rule = field_rule(model, nu, Lv, spec, s > 0)
        tot += pL * float(group_sums(rule, fn, 1).mean())
    return float(delta**2 + tot)
