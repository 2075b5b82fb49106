"""Zero-temperature one-step replica-symmetry breaking (1RSB) of ridge ERM on SLR (docs/theory.md §13).

Per column a ∈ {k, v} (the manifold of docs/theory.md §6) the state is x = (m_a, q₀_a, δq_a, V_a):
overlap with the teacher, overlap between two minima ("states"), δq = q₁ − q₀ (q₁ the self-overlap
of one minimum) and the within-state response V; the Parisi parameter s (> 0, units 1/objective per
D; the y of Mézard–Parisi) weights states by e^{−sD·e}. One fixed-point map:

* output channel (:func:`rsb1_channel`): nested Monte Carlo. Outer = the RS ``Fields`` (teacher,
  label, outer student noise ξ⁰, antithetic); inner = ``Inner`` (N₁ vectors ξ¹ per outer sample,
  independent across outer samples, or one set shared by all; antithetic).
  ω = m h* + √(q₀ − m²) ξ⁰ + √δq ξ¹; the hard global prox of
  :func:`slrpipe.theory.replica.prox.prox` at V gives 𝓜 and f = (h − ω)/V per (outer, inner) pair;
  per outer sample the tilt π ∝ e^{−s𝓜} gives ⟨f⟩, Var_π f, log Z, KL, ⟨loss⟩ (optionally each
  jackknifed over the two halves of the inner set) and the conjugates
  q̂₀ = αEΣ⟨f⟩², δq̂ = αEΣVar_π f, V̂ = −αEΣ⟨f⟩ξ⁰/√(q₀ − m²) + sδq̂ and the Rao–Blackwellised m̂;
* ridge prior (:func:`rsb1_prior`): V = 1/(λ + V̂), A = λ + V̂ − sδq̂, m = m̂/A,
  q₀ = (m̂² + q̂₀)/A², δq = V²δq̂/(1 − sVδq̂).

:func:`solve_rsb1` iterates it at one s; :func:`thermodynamics` gives Φ(s), the complexity Σ(s) and
the energy e(s) at a point; :func:`rsb1_ground_state` scans s, finds s* with Σ(s*) = 0 and returns
the ground-state energy e_gs = Φ(s*) (= the 1RSB training objective per D) and test error, next to
the RS solution on the same samples. Everything is float64 numpy around the JAX prox.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp, ndtri
from scipy.stats import qmc as _qmc

from slrpipe.theory.replica.channel import _mean_se
from slrpipe.theory.replica.fields import Draw, Fields, check_task
from slrpipe.theory.replica.options import ReplicaTask
from slrpipe.theory.replica.prox import check_sigma, prox
from slrpipe.theory.replica.solver import anderson_point
from slrpipe.theory.replica.solver import test_error as rs_test_error

log = logging.getLogger(__name__)

#: state order: per column (k, then v) m, q₀, δq, V
STATE1 = ("m_k", "q0_k", "dq_k", "V_k", "m_v", "q0_v", "dq_v", "V_v")
#: conjugates returned by :func:`rsb1_channel` and used by :func:`rsb1_prior`
CONJ1 = ("mhat_k", "q0hat_k", "dqhat_k", "Vhat_k", "mhat_v", "q0hat_v", "dqhat_v", "Vhat_v")
_BIAS_KEYS = ("dqhat_k", "dqhat_v", "q0hat_k", "q0hat_v", "phi_out")


@dataclass(frozen=True)
class Inner:
    """Inner (within-state) student noise ξ¹: one set shared by all outer samples, or an
    independent set per outer sample.

    xi_k, xi_v: (N₁, L) shared, or (N₀, N₁, L) per outer sample; standard normals, and along the
    N₁ axis rows j and j + N₁/2 are opposite (antithetic).
    halves: two index arrays into the N₁ axis, each an antithetic half-set (the jackknife of the N₁
    bias).
    """

    xi_k: np.ndarray
    xi_v: np.ndarray
    seed: int

    @property
    def n(self) -> int:
        """N₁, the number of inner noise vectors (per outer sample)."""
        return self.xi_k.shape[-2]

    @property
    def independent(self) -> bool:
        """True when every outer sample has its own inner set."""
        return self.xi_k.ndim == 3

    @property
    def halves(self) -> tuple[np.ndarray, np.ndarray]:
        """Index arrays of two halves of the inner sample, each closed under the antithetic pairing
        (the first and second quarter of the points and their mirrors): two independent N₁/2 estimates."""
        h, q = self.n // 2, self.n // 4
        first = np.concatenate([np.arange(q), h + np.arange(q)])
        return first, np.setdiff1d(np.arange(self.n), first)


def _sobol_normals(dim: int, half: int, rng) -> np.ndarray:
    """``half`` scrambled Sobol' points in R^dim mapped to standard normals (inverse CDF)."""
    sob = _qmc.Sobol(dim, scramble=True, seed=rng)
    u = sob.random_base2(max(math.ceil(math.log2(half)), 0))[:half]
    return ndtri(np.clip(u, 2.0**-60, 1 - 2.0**-53))


