"""Bayes-optimal test error at finite α: Nishimori state evolution of SLR (docs/theory.md §8).

The Bayes-optimal student knows the data law and the prior W* ~ N(0, I₂) column-wise; its replica
symmetric fixed point has Q = M (Nishimori), V = I − M, and on the manifold (docs/theory.md §6)
M = diag(m_k, m_v). Per column a ∈ {k, v}:
    m_a = m̂_a / (1 + m̂_a),    m̂_a = α E Σ_ℓ (∂_{ω_ℓa} log Z_out)²,
    Z_out(y, ω) = ∫ Π_ℓ N(h_ℓ; ω_ℓ, V) G(h, y) dh = Σ_ε c_ε(ω_χ) N(y; ω_zε, s²),  s² = 1 − m_v + Δ²,
with c_ε = exp(√ν ω_χε − ν m_k/2)/L (spiked-SLR, closed form), c_ε = P(argmax_ℓ χ_ℓ = ε),
χ ~ N(ω_χ, (1 − m_k) I) (max-SLR, ν = ∞; one-dimensional Gauss–Hermite quadrature) and
c_ε = 1/L (max-SLR, ν = 0). The expectation is over the Nishimori joint law: teacher fields
h* from the data law (``fields.draw_fields``), ω_a = m_a h*_a + √(m_a − m_a²) ξ_a, y from the
teacher. Gradients of log Z_out come from JAX autodiff.

The Bayes-optimal predictor is E[y | ω] = Σ_ε π_ε ω_zε with π_ε = c_ε / Σ c, and its test error
(MSE, includes Δ²) is the expected posterior variance E[s² + Σ_ε π_ε ω_zε² − (Σ_ε π_ε ω_zε)²].
Given ω_χ, the ω_zℓ are iid N(0, m_v) and independent of ε (the tilt acts on χ only), so this
equals 1 + Δ² − m_v E Σ_ε π_ε² — a Rao–Blackwellised estimator with values in [1/L, 1]. α → ∞ gives m → 1 and the Bayes
risk of model.md §4; L = 1 reduces to Gaussian linear regression (m² − (1 + α + Δ²)m + α = 0).

The iteration is monotone in m, so an uninformed start (m ≈ 0) converges to the lowest fixed
point and an informed start (m ≈ 1) to the highest; when they differ (a first-order transition)
the one with the larger RS free entropy Φ = Σ_a [m̂_a(1 − m_a)/2 − ½ log(1 + m̂_a)] + α E log Z_out
is the Bayes-optimal one and ``coexistence`` is set (the other, uninformed branch is what
message passing reaches from scratch: it is reported as ``test_error_uninformed``).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import operator
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr
from jax.scipy.special import erfc, logsumexp

from slrpipe.setting import Setting
from slrpipe.theory.replica.channel import paired_mean_se
from slrpipe.theory.replica.fields import Fields, draw_fields
from slrpipe.vocabulary import DEFAULTS

log = logging.getLogger(__name__)

_GH_NODES = 24  # |error| of c_ε ≤ 1e-9 against 128 nodes (measured)


def check_bayes_model(model: str, nu: float) -> None:
    """Raise ValueError unless Z_out is implemented for (model, ν): spiked-SLR any ν; max-SLR ν ∈ {0, ∞}."""
    if model == "max" and not (nu == 0 or math.isinf(nu)):
        raise ValueError(f"nu: the Bayes-optimal state evolution of max-SLR supports nu = 0 or inf, got {nu}")


def _log_c(model, nu, L, wk, m_k):
    """log c_ε(ω_χ), shape (L,)."""
    if model == "spiked":
        return math.sqrt(nu) * wk - nu * m_k / 2 - math.log(L)
    if nu == 0 or L == 1:
        return jnp.full((L,), -math.log(L))
    # P(argmax = ε) = E_t Π_{ℓ≠ε} Φ((ω_ε − ω_ℓ)/√V + t), t ~ N(0, 1), by Gauss–Hermite; in
    # probability space (Φ is ~5× cheaper than log Φ), floored so that log c stays finite.
    # Φ(x) = erfc(−x/√2)/2, accurate in both tails, where jax.scipy's ndtr evaluates erf and
    # erfc on every element (5.6× slower; the same values to 6·10⁻¹⁴ relative). Only the pairs
    # ℓ ≠ ε, and Π_ℓ as L − 2 elementwise products (L is static): reverse mode through jnp.prod
    # costs ~3× its forward. Value and gradient at N = 8192, L = 3, one core: 108 → 56 ms.
    t, w = np.polynomial.hermite_e.hermegauss(_GH_NODES)
    w = w / math.sqrt(2 * math.pi)
    sv = jnp.sqrt(jnp.maximum(1 - m_k, 1e-12))
    others = np.array([[j for j in range(L) if j != e] for e in range(L)])  # (L, L − 1)
    a = (wk[:, None] - wk[others]) / sv  # a[ε, j] = (ω_ε − ω_{others[ε, j]})/√V
    cdf = 0.5 * erfc(-(a[:, :, None] + t[None, None, :]) / math.sqrt(2))  # Φ, (ε, j, node)
    cdf = functools.reduce(operator.mul, [cdf[:, j] for j in range(L - 1)])
    return jnp.log(jnp.maximum(cdf @ w, 1e-300))


def _log_zout(wk, wv, y, m, delta, model, nu):
    """log Z_out(y, ω) at overlaps m = (m_k, m_v) and, as auxiliary output, Σ_ε π̄_ε² with
    π̄ = c/Σc (the ω_χ-only posterior of ε)."""
    m_k, m_v = m
    L = wk.shape[0]
    s2 = 1 - m_v + delta**2
    lc = _log_c(model, nu, L, wk, m_k)
    lz = logsumexp(lc - (y - wv) ** 2 / (2 * s2)) - 0.5 * jnp.log(2 * math.pi * s2)
    return lz, jnp.sum(jax.nn.softmax(lc) ** 2)


# Δ is traced (one compilation for every Δ); model and ν select the branch of log c_ε
@functools.partial(jax.jit, static_argnames=("model", "nu"))
def _channel(wk, wv, y, m, delta, model, nu):
    def one(a, b, c):
        (lz, p2), (gk, gv) = jax.value_and_grad(_log_zout, argnums=(0, 1), has_aux=True)(a, b, c, m, delta, model, nu)
        return lz, jnp.sum(gk**2), jnp.sum(gv**2), p2

    return jax.vmap(one)(wk, wv, y)


def bo_channel(fields: Fields, alpha: float, m_k: float, m_v: float) -> dict:
    """Nishimori output channel at overlaps (m_k, m_v) ∈ [0, 1)², Monte Carlo over ``fields``.

    Returns:
        dict: mhat_k, mhat_v (α E Σ_ℓ g²), log_zout (E log Z_out), test_error (expected posterior
        variance, MSE incl. Δ²) and their antithetic-pair standard errors ``*_se``.
    Raises:
        ValueError: α ≤ 0 or overlaps outside [0, 1).
    """
    if not alpha > 0:
        raise ValueError(f"alpha: must be > 0, got {alpha}")
    for name, m in (("m_k", m_k), ("m_v", m_v)):
        if not 0 <= m < 1:
            raise ValueError(f"{name}: must be in [0, 1), got {m}")
    wk = m_k * fields.chi_star + math.sqrt(m_k - m_k**2) * fields.xi_k
    wv = m_v * fields.z_star + math.sqrt(m_v - m_v**2) * fields.xi_v
    with jax.enable_x64(True):
        lz, gk2, gv2, p2 = (
            np.asarray(a)
            for a in _channel(
                jnp.asarray(wk),
                jnp.asarray(wv),
                jnp.asarray(fields.y),
                (float(m_k), float(m_v)),
                float(fields.delta),
                fields.model,
                float(fields.nu),
            )
        )
    out = {}
    for key, x, scale in (
        ("mhat_k", gk2, alpha),
        ("mhat_v", gv2, alpha),
        ("log_zout", lz, 1.0),
        ("test_error", 1 + fields.delta**2 - m_v * p2, 1.0),
    ):
        mu, se = paired_mean_se(x)
        out[key], out[key + "_se"] = scale * mu, scale * se
    return out


def free_entropy(alpha, m, mhat, log_zout) -> float:
    """RS free entropy Φ = Σ_a [m̂_a(1 − m_a)/2 − ½ log(1 + m̂_a)] + α E log Z_out (Gaussian prior)."""
    m, mhat = np.asarray(m, float), np.asarray(mhat, float)
    return float(np.sum(mhat * (1 - m) / 2 - 0.5 * np.log1p(mhat)) + alpha * log_zout)


@dataclass(frozen=True)
class BayesOptions:
    """How the state evolution is estimated and iterated: n_samples, seed of the Monte Carlo draws
    (common random numbers, ``draw_fields``); tol on the estimated distance to the fixed point in
    m; max_iter, the cap on iterations."""

    n_samples: int = DEFAULTS["replica"]["bayes_optimal_samples"]
    seed: int = 0
    tol: float = 1e-6
    max_iter: int = 2000


def _iterate_bo(fields: Fields, alpha, m, o: BayesOptions):
    """m_a ← m̂_a/(1 + m̂_a) from m (2,) until the estimated distance to the fixed point is below
    tol. Returns (m, residual, converged, iterations)."""
    resid, conv, it, prev = math.inf, False, 0, math.nan
    for it in range(1, int(o.max_iter) + 1):  # noqa: B007 - the count is reported after the loop
        ch = bo_channel(fields, alpha, *m)
        mh = np.array([ch["mhat_k"], ch["mhat_v"]])
        new = np.minimum(mh / (1 + mh), 1 - 1e-12)
        step = float(np.max(np.abs(new - m)))
        m = new
        # a linearly converging iteration is step·r/(1 − r) away from its fixed point (r = the
        # observed contraction); near a recovery threshold r → 1 and a small step is not enough
        r = min(step / prev, 0.999) if prev > 0 else 0.0
        resid, prev = max(step, step * r / (1 - r)), step
        if resid < o.tol:
            conv = True
            break
    return m, resid, conv, it


def solve_bayes_optimal(
    setting: Setting, alpha, *, init=(1e-4, 1e-4), fields: Fields | None = None, options=None, **flat
) -> dict:
    """Iterate m_a ← m̂_a/(1 + m̂_a) from ``init`` = (m_k, m_v) to a fixed point (docs/theory.md §8).

    Args:
        setting: :class:`~slrpipe.setting.Setting` of one fixed length (max-SLR: ν = 0 or inf).
        alpha: n/D > 0.  fields: the Monte Carlo draws (common
        random numbers, ``draw_fields``; None: drawn with n_samples/seed).
        options: :class:`BayesOptions` (defaults if None); ``flat``: its fields by name
        (n_samples, seed, tol: on max |Δm|, max_iter), replacing those of ``options``.
    Returns:
        dict: m_k, m_v, mhat_k, mhat_v, test_error (+ _se: Monte Carlo s.e. at the fixed point),
        free_entropy, iterations, residual (estimated distance to the fixed point in m, from the
        last step and the observed contraction rate), converged (residual < tol).
    Raises:
        ValueError: parameters outside their range (one line naming the argument).
        TypeError: an unknown option name.
    """
    o = dataclasses.replace(options or BayesOptions(), **flat)
    check_bayes_model(setting.model, setting.nu)
    if fields is None:
        fields = draw_fields(setting, o.n_samples, o.seed)
    m = np.clip(np.asarray(init, float), 0.0, 1 - 1e-9)
    m, resid, conv, it = _iterate_bo(fields, alpha, m, o)
    ch = bo_channel(fields, alpha, *m)
    mh = np.array([ch["mhat_k"], ch["mhat_v"]])
    return dict(
        m_k=float(m[0]),
        m_v=float(m[1]),
        mhat_k=float(mh[0]),
        mhat_v=float(mh[1]),
        test_error=ch["test_error"],
        test_error_se=ch["test_error_se"],
        free_entropy=free_entropy(alpha, m, mh, ch["log_zout"]),
        iterations=it,
        residual=resid,
        converged=conv,
    )


def _phi(r: dict, alpha: float, delta: float) -> float:
    """Free entropy for branch selection. Noiseless (Δ = 0) exact recovery of v (m_v → 1) makes
    Φ diverge as ((1 − α)/2) log(1 − m_v) (docs/theory.md §8): +∞ for α > 1, −∞ for α < 1; the
    finite value computed at m_v = 1 − 1e-12 would compare arbitrarily."""
    if delta == 0 and 1 - r["m_v"] < 1e-6 and alpha != 1:
        return math.inf if alpha > 1 else -math.inf
    return r["free_entropy"]


OUTPUTS = (
    "test_error",
    "test_error_se",
    "m_k",
    "m_v",
    "mhat_k",
    "mhat_v",
    "free_entropy",
    "iterations",
    "residual",
    "converged",
    "coexistence",
    "test_error_uninformed",
    "test_error_informed",
    "wall_time",
)


def _branches(setting: Setting, alphas, fields, o: BayesOptions):
    """The fixed points from the uninformed (m ≈ 0, up the α grid) and informed (m ≈ 1, down the
    grid) starts: ({α: result}, {α: result}, {α: seconds}, {α: seconds})."""
    # the map is monotone in m and α: the lowest fixed point of α' < α lies below that of α and
    # the highest of α' > α above it, so each branch is warm-started along its own direction
    out = []
    for start, order in (((1e-4, 1e-4), alphas), ((1 - 1e-4, 1 - 1e-4), alphas[::-1])):
        res, wall = {}, {}
        for alpha in order:
            t0 = time.perf_counter()
            res[alpha] = r = solve_bayes_optimal(setting, alpha, init=start, fields=fields, options=o)
            start, wall[alpha] = (r["m_k"], r["m_v"]), time.perf_counter() - t0
        out.append((res, wall))
    (lo, t_lo), (hi, t_hi) = out
    return lo, hi, t_lo, t_hi


def _combine(data: dict, j, a: dict, b: dict, phis) -> dict:
    """Fill column j of ``data`` from the uninformed (a) and informed (b) fixed points, the one
    with the larger free entropy (``phis`` = (Φ_a, Φ_b)) reported; returns it."""
    best = b if phis[1] > phis[0] else a
    for k in ("test_error", "test_error_se", "m_k", "m_v", "mhat_k", "mhat_v", "free_entropy"):
        data[k][j] = best[k]
    data["iterations"][j] = a["iterations"] + b["iterations"]
    data["residual"][j] = max(a["residual"], b["residual"])
    data["converged"][j] = a["converged"] and b["converged"]
    data["coexistence"][j] = max(abs(a["m_k"] - b["m_k"]), abs(a["m_v"] - b["m_v"])) > 1e-4
    data["test_error_uninformed"][j], data["test_error_informed"][j] = a["test_error"], b["test_error"]
    return best


def bayes_optimal_sweep(setting: Setting, alphas, *, options: BayesOptions | None = None, **flat) -> xr.Dataset:
    """Bayes-optimal fixed points on an α grid, from an uninformed and an informed start.

    Args: as :func:`solve_bayes_optimal` (``options``/``flat``: n_samples, seed, tol, max_iter);
        ``alphas``: 1-D sequence of α > 0 (sorted).
    Returns:
        Dataset, dim alpha: test_error (+ test_error_se) and the overlaps/conjugates of the branch
        with the larger free entropy; free_entropy, iterations, residual, converged (both starts
        converged), coexistence (the two starts end > 1e-4 apart in m), test_error_uninformed /
        test_error_informed, wall_time (s). Scalar coords model, nu, L, delta; attrs n_samples,
        seed, theory.
    Raises:
        ValueError: empty or non-positive grid, or any argument of :func:`solve_bayes_optimal`.
        TypeError: an unknown option name.
    """
    o = dataclasses.replace(options or BayesOptions(), **flat)
    alphas = np.asarray(sorted(float(a) for a in alphas))
    if alphas.size == 0 or np.any(alphas <= 0):
        raise ValueError(f"alphas: need a non-empty grid of α > 0, got {alphas.tolist()}")
    check_bayes_model(setting.model, setting.nu)
    model, nu, L, delta = setting.model, setting.nu, setting.length, setting.delta
    fields = draw_fields(setting, o.n_samples, o.seed)
    lo, hi, t_lo, t_hi = _branches(setting, alphas, fields, o)
    data = {k: np.full(alphas.size, np.nan) for k in OUTPUTS}
    for j, alpha in enumerate(alphas):
        a, b = lo[alpha], hi[alpha]
        best = _combine(data, j, a, b, (_phi(a, alpha, delta), _phi(b, alpha, delta)))
        data["wall_time"][j] = t_lo[alpha] + t_hi[alpha]
        log.info(
            "Bayes-optimal %s ν=%g L=%d α=%g: e_test=%.5f m=(%.4f, %.4f) coexistence=%s (%.1fs)",
            model,
            nu,
            L,
            alpha,
            best["test_error"],
            best["m_k"],
            best["m_v"],
            bool(data["coexistence"][j]),
            data["wall_time"][j],
        )
    ds = xr.Dataset(
        {k: ("alpha", v) for k, v in data.items()},
        coords=dict(alpha=alphas, model=model, nu=float(nu), L=int(L), delta=float(delta)),
    )
    ds["converged"] = ds["converged"].astype(bool)
    ds["coexistence"] = ds["coexistence"].astype(bool)
    ds.attrs.update(
        n_samples=int(fields.n),
        seed=int(o.seed),
        theory="Bayes-optimal replica-symmetric state evolution (Nishimori), docs/theory.md §8",
    )
    return ds
