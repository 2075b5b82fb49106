"""Output-channel expectations of the RS fixed point: conjugates m̂, q̂, V̂ and training loss.

Given the order parameters (m, q, V) per column and fixed ``Fields``, the student centres are
ω_χ = m_k χ* + S_k ξ_k, ω_z = m_v z* + S_v ξ_v with S_a = √(q_a − m_a²) (docs/theory.md §3); the
prox gives f_ℓ = V⁻¹(h_ℓ − ω_ℓ) and, per column a (sums over tokens ℓ, expectations over samples):
    q̂_a = α E Σ_ℓ f_{ℓa}²
    V̂_a = −α E Σ_ℓ ∂f_{ℓa}/∂ω_{ℓa}                      (distributional derivative)
        = −α E Σ_ℓ f_{ℓa} ξ_{ℓa} / S_a                   ("stein", exact when the prox jumps)
    m̂_a = α E Σ_ℓ f_{ℓa} h*_{ℓa} + V̂_a m_a              ("general", any model and ν)
The pointwise implicit Jacobian (``vhat="jacobian"``, α E Σ_ℓ [1/V_a − (H⁻¹)_{ℓa,ℓa}/V_a²])
misses the Dirac mass of ∂f/∂ω where the global prox jumps between branches of the non-convex
per-sample problem; it is kept as a diagnostic (docs/theory.md §4). Alternative m̂ estimators
(tilt score α E Σ_ℓ ∂_χ*ℓ log g_ν f_{ℓk}, and α E ∂f_{εz}/∂y) are returned for checks.
"""

from __future__ import annotations

import math

import numpy as np

from slrpipe.theory.replica.fields import Fields
from slrpipe.theory.replica.prox import prox

VHAT_ESTIMATORS = ("stein", "jacobian")


def _mean_se(x):
    """Mean and standard error of per-sample values x (N,), pairing antithetic halves."""
    h = x.shape[0] // 2
    p = 0.5 * (x[:h] + x[h:])
    return float(p.mean()), float(p.std(ddof=1) / math.sqrt(h))


def centres(fields: Fields, m_k, q_k, m_v, q_v):
    """Student centres ω_χ, ω_z, each (N, L).

    Raises:
        ValueError: q_a < m_a² (no real Gaussian with these overlaps).
    """
    for name, m, q in (("q_k", m_k, q_k), ("q_v", m_v, q_v)):
        if q < m * m - 1e-12:
            raise ValueError(f"{name}: must be ≥ m² (got q={q}, m={m})")
    S_k, S_v = math.sqrt(max(q_k - m_k**2, 0.0)), math.sqrt(max(q_v - m_v**2, 0.0))
    return m_k * fields.chi_star + S_k * fields.xi_k, m_v * fields.z_star + S_v * fields.xi_v, S_k, S_v


def channel(sigma, fields: Fields, alpha, m_k, q_k, V_k, m_v, q_v, V_v, *, vhat="stein", warm=None,
            n_steps=25, multistart=True):
    """Conjugates and training loss at the given order parameters (docs/theory.md §3–4).

    Returns:
        dict with mhat_k, qhat_k, Vhat_k, mhat_v, qhat_v, Vhat_v (floats, the ones used by the
        fixed point), their standard errors (``*_se``), the alternative estimators
        (Vhat_*_jac, Vhat_*_stein, mhat_k_tilt, mhat_v_dy), train_loss = E ½(y − f(prox))²,
        prox diagnostics (prox_unconverged = fraction of samples with |∇ψ| > 1e-6,
        prox_multi = fraction with ≥ 2 distinct local minima found) and chi (N, L) for warm starts.
    Raises:
        ValueError: bad estimator name, α ≤ 0, or invalid overlaps.
    """
    if vhat not in VHAT_ESTIMATORS:
        raise ValueError(f"vhat: must be one of {VHAT_ESTIMATORS}, got {vhat!r}")
    if not alpha > 0:
        raise ValueError(f"alpha: must be > 0, got {alpha}")
    wk, wv, S_k, S_v = centres(fields, m_k, q_k, m_v, q_v)
    y = fields.y
    p = prox(sigma, wk, wv, y, V_k, V_v, warm=warm, n_steps=n_steps, multistart=multistart)
    L = fields.L
    fk = (p["chi"] - wk) / V_k
    fv = (p["z"] - wv) / V_v
    out = {}
    est = {
        "qhat_k": (fk**2).sum(1), "qhat_v": (fv**2).sum(1),
        "Vhat_k_jac": (1 / V_k - p["hinv_diag"][:, :L] / V_k**2).sum(1),
        "Vhat_v_jac": (1 / V_v - p["hinv_diag"][:, L:] / V_v**2).sum(1),
        "fh_k": (fk * fields.chi_star).sum(1), "fh_v": (fv * fields.z_star).sum(1),
        "mhat_v_dy": np.take_along_axis(p["dz_dy"], fields.eps[:, None], 1)[:, 0] / V_v,
        "train_loss": 0.5 * p["resid"] ** 2,
    }
    if fields.dlogg is not None:
        est["mhat_k_tilt"] = (fields.dlogg * fk).sum(1)
    # Stein: S_a E[∂f/∂ω] = E[f ξ]; undefined at S_a = 0, where the Jacobian form is used
    est["Vhat_k_stein"] = -(fk * fields.xi_k).sum(1) / S_k if S_k > 1e-8 else est["Vhat_k_jac"]
    est["Vhat_v_stein"] = -(fv * fields.xi_v).sum(1) / S_v if S_v > 1e-8 else est["Vhat_v_jac"]
    for a in ("k", "v"):
        est[f"Vhat_{a}"] = est[f"Vhat_{a}_{'stein' if vhat == 'stein' else 'jac'}"]
    m = {"k": m_k, "v": m_v}
    for a in ("k", "v"):
        est[f"mhat_{a}"] = est[f"fh_{a}"] + est[f"Vhat_{a}"] * m[a]
    for key, x in est.items():
        mu, se = _mean_se(x)
        scale = 1.0 if key == "train_loss" else alpha
        out[key], out[key + "_se"] = scale * mu, scale * se
    out["prox_unconverged"] = float(np.mean(p["grad_norm"] > 1e-6 * (1 + 1 / V_k)))
    out["prox_multi"] = float(np.mean(p["n_best"] < p["n_starts"]))
    out["chi"] = p["chi"]
    return out