def draw_inner(L: int, n_inner: int, seed: int = 1, n_outer: int | None = None, qmc: bool = True) -> Inner:
    """N₁ = ``n_inner`` inner noise vectors (a multiple of 4): N₁/2 points in R^{2L} and their
    mirror images; the points are a scrambled Sobol' set (``scipy.stats.qmc.Sobol``, inverse normal
    CDF) or, with ``qmc`` False, iid standard normals.

    With ``n_outer`` = N₀, every outer sample i gets its own set (Sobol' scrambled from the seed
    ``[seed, i]``; iid: rows of ``default_rng(seed)``) (independent sets): the error of the inner
    average then averages out over the outer samples and enters their s.e., leaving the O(1/N₁) bias
    of the self-normalised averages (jackknifed, ``*_n1_bias``), whose 1/N₁ law is exact for iid
    antithetic pairs. Without it one set (seed ``seed``) is shared by all outer samples (common random
    numbers), whose own sampling error does not average out (docs/theory.md §13).

    Returns:
        :class:`Inner` with xi_k, xi_v of shape (N₁, L), or (N₀, N₁, L) with ``n_outer``.
    Raises:
        ValueError: n_inner not a positive multiple of 4, L < 1 or n_outer < 1.
    """
    if int(n_inner) != n_inner or n_inner < 4 or n_inner % 4:
        raise ValueError(f"n_inner: must be a positive multiple of 4, got {n_inner}")
    if int(L) != L or L < 1:
        raise ValueError(f"L: must be an integer ≥ 1, got {L}")
    if n_outer is not None and (int(n_outer) != n_outer or n_outer < 1):
        raise ValueError(f"n_outer: must be an integer ≥ 1, got {n_outer}")
    half, dim = int(n_inner) // 2, 2 * int(L)
    shape = (half, dim) if n_outer is None else (int(n_outer), half, dim)
    if not qmc:
        g = np.random.default_rng(int(seed)).standard_normal(shape)
    elif n_outer is None:
        g = _sobol_normals(dim, half, np.random.default_rng(int(seed)))
    else:
        g = np.stack([_sobol_normals(dim, half, np.random.default_rng([int(seed), i])) for i in range(int(n_outer))])
    g = np.concatenate([g, -g], axis=-2)
    return Inner(xi_k=g[..., :L], xi_v=g[..., L:], seed=int(seed))


class Rsb1Draw(NamedTuple):
    """How the samples of :func:`rsb1_ground_state` are drawn: n_outer: int, N₀ (outer samples, the
    RS fields: scrambled Sobol', :class:`~slrpipe.theory.replica.fields.Draw`); n_inner: int, N₁
    (a multiple of 4, :func:`draw_inner`); seed / inner_seed: int, their seeds; independent: bool,
    an inner set per outer sample (default) or one shared set (docs/theory.md §13)."""

    n_outer: int = 2048
    n_inner: int = 16
    seed: int = 0
    inner_seed: int = 1
    independent: bool = True

    def samples(self, task) -> tuple[Fields, Inner]:
        """(outer fields, inner set) of ``task`` (a :class:`ReplicaTask`) drawn this way.

        Raises:
            ValueError: as :func:`~slrpipe.theory.replica.fields.draw_fields` / :func:`draw_inner`.
        """
        L = ReplicaTask(*task).L
        fields = Draw(int(self.n_outer), int(self.seed), qmc=True).fields(task)
        n_outer = fields.n if self.independent else None
        return fields, draw_inner(int(L), int(self.n_inner), int(self.inner_seed), n_outer)


