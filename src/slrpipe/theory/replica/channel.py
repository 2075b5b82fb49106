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
per-sample problem; it is kept as a diagnostic (docs/theory.md §4).
``mhat="rb"`` (default) replaces the general m̂ by its conditional expectation given the
observables (ω, y) of the sample (Rao–Blackwell: same mean, smaller variance; docs/theory.md §9):
    m̂_k = α √ν E f_{εk}                                   (spiked: the tilt-score form)
    m̂_v = α E f_{εv} (q_v y − m_v ω_{z,ε}) / (q_v(1 + Δ²) − m_v²)   (any model)
(max-SLR keeps the general m̂_k: there ε* depends on χ*, so the conditional law is not Gaussian).
The general forms, the tilt form and α E ∂f_{εz}/∂y (pointwise) are returned for checks.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from slrpipe.theory.replica.fields import Fields
from slrpipe.theory.replica.options import MHAT_ESTIMATORS, VHAT_ESTIMATORS, ChannelOptions  # noqa: F401  (re-export)
from slrpipe.theory.replica.prox import prox

_JAC_KEYS = ("Vhat_k_jac", "Vhat_v_jac", "mhat_v_dy")


def paired_mean_se(x, skip_nan=False):
    """Mean and standard error of per-sample values x (N,), pairing antithetic halves; with
    ``skip_nan`` pairs containing NaN are left out (NaN if fewer than 2 remain)."""
    h = x.shape[0] // 2
    p = 0.5 * (x[:h] + x[h:])
    if skip_nan:
        p = p[np.isfinite(p)]
        if p.size < 2:
            return math.nan, math.nan
    return float(p.mean()), float(p.std(ddof=1) / math.sqrt(p.size))


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


#: the channel's own default: the hard global minimum (the exact zero-temperature channel)
_HARD = ChannelOptions(softmin=None)


def _f_values(p: dict, wk, wv, V_k, V_v, softmin):
    """(f_χ, f_z, f_χ², f_z², loss) per sample from the prox output ``p``: at the global minimum,
    or the soft-min averages over the local minima (``softmin``)."""
    if softmin is None:
        fk, fv = (p["chi"] - wk) / V_k, (p["z"] - wv) / V_v
        return fk, fv, fk**2, fv**2, 0.5 * p["resid"] ** 2
    return p["fk"], p["fv"], p["fk2"], p["fv2"], p["loss"]


def _estimates(fields: Fields, p: dict, f, S, V, vhat) -> dict:
    """Per-sample estimators (N,) of q̂, V̂ (all forms), the general m̂ terms, m̂_v by ∂z/∂y and the
    train loss, before the factor α (module docstring); f = :func:`_f_values`, S = (S_k, S_v) of
    :func:`centres`, V = (V_k, V_v)."""
    fk, fv, fk2, fv2, loss = f
    (S_k, S_v), (V_k, V_v) = S, V
    L = fields.L
    jac = {
        a: (1 / V - p["hinv_diag"][:, sl] / V**2).sum(1)
        for a, V, sl in (("k", V_k, slice(0, L)), ("v", V_v, slice(L, 2 * L)))
    }
    # as diagnostics the pointwise-Jacobian forms are undefined where H is singular (a
    # degenerate minimum): NaN there, left out of their averages
    ok = p["hess_pd"] & np.all(np.abs(p["hinv_diag"]) < 1e8 * max(V_k, V_v), axis=1)
    est = {
        "qhat_k": fk2.sum(1),
        "qhat_v": fv2.sum(1),
        "Vhat_k_jac": np.where(ok, jac["k"], np.nan),
        "Vhat_v_jac": np.where(ok, jac["v"], np.nan),
        "fh_k": (fk * fields.chi_star).sum(1),
        "fh_v": (fv * fields.z_star).sum(1),
        "mhat_v_dy": np.where(ok, np.take_along_axis(p["dz_dy"], fields.eps[:, None], 1)[:, 0], np.nan) / V_v,
        "train_loss": loss,
    }
    if fields.dlogg is not None:
        est["mhat_k_tilt"] = (fields.dlogg * fk).sum(1)
    # Stein: S_a E[∂f/∂ω] = E[f ξ]; undefined at S_a = 0, where the Jacobian form is used
    # (unmasked when it enters the fixed point)
    est["Vhat_k_stein"] = -(fk * fields.xi_k).sum(1) / S_k if S_k > 1e-8 else jac["k"]
    est["Vhat_v_stein"] = -(fv * fields.xi_v).sum(1) / S_v if S_v > 1e-8 else jac["v"]
    for a in ("k", "v"):
        est[f"Vhat_{a}"] = est[f"Vhat_{a}_stein"] if vhat == "stein" else jac[a]
    return est


