"""The 1RSB output channel, ridge prior and thermodynamics at one state (docs/theory.md §13).

Per column a ∈ {k, v} the state is x = (m_a, q₀_a, δq_a, V_a) (:data:`STATE1`); :func:`rsb1_channel`
gives the conjugates (:data:`CONJ1`) by nested Monte Carlo, :func:`rsb1_prior` the state they map
to, :func:`thermodynamics` Φ(s), Σ(s) and e(s).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from slrpipe.theory.replica.channel import paired_mean_se
from slrpipe.theory.replica.fields import Fields
from slrpipe.theory.replica.prox import check_sigma, prox
from slrpipe.theory.replica.rsb1.sampling import Inner

#: state order: per column (k, then v) m, q₀, δq, V
STATE1 = ("m_k", "q0_k", "dq_k", "V_k", "m_v", "q0_v", "dq_v", "V_v")
#: conjugates returned by :func:`rsb1_channel` and used by :func:`rsb1_prior`
CONJ1 = ("mhat_k", "q0hat_k", "dqhat_k", "Vhat_k", "mhat_v", "q0hat_v", "dqhat_v", "Vhat_v")
_BIAS_KEYS = ("dqhat_k", "dqhat_v", "q0hat_k", "q0hat_v", "phi_out")
#: the per-outer-sample estimators the closed-form Σ is a function of (``sigma_terms``)
_SIGMA_KEYS = ("q0hat_k", "dqhat_k", "q0hat_v", "dqhat_v", "kl")


def check_state(x):
    x = np.asarray(x, float)
    if x.shape != (8,) or not np.all(np.isfinite(x)):
        raise ValueError(f"x: need 8 finite order parameters {STATE1}, got {x}")
    for c in (0, 4):
        m, q0, dq, V = x[c : c + 4]
        if not (V > 0 and dq >= 0 and q0 >= m * m - 1e-12):
            raise ValueError(f"x: need V > 0, δq ≥ 0, q₀ ≥ m² per column, got {dict(zip(STATE1, x.tolist()))}")
    return x


def _tilt_stats(lw, fk, fv, loss, s, idx=None):
    """Per-outer-sample tilt averages over the inner draws ``idx`` (all if None).

    lw: (N₀, N₁) = −s𝓜; fk, fv: (N₀, N₁, L); loss: (N₀, N₁). Returns dict of (N₀,) or (N₀, L) arrays:
    fk, fv (⟨f⟩), vk, vv (Var_π f), log_z, kl, loss (⟨loss⟩), ess (1/Σπ²)."""
    if idx is not None:
        lw, fk, fv, loss = lw[:, idx], fk[:, idx], fv[:, idx], loss[:, idx]
    lse = logsumexp(lw, axis=1, keepdims=True)
    p = np.exp(lw - lse)
    mk, mv = np.einsum("ij,ijl->il", p, fk), np.einsum("ij,ijl->il", p, fv)
    vk = np.einsum("ij,ijl->il", p, (fk - mk[:, None]) ** 2)
    vv = np.einsum("ij,ijl->il", p, (fv - mv[:, None]) ** 2)
    log_z = lse[:, 0] - math.log(lw.shape[1])
    return {
        "fk": mk,
        "fv": mv,
        "vk": vk,
        "vv": vv,
        "log_z": log_z,
        "kl": np.sum(p * lw, 1) - log_z,
        "loss": np.sum(p * loss, 1),
        "ess": 1.0 / np.sum(p * p, 1),
    }


class _Point(NamedTuple):
    """What the per-outer-sample estimators need besides the tilt statistics: the outer fields,
    the state x (8,), the Parisi parameter s, the outer noise scales a = (√(q₀_k − m_k²),
    √(q₀_v − m_v²)) and the pointwise-Jacobian V̂ per column, (N₀,) each (used where a_a = 0)."""

    fields: Fields
    x: np.ndarray
    s: float
    a: tuple
    jac: tuple


def _estimators(pt: _Point, st) -> dict:
    """Per-outer-sample estimators (N₀,) of the conjugates (before the factor α) and Φ_out, from the
    tilt statistics ``st`` (:func:`_tilt_stats`)."""
    fields, x, s, (a_k, a_v), (jac_k, jac_v) = pt
    m_k, _q0_k, _, _, m_v, q0_v, _, _ = x
    est = {
        "q0hat_k": (st["fk"] ** 2).sum(1),
        "q0hat_v": (st["fv"] ** 2).sum(1),
        "dqhat_k": st["vk"].sum(1),
        "dqhat_v": st["vv"].sum(1),
    }
    # V̂ by Stein on the outer noise (+ sδq̂ after averaging); the pointwise Jacobian where the outer
    # noise vanishes (q₀ = m², e.g. the key column of σ ≡ 1)
    est["Vhat_k"] = -(st["fk"] * fields.xi_k).sum(1) / a_k + s * est["dqhat_k"] if a_k > 1e-8 else jac_k
    est["Vhat_v"] = -(st["fv"] * fields.xi_v).sum(1) / a_v + s * est["dqhat_v"] if a_v > 1e-8 else jac_v
    eps = fields.eps[:, None]
    if fields.model == "spiked":
        est["mhat_k"] = (fields.dlogg * st["fk"]).sum(1)
    else:  # the general form with the outer noise: α E Σ⟨f⟩h* + (V̂ − sδq̂)m
        est["mhat_k"] = (st["fk"] * fields.chi_star).sum(1) + m_k * (est["Vhat_k"] - s * est["dqhat_k"])
    det = q0_v * (1 + fields.delta**2) - m_v**2
    w0 = m_v * fields.z_star + a_v * fields.xi_v
    f_eps = np.take_along_axis(st["fv"], eps, 1)[:, 0]
    if det > 1e-12:
        est["mhat_v"] = f_eps * (q0_v * fields.y - m_v * np.take_along_axis(w0, eps, 1)[:, 0]) / det
    else:
        est["mhat_v"] = (st["fv"] * fields.z_star).sum(1) + m_v * (est["Vhat_v"] - s * est["dqhat_v"])
    est["phi_out"] = -st["log_z"] / s
    est["kl"] = st["kl"]
    est["train_loss"] = st["loss"]
    return est


def _check_channel_args(sigma, alpha, s) -> None:
    check_sigma(sigma)
    if not alpha > 0:
        raise ValueError(f"alpha: must be > 0, got {alpha}")
    if not s > 0:
        raise ValueError(f"s: the Parisi parameter must be > 0, got {s}")


def _pair_prox(sigma, fields: Fields, inner: Inner, x, warm, prox_kw):
    """The hard prox at every (outer, inner) pair of state x: (prox output, the tilt inputs
    (−𝓜 per unit s (N₀, N₁), f_χ, f_z (N₀, N₁, L), loss (N₀, N₁)), outer noise scales a,
    pointwise-Jacobian V̂ per column (N₀,))."""
    m_k, q0_k, dq_k, V_k, m_v, q0_v, dq_v, V_v = x
    a_k, a_v = math.sqrt(max(q0_k - m_k**2, 0.0)), math.sqrt(max(q0_v - m_v**2, 0.0))
    c_k, c_v = math.sqrt(dq_k), math.sqrt(dq_v)
    N0, N1, L = fields.n, inner.n, fields.L
    if inner.independent and inner.xi_k.shape[0] != N0:
        raise ValueError(f"inner: drawn for {inner.xi_k.shape[0]} outer samples, the fields have {N0}")
    xi_k, xi_v = (inner.xi_k, inner.xi_v) if inner.independent else (inner.xi_k[None], inner.xi_v[None])
    w0k = m_k * fields.chi_star + a_k * fields.xi_k
    w0v = m_v * fields.z_star + a_v * fields.xi_v
    wk = (w0k[:, None] + c_k * xi_k).reshape(N0 * N1, L)
    wv = (w0v[:, None] + c_v * xi_v).reshape(N0 * N1, L)
    y = np.repeat(fields.y, N1)
    p = prox(sigma, wk, wv, y, V_k, V_v, warm=warm, softmin=None, **prox_kw)
    fk = ((p["chi"] - wk) / V_k).reshape(N0, N1, L)
    fv = ((p["z"] - wv) / V_v).reshape(N0, N1, L)
    psi = p["psi"].reshape(N0, N1)
    loss = 0.5 * p["resid"].reshape(N0, N1) ** 2
    hd = p["hinv_diag"].reshape(N0, N1, 2 * L)
    jac_k = (1 / V_k - hd[..., :L] / V_k**2).sum(2).mean(1)  # pointwise, used only where q₀ = m²
    jac_v = (1 / V_v - hd[..., L:] / V_v**2).sum(2).mean(1)
    return p, (psi, fk, fv, loss), (a_k, a_v), (jac_k, jac_v)


def _half_estimators(pt: _Point, inner: Inner, tilt) -> list[dict]:
    """:func:`_estimators` on each antithetic half of the inner set; ``tilt`` = (−s𝓜, f_χ, f_z, loss)."""
    return [_estimators(pt, _tilt_stats(*tilt, pt.s, idx)) for idx in inner.halves]


def _n1_bias(halves, est, alpha) -> dict:
    """Jackknife estimates of the 1/N₁ bias of ``_BIAS_KEYS`` (``*_n1_bias``): the mean of the two
    half-set estimates (N₁/2 each) minus the full one."""
    out = {}
    for key in _BIAS_KEYS:
        scale = alpha if key in CONJ1 else 1.0
        half = 0.5 * (np.mean(halves[0][key]) + np.mean(halves[1][key]))
        out[key + "_n1_bias"] = scale * float(half - np.mean(est[key]))
    return out


def rsb1_channel(
    sigma, samples: tuple[Fields, Inner], alpha, s, x, *, warm=None, bias=True, debias=False, **prox_kw
) -> dict:
    """1RSB output channel at state x and Parisi parameter s (docs/theory.md §13), hard prox.

    Args:
        sigma: score name (``prox.PROX_SIGMAS``).  samples: (fields, inner): the outer samples
        (:class:`Fields`, N₀, the RS fields) and :class:`Inner` (N₁, shared or per outer sample).
        alpha: n/D > 0.
        s: Parisi parameter > 0.
        x: (8,) state in the order ``STATE1`` (V > 0, δq ≥ 0, q₀ ≥ m²).
        warm: (N₀·N₁, W, L) prox warm starts (``out["warm"]`` of the previous pass) or None.
        bias: also compute the jackknife N₁-bias of δq̂, q̂₀ and Φ_out (``*_n1_bias``).
        debias: per outer sample, replace every estimator by its two-half jackknife
            2·est(N₁) − ½(est(half 1) + est(half 2)), which removes the O(1/N₁) bias of the
            self-normalised inner averages (docs/theory.md §13); ``*_n1_bias`` stay those of the
            plain estimators.
        prox_kw: options of :func:`slrpipe.theory.replica.prox.prox` by name (``ProxOptions``),
            e.g. multistart (False = centre and warm starts only: a cheap pass) and n_steps
            (Newton steps); softmin is always None (the hard prox).
    Returns:
        dict: the conjugates ``CONJ1`` (floats, α included) and their ``*_se`` (outer antithetic
        pairs), q1hat_a = q0hat_a + dqhat_a, phi_out = E −(1/s) log E_in e^{−s𝓜}, kl = E KL,
        train_loss = E⟨½(y − f)²⟩ (per sample, + ``*_se``), ess_median (median over outer samples of
        1/Σπ²), ``*_n1_bias`` (jackknife estimates of the 1/N₁ self-normalisation bias, same units as
        the key; with a shared inner set they miss its sampling error, which dominates at N₁ = 8 —
        compare N₁ with 4N₁, :func:`inner_size_check`; with independent sets that error is in the
        ``*_se``; docs/theory.md §13), prox_multi (fraction of prox solves with ≥ 2 starts ending at
        different values), warm (N₀·N₁, 3, L), phi_out_samples (N₀,): Φ_out per outer sample (jackknifed
        with ``debias``), whose antithetic-paired mean is ``phi_out``; sigma_terms: dict of (N₀,)
        arrays, the per-outer-sample estimators of q0hat_k, dqhat_k, q0hat_v, dqhat_v (α included)
        and kl, whose means are those keys (for the s.e. of Σ, :func:`thermodynamics`);
        train_loss_samples (N₀,): ⟨loss⟩ per outer sample, whose mean is ``train_loss``.
    Raises:
        ValueError: bad σ, α ≤ 0, s ≤ 0 or an invalid state.
        TypeError: an unknown prox option, or softmin among them.
    """
    _check_channel_args(sigma, alpha, s)
    fields, inner = samples
    x = check_state(x)
    p, (psi, fk, fv, loss), a, jac = _pair_prox(sigma, fields, inner, x, warm, prox_kw)
    tilt = (-s * psi, fk, fv, loss)
    st = _tilt_stats(*tilt, s)
    pt = _Point(fields, x, s, a, jac)
    est = _estimators(pt, st)
    halves = _half_estimators(pt, inner, tilt) if bias or debias else None
    out = _n1_bias(halves, est, alpha) if bias else {}
    if debias:
        est = {k: 2 * v - 0.5 * (halves[0][k] + halves[1][k]) for k, v in est.items()}
    for key, v in est.items():
        mu, se = paired_mean_se(v)
        scale = alpha if key in CONJ1 else 1.0
        out[key], out[key + "_se"] = scale * mu, scale * se
    for c in ("k", "v"):
        out[f"q1hat_{c}"] = out[f"q0hat_{c}"] + out[f"dqhat_{c}"]
    out["phi_out_samples"] = np.asarray(est["phi_out"], float)
    out["train_loss_samples"] = np.asarray(est["train_loss"], float)
    out["sigma_terms"] = {k: (alpha if k in CONJ1 else 1.0) * np.asarray(est[k], float) for k in _SIGMA_KEYS}
    out["ess_median"] = float(np.median(st["ess"]))
    out["prox_multi"] = float(np.mean(p["n_best"] < p["n_starts"]))
    out["warm"] = np.stack([p["chi"], p["chi2"], p["chi3"]], axis=1)
    return out


def rsb1_prior(lam, s, conj) -> np.ndarray:
    """Ridge prior of the 1RSB (docs/theory.md §13): the state (8,) from the conjugates ``conj``
    (a dict with the keys ``CONJ1``).

    Raises:
        ValueError: λ + V̂ ≤ 0, or A = λ + V̂ − sδq̂ ≤ 0 (the inner Gaussian integral diverges).
    """
    out = []
    for a in ("k", "v"):
        mh, q0h, dqh, Vh = (float(conj[f"{k}_{a}"]) for k in ("mhat", "q0hat", "dqhat", "Vhat"))
        # q̂₀ = αE⟨f⟩² and δq̂ = αE Var_π f are ≥ 0; their jackknifed estimates can dip below 0
        q0h, dqh = max(q0h, 0.0), max(dqh, 0.0)
        if not lam + Vh > 0:
            raise ValueError(f"lam: λ + V̂_{a} must be > 0, got λ={lam}, V̂={Vh}")
        V = 1.0 / (lam + Vh)
        A = lam + Vh - s * dqh
        if not A > 0:
            raise ValueError(f"s: A_{a} = λ + V̂ − sδq̂ must be > 0, got {A} (s={s}, δq̂={dqh})")
        out += [mh / A, (mh * mh + q0h) / A**2, V * V * dqh / (1 - s * V * dqh), V]
    return np.array(out)


def _log1p(u: float) -> float:
    """log(1 + u), NaN for u ≤ −1: outside the domain (A ≤ 0) the potential is undefined, and a
    non-converged state can end there."""
    return math.log1p(u) if u > -1 else math.nan


def thermodynamics(lam, alpha, s, x, ch) -> dict:
    """Φ(s), Σ(s) and e(s) (docs/theory.md §13) at state x (8,) from the channel pass ``ch`` at x.

    Φ = Σ_a [m̂m − ½V̂q₁ + ½q̂₁V + (s/2)(q̂₁q₁ − q̂₀q₀) + (1/2s) log(1 − sGδq̂) − (m̂² + q̂₀)/(2A)]
        + α E Φ_out,  G = 1/(λ + V̂), A = λ + V̂ − sδq̂  (units: objective per D);
    Σ = Σ_a [(s²/2) q̂₀δq − (s/2) Vδq̂ − ½ log(1 − sVδq̂)] − α E KL  (complexity per D; exact at the
        saddle, where it equals s² dΦ/ds);
    e = Φ + Σ/s  and  e_direct = α E⟨loss⟩ + (λ/2)(q₁_k + q₁_v)  (they agree at the saddle).
    Returns dict: phi, phi_se (outer MC s.e. of Φ: that of α E Φ_out, the prior terms being
    stationary at the saddle), sigma, sigma_samples (N₀,): Σ linearised per outer sample (the delta
    method on ``ch["sigma_terms"]`` at the state x held fixed: Σ + Σ_k ∂Σ/∂c_k (c_k,i − c_k) for the
    estimators c = q̂₀, δq̂ per column and −αKL; mean Σ), sigma_se (their antithetic-paired s.e.:
    the covariances of the estimators included), energy, energy_direct, energy_direct_se,
    energy_samples (N₀,): e_direct per outer sample (mean energy_direct), objective
    (= energy_direct), train_loss; phi, sigma and energy are NaN where the conjugates leave the
    domain (1 − sVδq̂ ≤ 0, as a non-converged state can).
    Raises:
        KeyError: ``ch`` without ``sigma_terms`` or ``train_loss_samples`` (a pass of
        :func:`rsb1_channel` has them).
    """
    phi, sig = alpha * ch["phi_out"], -alpha * ch["kl"]
    q1sum = 0.0
    terms = ch["sigma_terms"]
    dev = -alpha * (terms["kl"] - ch["kl"])
    for c, a in ((0, "k"), (4, "v")):
        m, q0, dq, V = x[c : c + 4]
        mh, q0h, dqh, Vh = (ch[f"{k}_{a}"] for k in ("mhat", "q0hat", "dqhat", "Vhat"))
        q1, q1h = q0 + dq, q0h + dqh
        G, A = 1.0 / (lam + Vh), lam + Vh - s * dqh
        phi += (
            mh * m
            - 0.5 * Vh * q1
            + 0.5 * q1h * V
            + 0.5 * s * (q1h * q1 - q0h * q0)
            + _log1p(-s * G * dqh) / (2 * s)
            - (mh * mh + q0h) / (2 * A)
        )
        sig += 0.5 * s * s * q0h * dq - 0.5 * s * V * dqh - 0.5 * _log1p(-s * V * dqh)
        # ∂Σ/∂q̂₀ and ∂Σ/∂δq̂ of this column, for the per-sample linearisation
        g = -0.5 * s * V + 0.5 * s * V / (1 - s * V * dqh)
        dev = dev + 0.5 * s * s * dq * (terms[f"q0hat_{a}"] - q0h) + g * (terms[f"dqhat_{a}"] - dqh)
        q1sum += q1
    sig_i = sig + dev
    e_direct = alpha * ch["train_loss"] + 0.5 * lam * q1sum
    e_i = alpha * ch["train_loss_samples"] + 0.5 * lam * q1sum
    return {
        "phi": float(phi),
        "phi_se": float(alpha * ch["phi_out_se"]),
        "sigma": float(sig),
        "sigma_samples": sig_i,
        "sigma_se": paired_mean_se(sig_i)[1] if math.isfinite(sig) else math.nan,
        "energy": float(phi + sig / s),
        "energy_direct": float(e_direct),
        "energy_direct_se": float(alpha * ch["train_loss_se"]),
        "energy_samples": e_i,
        "objective": float(e_direct),
        "train_loss": float(ch["train_loss"]),
    }


def state_residual(x, fx):
    return float(np.max(np.abs(fx - x) / (1 + np.abs(x))))