def _check_state(x):
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
        different values), warm (N₀·N₁, 3, L).
    Raises:
        ValueError: bad σ, α ≤ 0, s ≤ 0 or an invalid state.
        TypeError: an unknown prox option, or softmin among them.
    """
    _check_channel_args(sigma, alpha, s)
    fields, inner = samples
    x = _check_state(x)
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
        mu, se = _mean_se(v)
        scale = alpha if key in CONJ1 else 1.0
        out[key], out[key + "_se"] = scale * mu, scale * se
    for c in ("k", "v"):
        out[f"q1hat_{c}"] = out[f"q0hat_{c}"] + out[f"dqhat_{c}"]
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
    Returns dict: phi, sigma, sigma_se (outer MC s.e. of Σ, linearised), energy, energy_direct,
    energy_direct_se, objective (= energy_direct), train_loss; phi, sigma and energy are NaN where
    the conjugates leave the domain (1 − sVδq̂ ≤ 0, as a non-converged state can).
    """
    phi, sig = alpha * ch["phi_out"], -alpha * ch["kl"]
    q1sum = 0.0
    lin2 = (alpha * ch["kl_se"]) ** 2
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
        # linearised s.e. (the conjugate means are nearly independent of the KL mean: upper-ish)
        g = -0.5 * s * V + 0.5 * s * V / (1 - s * V * dqh)
        lin2 += (0.5 * s * s * dq * ch[f"q0hat_{a}_se"]) ** 2 + (g * ch[f"dqhat_{a}_se"]) ** 2
        q1sum += q1
    e_direct = alpha * ch["train_loss"] + 0.5 * lam * q1sum
    return {
        "phi": float(phi),
        "sigma": float(sig),
        "sigma_se": float(math.sqrt(lin2)),
        "energy": float(phi + sig / s),
        "energy_direct": float(e_direct),
        "energy_direct_se": float(alpha * ch["train_loss_se"]),
        "objective": float(e_direct),
        "train_loss": float(ch["train_loss"]),
    }


def _residual(x, fx):
    return float(np.max(np.abs(fx - x) / (1 + np.abs(x))))


@dataclass(frozen=True)
class Rsb1Options:
    """How :func:`solve_rsb1` iterates (docs/theory.md §13).

    tol: on max_i |F(x)_i − x_i| / (1 + |x_i|), declared on full multi-start passes only.
    damping: d of x ← (1 − d)x + dF(x); a step leaving the domain (A ≤ 0, λ + V̂ ≤ 0) is retried
    with d halved (at most 6 times); also the mixing of the Anderson steps.  method: "anderson"
    (damped steps until the residual is below ``accel_below``, then type-II Anderson acceleration
    over the last ``memory`` + 1 passes; docs/theory.md §13) or "damped" (damped steps only).
    max_iter: cap on channel evaluations.  full_every: passes between full prox searches (the
    others start from the centre and the previous minima only, ~1/5 of the cost; a cheap pass
    within tol is confirmed by a full one).  n_steps: Newton steps per prox start.  patience: full
    passes without a new best residual that end the solve.  debias: the channel's two-half
    jackknife of the inner averages (:func:`rsb1_channel`)."""

    tol: float = 2e-4
    damping: float = 0.5
    method: str = "anderson"
    memory: int = 5
    accel_below: float = 0.1
    max_iter: int = 80
    full_every: int = 16
    n_steps: int = 25
    patience: int = 20
    debias: bool = True

    def __post_init__(self):
        if self.method not in ("anderson", "damped"):
            raise ValueError(f"method: one of anderson, damped, got {self.method!r}")


def _check_rsb1_task(point, s, fields: Fields) -> None:
    sigma, model, nu, L, delta, lam, alpha = point
    check_sigma(sigma)
    check_task(model, nu, L, delta)
    if not (lam > 0 and alpha > 0 and s > 0):
        raise ValueError(f"lam, alpha, s: must be > 0, got {lam}, {alpha}, {s}")
    if fields.L != L or fields.model != model:
        raise ValueError(f"fields: drawn for model={fields.model}, L={fields.L}, not {model}, {L}")