def _add_mhat(est: dict, fields: Fields, fv, wv, state, mhat) -> None:
    """Add the general and Rao–Blackwell forms of m̂ (per sample, before α) and the one used."""
    m_k, _, _, m_v, q_v, _ = state
    m = {"k": m_k, "v": m_v}
    for a in ("k", "v"):
        est[f"mhat_{a}_general"] = est.pop(f"fh_{a}") + est[f"Vhat_{a}"] * m[a]
    # Rao–Blackwell forms: E[z*_ε − (m_v/S_v) ξ_ε | ω_ε, y] = (q_v y − m_v ω_ε)/det and 0 for
    # ℓ ≠ ε (module docstring); spiked-SLR: E[χ*_ℓ − (m_k/S_k) ξ_ℓ | ω] = √ν δ_ℓε
    det = q_v * (1 + fields.delta**2) - m_v**2
    if det > 1e-12:
        w_eps = np.take_along_axis(wv, fields.eps[:, None], 1)[:, 0]
        f_eps = np.take_along_axis(fv, fields.eps[:, None], 1)[:, 0]
        est["mhat_v_rb"] = f_eps * (q_v * fields.y - m_v * w_eps) / det
    else:
        est["mhat_v_rb"] = est["mhat_v_general"]
    est["mhat_k_rb"] = est["mhat_k_tilt"] if fields.model == "spiked" else est["mhat_k_general"]
    for a in ("k", "v"):
        est[f"mhat_{a}"] = est[f"mhat_{a}_{mhat}"]


def channel(
    sigma, fields: Fields, alpha, state, *, warm=None, multistart=True, options: ChannelOptions | None = None, **flat
):
    """Conjugates and training loss at the given order parameters (docs/theory.md §3–4, §9).

    Args:
        sigma: score name (``prox.PROX_SIGMAS``).  fields: common random numbers (N samples).
        alpha: n/D > 0.  state: the order parameters (m_k, q_k, V_k, m_v, q_v, V_v) (any sequence
            in this order, e.g. the solver's state vector; q ≥ m², V > 0).
        warm: (N, L) or (N, W, L) extra Newton starts (``out["warm"]`` of the previous pass).
        multistart: False = centre + warm starts only.
        options: :class:`~slrpipe.theory.replica.options.ChannelOptions` (None: its defaults
            but softmin=None, the hard channel); ``flat``: its fields by name, replacing those of
            ``options``:
        vhat: 'stein' (default) or 'jacobian' (pointwise, misses the jumps of the prox).
        n_steps: Newton steps per start.
        softmin: None (global minimum: the exact zero-temperature channel) or β > 0: f, f² and the
            loss averaged over the local minima with weights ∝ exp(−β ψ), the exact channel of
            the soft-min envelope (continuous in the order parameters; docs/theory.md §4). The
            Jacobian estimators (Vhat_*_jac, mhat_v_dy) always use the global minimum.
        mhat: 'rb' (default, Rao–Blackwellised, module docstring) or 'general'.
    Returns:
        dict with mhat_k, qhat_k, Vhat_k, mhat_v, qhat_v, Vhat_v (floats, the ones used by the
        fixed point), their standard errors (``*_se``; iid formula over antithetic pairs, an
        overestimate for QMC fields), the alternative estimators (Vhat_*_jac, Vhat_*_stein,
        mhat_*_general, mhat_*_rb, mhat_k_tilt, mhat_v_dy; the Jacobian ones leave out samples
        with a singular Hessian), train_loss = E ½(y − f(prox))², prox diagnostics
        (prox_unconverged = fraction of samples with |∇ψ| > 1e-6 (1 + 1/V_k), prox_multi =
        fraction with ≥ 2 distinct local minima found), chi (N, L) the global prox and warm
        (N, 3, L) = (global prox, two runner-up local minima), the next pass's warm starts.
    Raises:
        ValueError: bad estimator name or option, α ≤ 0, or invalid overlaps.
        TypeError: an unknown option name, or a state that is not six numbers.
    """
    opts = dataclasses.replace(options or _HARD, **flat)
    if not alpha > 0:
        raise ValueError(f"alpha: must be > 0, got {alpha}")
    m_k, q_k, V_k, m_v, q_v, V_v = state
    wk, wv, S_k, S_v = centres(fields, m_k, q_k, m_v, q_v)
    p = prox(
        sigma, wk, wv, fields.y, V_k, V_v, warm=warm, n_steps=opts.n_steps, multistart=multistart, softmin=opts.softmin
    )
    f = _f_values(p, wk, wv, V_k, V_v, opts.softmin)
    est = _estimates(fields, p, f, (S_k, S_v), (V_k, V_v), opts.vhat)
    _add_mhat(est, fields, f[1], wv, state, opts.mhat)
    out = {}
    for key, x in est.items():
        mu, se = paired_mean_se(x, skip_nan=key in _JAC_KEYS)
        scale = 1.0 if key == "train_loss" else alpha
        out[key], out[key + "_se"] = scale * mu, scale * se
    out["prox_unconverged"] = float(np.mean(p["grad_norm"] > 1e-6 * (1 + 1 / V_k)))
    out["prox_multi"] = float(np.mean(p["n_best"] < p["n_starts"]))
    out["chi"] = p["chi"]
    out["warm"] = np.stack([p["chi"], p["chi2"], p["chi3"]], axis=1)
    return out