def _damped(x, fx, damping):
    """(1 − d)x + dF(x), d halved (at most 6 times) while the step leaves the domain; None if
    every step does."""
    d = damping
    for _ in range(7):
        xn = (1 - d) * x + d * fx
        try:
            return _check_state(xn)
        except ValueError:
            d /= 2
    return None


class _Accel:
    """The Anderson phase of :func:`_iterate_rsb1`: whether it has begun, and its memory of
    iterates xs and residual vectors fs = F(x) − x (full passes only: one map)."""

    def __init__(self):
        self.on, self.xs, self.fs = False, [], []

    def step(self, x, fx, best, o: Rsb1Options):
        """The next state after the pass F(x) = fx; ``best`` = (residual, x, channel pass, F(x)) of
        the best full pass. Restarts from the best state (damped step, fresh memory) where the
        residual exceeds 10 × the best one; a point outside the domain falls back to the damped step."""
        if _residual(x, fx) > 10 * best[0]:
            self.xs, self.fs = [], []
            x, fx = best[1], best[3]
        self.xs, self.fs = (self.xs + [x])[-(o.memory + 1) :], (self.fs + [fx - x])[-(o.memory + 1) :]
        if len(self.xs) > 1:
            try:
                return _check_state(anderson_point(np.array(self.xs), np.array(self.fs), o.damping))
            except ValueError:
                self.xs, self.fs = [x], [fx - x]
        return _damped(x, fx, o.damping)


def _iterate_rsb1(point, s, samples, x, warm, o: Rsb1Options):
    """The iteration of :func:`solve_rsb1` from x on ``samples`` = (fields, inner) (damped, then
    Anderson: :class:`Rsb1Options`); ``point`` = (sigma, model, nu, L, delta, lam, alpha).

    Passes are cheap (the centre and the previous pass's three best minima per sample) except the
    first when there are no warm starts, every ``full_every``-th and the confirmation of a cheap
    pass within ``tol``, which search from every start; convergence and the best state are those of
    full passes only, so the fixed point returned is one of the full-search map (docs/theory.md §13).
    Returns (residual, state, the full channel pass there (with the N₁ biases; None if no full pass
    gave a state), converged, evaluations): those of the last full pass when converged, else of the
    best full pass."""
    sigma, lam, alpha = point[0], point[5], point[6]
    best = (math.inf, x, None, x)
    acc = _Accel()
    stall, it, conv, confirm = 0, 0, False, False
    for it in range(1, int(o.max_iter) + 1):
        full = (it == 1 and warm is None) or it % o.full_every == 0 or confirm
        ch = rsb1_channel(
            sigma, samples, alpha, s, x, warm=warm, multistart=full, n_steps=o.n_steps, bias=full, debias=o.debias
        )
        warm = ch["warm"]
        try:
            fx = rsb1_prior(lam, s, ch)
        except ValueError as err:  # λ + V̂ ≤ 0 or A ≤ 0: no state to step to
            log.warning("1RSB s=%g: %s; stopped at the best state found", s, err)
            break
        r = _residual(x, fx)
        if full and r < best[0]:
            best, stall = (r, x.copy(), ch, fx), 0
        elif full:
            stall += 1
        if full and r < o.tol:
            conv = True
            break
        if stall >= o.patience:
            break
        # a cheap pass within tol is confirmed by a full one at the same state (the two maps agree
        # to ~1e-10 unless the search finds a new minimum for some sample)
        confirm = not full and r < o.tol
        if confirm:
            continue
        if o.method == "anderson" and not acc.on and r < o.accel_below:
            acc.on = True
        x = acc.step(x, fx, best, o) if acc.on else _damped(x, fx, o.damping)
        if x is None:
            log.warning("1RSB s=%g: every damped step leaves the domain; stopped at the best state found", s)
            break
    resid, x, ch, _ = (r, x, ch, fx) if conv else best
    return resid, x, ch, conv, it


def _rsb1_outputs(point, s, x, ch) -> dict:
    """State (+ q₁), conjugates (+ ``*_se``), :func:`thermodynamics`, test error and N₁ biases of
    :func:`solve_rsb1` at x from the full channel pass ``ch`` there."""
    sigma, model, nu, L, delta, lam, alpha = point
    out = dict(zip(STATE1, x.tolist()))
    out.update(q1_k=x[1] + x[2], q1_v=x[5] + x[6])
    for k in CONJ1:
        out[k], out[k + "_se"] = ch[k], ch[k + "_se"]
    out.update(thermodynamics(lam, alpha, s, x, ch))
    out["test_error"] = rs_test_error(sigma, model, nu, L, delta, (x[0], x[1] + x[2], x[4], x[5] + x[6]))
    out.update({k: v for k, v in ch.items() if k.endswith("_n1_bias")})
    return out


def _log_rsb1(point, s, out) -> None:
    log.info(
        "1RSB %s α=%g λ=%g s=%g: δq=(%.3g, %.3g) Φ=%.5f Σ=%.3g e=%.5f e_test=%.4f resid=%.1e conv=%s (%.0fs)",
        point[0],
        point[6],
        point[5],
        s,
        out["dq_k"],
        out["dq_v"],
        out["phi"],
        out["sigma"],
        out["energy_direct"],
        out["test_error"],
        out["residual"],
        out["converged"],
        out["wall_time"],
    )


def solve_rsb1(
    task: ReplicaTask,
    lam,
    alpha,
    s,
    *,
    samples: tuple[Fields, Inner],
    init,
    warm=None,
    options: Rsb1Options | None = None,
) -> dict:
    """The 1RSB saddle point at Parisi parameter s by damped iteration (docs/theory.md §13).

    Args:
        task: :class:`~slrpipe.theory.replica.options.ReplicaTask` (sigma, model, nu, L, delta),
            or a plain tuple of those five, as for ``solve_replica``.
        lam: ridge λ > 0.  alpha: n/D > 0.  s: Parisi parameter > 0 (floats).
        samples: (fields, inner): outer samples (:class:`Fields`, N₀, drawn for the task's model
            and L) and :class:`Inner` (N₁); e.g. ``Rsb1Draw().samples(task)``.
        init: (8,) starting state (``STATE1`` order), e.g. the RS solution with δq = 0.05 q.
        warm: (N₀·N₁, W, L) prox warm starts from an earlier solve on the same samples.
        options: :class:`Rsb1Options` (defaults if None): tol, damping, max_iter, full_every,
            n_steps, patience.
    Returns:
        dict: the state ``STATE1`` (and q1_k, q1_v), the conjugates ``CONJ1`` with ``*_se``,
        :func:`thermodynamics` (phi, sigma, sigma_se, energy, energy_direct, objective,
        train_loss), test_error (RS formula of docs/theory.md §7 at (m, q₁): a typical minimum at s),
        ess_median, ``*_n1_bias``, residual, converged, iterations, wall_time, s, n_outer, n_inner,
        prox_warm. Reported at the last full pass's state when converged, else at the best one.
    Raises:
        ValueError: any argument outside its range.
        TypeError: ``task`` not of five fields.
    """
    o = options or Rsb1Options()
    point = (*ReplicaTask(*task), lam, alpha)
    fields, inner = samples
    _check_rsb1_task(point, s, fields)
    t0 = time.perf_counter()
    resid, x, ch, conv, it = _iterate_rsb1(point, s, samples, _check_state(init), warm, o)
    if ch is None:  # no full pass gave a state: one at the start, for its outputs
        ch = rsb1_channel(
            point[0], samples, alpha, s, x, warm=warm, multistart=True, n_steps=o.n_steps, debias=o.debias
        )
    out = _rsb1_outputs(point, s, x, ch)
    out.update(
        ess_median=ch["ess_median"],
        residual=resid,
        converged=conv,
        iterations=it,
        wall_time=time.perf_counter() - t0,
        s=float(s),
        n_outer=fields.n,
        n_inner=inner.n,
        train_loss_se=ch["train_loss_se"],
        prox_warm=ch["warm"],
    )
    _log_rsb1(point, s, out)
    return out


def rs_state(rs: dict, frac: float = 0.0) -> np.ndarray:
    """1RSB state (8,) from an RS solution dict (``solve_replica``): q₁ = q_RS, δq = frac·(q − m²)."""
    x = []
    for a in ("k", "v"):
        m, q, V = rs[f"m_{a}"], rs[f"q_{a}"], rs[f"V_{a}"]
        dq = frac * (q - m * m)
        x += [m, q - dq, dq, V]
    return np.array(x)


_SUMMARY = (
    "s",
    "phi",
    "sigma",
    "sigma_se",
    "energy",
    "energy_direct",
    "energy_direct_se",
    "test_error",
    "dq_k",
    "dq_v",
    "q1_k",
    "q1_v",
    "m_k",
    "m_v",
    "V_k",
    "V_v",
    "ess_median",
    "residual",
    "converged",
    "dqhat_k_n1_bias",
    "dqhat_v_n1_bias",
    "dqhat_k_se",
    "dqhat_v_se",
    "phi_out_n1_bias",
    "wall_time",
)


_RS_KEYS = (
    "objective",
    "test_error",
    "train_loss",
    "train_loss_se",
    "m_k",
    "q_k",
    "V_k",
    "m_v",
    "q_v",
    "V_v",
    "residual",
    "converged",
)


def _log_scan(s, r) -> None:
    log.info(
        "1RSB scan s=%g: Φ=%.6f e=%.6f ± %.6f Σ=%.3e ± %.1e e_test=%.5f δq̂ N₁-bias (%.2g, %.2g) vs s.e. "
        "(%.2g, %.2g), Φ_out N₁-bias %.2g, ESS %.1f",
        s,
        r["phi"],
        r["energy_direct"],
        r["energy_direct_se"],
        r["sigma"],
        r["sigma_se"],
        r["test_error"],
        r["dqhat_k_n1_bias"],
        r["dqhat_v_n1_bias"],
        r["dqhat_k_se"],
        r["dqhat_v_se"],
        r["phi_out_n1_bias"],
        r["ess_median"],
    )


def _scan(solve, grid, rs, frac, stop_after_physical=True):
    """Solve at each s of the ascending ``grid`` (``solve(s, init=, warm=)``: :func:`solve_rsb1` at
    the point), each from the previous one's state and warm starts (the first, and any after a
    collapse to RS, from the RS state with δq = frac·(q − m²)). With ``stop_after_physical``, once
    the physical part has ended (:func:`physical_closed`) the remaining s are not solved: no row
    after that turn is physical, so they change neither the state reported nor s* (a crossing
    there lies off the physical part; slrpipe.store.rsb1), only the unphysical tail of Σ(e); their
    rows are NaN, not converged. Returns (summaries ``_SUMMARY``, full results or None)."""
    x, warm, scan, sols = rs_state(rs, frac), None, [], []
    for s in grid:
        if stop_after_physical and physical_closed(scan):
            log.info("1RSB scan s=%g: not solved, the physical part ended before it", s)
            scan.append(dict.fromkeys(_SUMMARY, math.nan) | {"s": float(s), "converged": False, "wall_time": 0.0})
            sols.append(None)
            continue
        r = solve(s, init=x, warm=warm)
        sols.append(r)
        _log_scan(s, r)
        scan.append({k: r[k] for k in _SUMMARY})
        x, warm = np.array([r[k] for k in STATE1]), r["prox_warm"]
        if r["dq_k"] + r["dq_v"] < 1e-6 * frac:  # collapsed to RS: re-seed the next s
            x = rs_state(rs, frac)
    return scan, sols


def _star(solve, scan, sols) -> dict | None:
    """The summary at s*, where Σ crosses zero from above between two successive converged grid
    points (a row that did not converge between them is passed over: its Σ is not a solution's; s*
    by linear interpolation, solved from the nearer one by ``solve`` as in :func:`_scan`); None
    where it does not."""
    done = [i for i, r in enumerate(scan) if r["converged"]]
    for i, j in zip(done, done[1:]):
        a, b = scan[i], scan[j]
        if a["sigma"] > 0 >= b["sigma"]:
            s_star = a["s"] + (b["s"] - a["s"]) * a["sigma"] / (a["sigma"] - b["sigma"])
            near = sols[i] if s_star - a["s"] < b["s"] - s_star else sols[j]
            r = solve(s_star, init=np.array([near[k] for k in STATE1]), warm=near["prox_warm"])
            return {k: r[k] for k in _SUMMARY}
    return None


#: a converged scan row "rises" when its e(s) exceeds the previous one's by more than this many of
#: its outer s.e. (:func:`physical`, :func:`physical_closed`: one rule for both)
RISE_REL_TOL = 0.1


def _turns(scan, rel_tol):
    """(converged rows, rises, start): the converged rows of finite energy, whether each rises
    above the previous one by more than ``rel_tol`` × its outer s.e., and the first one that the
    next does not rise above (None where every one rises)."""
    conv = [i for i, r in enumerate(scan) if r["converged"] and math.isfinite(r["energy_direct"])]
    e = lambda i: scan[i]["energy_direct"]
    rises = [e(b) > e(a) + rel_tol * scan[b]["energy_direct_se"] for a, b in zip(conv, conv[1:])]
    return conv, rises, next((k for k, up in enumerate(rises) if not up), None)


def physical(scan, rel_tol: float = RISE_REL_TOL) -> np.ndarray:
    """Which rows of an s scan (``rsb1_ground_state(...)["scan"]``, ascending s) lie on the physical
    part of the complexity curve, where de/ds ≤ 0 (Σ(e) concave, docs/theory.md §13). A converged
    row "rises" when its e(s) exceeds the previous converged row's by more than ``rel_tol`` × its
    outer s.e. (the energies of one scan share their samples, so their differences are far less
    noisy than that s.e.). The physical part starts at the first converged row that the next one
    does not rise above — where e(s) stops rising: a scan that starts at small s on the convex
    branch (de/ds > 0, Σ → 0⁺ as s → 0) reaches the concave one only there — and runs up to the
    next rise; every row after that turn is not physical. Where every converged row rises, the
    first one alone (its Φ is still a lower bound of e_gs).

    Returns:
        bool array, one per row.
    """
    conv, rises, start = _turns(scan, rel_tol)
    start = start or 0
    stop = next((k + 1 for k in range(start, len(rises)) if rises[k]), len(conv))
    out = np.zeros(len(scan), bool)
    out[conv[start:stop]] = True
    return out


def physical_closed(scan, rel_tol: float = RISE_REL_TOL) -> bool:
    """Whether the physical part of the rows so far (:func:`physical`) is final: it has started (a
    converged row the next one does not rise above) and ended (a later rise). Rows added after
    that are never physical, whatever they are; before it, a later row can still start or extend
    the physical part (a scan on the convex branch, where every row so far rises)."""
    _, rises, start = _turns(scan, rel_tol)
    return start is not None and any(rises[start:])


def rs_on_samples(task: ReplicaTask, lam, alpha, fields: Fields, init: dict) -> tuple[dict, dict]:
    """The RS fixed point on the 1RSB outer samples, for the comparison on the same samples and
    the start of the s scan: the soft-min channel from ``init`` (Anderson, then damped if that
    fails), then the hard channel (``softmin=None``, the one 1RSB uses; docs/theory.md §13) from it.

    Args:
        task: :class:`ReplicaTask`.  lam, alpha: floats > 0.  fields: the outer :class:`Fields`.
        init: starting order parameters (keys ``slrpipe.theory.replica.solver.STATE``), e.g. the
            RS sweep's fixed point at (λ, α) on its own samples.
    Returns:
        (soft, hard): the two ``solve_replica`` results.
    """
    from slrpipe.theory.replica.solver import STATE, solve_replica

    soft = solve_replica(task, lam, alpha, fields=fields, init=init, max_iter=80)
    if not soft["converged"]:
        start = {k: soft[k] for k in STATE}
        soft = solve_replica(task, lam, alpha, fields=fields, init=start, method="damped", max_iter=200, patience=200)
    hard = solve_replica(task, lam, alpha, fields=fields, init={k: soft[k] for k in STATE}, softmin=None, max_iter=60)
    return soft, hard


def rsb1_ground_state(
    task: ReplicaTask,
    lam,
    alpha,
    *,
    draw: Rsb1Draw | None = None,
    s_grid=(0.5, 1.0, 2.0, 4.0, 8.0),
    frac=0.05,
    rs: dict | None = None,
    options: Rsb1Options | None = None,
    stop_after_physical: bool = True,
) -> dict:
    """RS and 1RSB ground state of ridge ERM at one (λ, α) on the same samples (docs/theory.md §13).

    The RS fixed point (``solve_replica`` with the hard channel, ``softmin=None``, on the outer
    fields) starts a scan over ``s_grid`` (ascending, each s warm-started from the previous one; the
    first from the RS state with δq = frac·(q − m²)). The ground state is where Σ(s) crosses zero from
    above: s* by linear interpolation of Σ between the bracketing converged grid points (rows that
    did not converge are passed over), then one more solve at s*. Where Σ > 0 on the whole grid no crossing is claimed (``star`` is None; the largest Φ on
    the grid is then only a lower bound of e_gs).

    Args:
        task: :class:`~slrpipe.theory.replica.options.ReplicaTask` (sigma, model, nu, L, delta),
            or a plain tuple of those five, as for ``solve_replica``.
        lam: ridge λ > 0.  alpha: n/D > 0 (floats).
        draw: :class:`Rsb1Draw` (None: ``Rsb1Draw()``): n_outer N₀ (outer QMC samples, the RS
            sample size), n_inner N₁ (multiple of 4), seed / inner_seed their seeds.
        s_grid: Parisi parameters (> 0), a sequence of floats.  frac: δq/(q − m²) of the first
            start (float).  rs: an RS solution on the same fields to reuse.
        options: :class:`Rsb1Options` of every :func:`solve_rsb1` (defaults if None).
        stop_after_physical: leave the s after the end of the physical part unsolved (NaN rows,
            :func:`_scan`); False solves the whole grid (the unphysical tail of Σ(e) too).
    Returns:
        dict: rs (the RS solution: objective, test_error, train_loss(+_se), order parameters,
        residual, converged), scan (list of per-s summaries, keys ``_SUMMARY``), star (the summary at
        s*, or None), e_gs (Φ(s*) or NaN), test_error_gs, n_outer, n_inner.
    Raises:
        ValueError: as :func:`solve_rsb1`, or an empty / non-positive s_grid.
        TypeError: ``task`` not of five fields.
    """
    from slrpipe.theory.replica.solver import solve_replica

    task = ReplicaTask(*task).normalised()
    grid = sorted(float(v) for v in s_grid)
    if not grid or grid[0] <= 0:
        raise ValueError(f"s_grid: need Parisi parameters > 0, got {list(s_grid)}")
    fields, inner = Rsb1Draw(*(draw or ())).samples(task)
    if rs is None:
        rs = solve_replica(task, lam, alpha, fields=fields, softmin=None)
    solve = functools.partial(solve_rsb1, task, float(lam), float(alpha), samples=(fields, inner), options=options)
    scan, sols = _scan(solve, grid, rs, frac, stop_after_physical)
    star = _star(solve, scan, sols)
    return {
        "rs": {k: rs[k] for k in _RS_KEYS},
        "scan": scan,
        "star": star,
        "e_gs": star["phi"] if star else math.nan,
        "test_error_gs": star["test_error"] if star else math.nan,
        "n_outer": fields.n,
        "n_inner": inner.n,
    }


def inner_size_check(
    sigma, fields: Fields, alpha, lam, s, x, n_inners=(8, 32), inner_seed=1, independent=False, debias=False
) -> list[dict]:
    """The N₁ dependence at a fixed state: one full channel pass per N₁ in ``n_inners`` at state x
    (8,) and Parisi parameter s, on the same outer ``fields`` (docs/theory.md §13, "Finite N₁"),
    with one inner set shared by the outer samples or (``independent``) one per outer sample, and the
    plain or (``debias``) jackknifed estimators of :func:`rsb1_channel`.

    At a saddle point Φ is stationary, so the change of Φ between N₁ values at fixed x is, to first
    order, the change of the solved Φ. Returns one dict per N₁: n_inner, phi, sigma, energy_direct,
    the conjugates ``CONJ1``, the residual max_i |F(x)_i − x_i|/(1 + |x_i|) and ess_median.
    Raises:
        ValueError: as :func:`rsb1_channel` / :func:`draw_inner`.
    """
    out = []
    for n1 in n_inners:
        inner = draw_inner(fields.L, int(n1), inner_seed, fields.n if independent else None)
        ch = rsb1_channel(sigma, (fields, inner), alpha, s, x, debias=debias)
        th = thermodynamics(lam, alpha, s, np.asarray(x, float), ch)
        fx = rsb1_prior(lam, s, ch)
        out.append(
            {
                "n_inner": int(n1),
                **{k: th[k] for k in ("phi", "sigma", "energy_direct")},
                **{k: ch[k] for k in CONJ1},
                "residual": _residual(np.asarray(x, float), fx),
                "ess_median": ch["ess_median"],
            }
        )
    return out
