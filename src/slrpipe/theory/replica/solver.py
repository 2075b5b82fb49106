"""Damped fixed-point solver of the RS zero-temperature equations of ridge ERM on SLR.

State x = (m_k, q_k, V_k, m_v, q_v, V_v). One iteration: conjugates from the output channel
(:mod:`.channel`, Monte Carlo over fixed common random numbers), then the ridge prior
(:mod:`.prior`), then x ← (1 − d) x + d F(x). Converged when max_i |F(x)_i − x_i| / (1 + |x_i|) <
tol; otherwise ``converged=False`` with the residual — never a silent number. The damping is
halved whenever the residual grows three iterations running. Source: docs/theory.md §2–6.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from slrpipe.theory import population
from slrpipe.theory.replica.channel import VHAT_ESTIMATORS, channel
from slrpipe.theory.replica.fields import Fields, check_task, draw_fields
from slrpipe.theory.replica.prior import ridge_prior
from slrpipe.theory.replica.prox import check_sigma

log = logging.getLogger(__name__)

STATE = ("m_k", "q_k", "V_k", "m_v", "q_v", "V_v")
CONJ = ("mhat_k", "qhat_k", "Vhat_k", "mhat_v", "qhat_v", "Vhat_v")
DEFAULT_INIT = dict(m_k=0.5, q_k=1.0, V_k=1.0, m_v=0.5, q_v=1.0, V_v=1.0)


def _check(sigma, model, nu, L, delta, lam, alpha, damping, tol, max_iter):
    check_sigma(sigma)
    check_task(model, nu, L, delta)
    if not lam > 0:
        raise ValueError(f"lam: must be > 0, got {lam}")
    if not alpha > 0:
        raise ValueError(f"alpha: must be > 0, got {alpha}")
    if not 0 < damping <= 1:
        raise ValueError(f"damping: must be in (0, 1], got {damping}")
    if not tol > 0:
        raise ValueError(f"tol: must be > 0, got {tol}")
    if int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter: must be an integer ≥ 1, got {max_iter}")


def _prior_step(lam, c):
    mk, qk, Vk = ridge_prior(lam, c["mhat_k"], c["qhat_k"], c["Vhat_k"])
    mv, qv, Vv = ridge_prior(lam, c["mhat_v"], c["qhat_v"], c["Vhat_v"])
    return np.array([mk, qk, Vk, mv, qv, Vv])


def test_error(sigma, model, nu, L, delta, m_k, q_k, m_v, q_v) -> float:
    """e_test = E(y − f)² = Δ² + 1 − 2 m_v A + q_v B at the order parameters (model.md §4),
    by the quadrature of :mod:`slrpipe.theory.population` (deterministic)."""
    return population.risk(sigma, model, nu, L, delta, m_k, q_k, m_v, q_v)


def solve_replica(sigma, model, nu, L, delta, lam, alpha, *, n_samples=20000, seed=0, init=None,
                  damping=0.5, tol=1e-5, max_iter=300, vhat="stein", fields: Fields | None = None,
                  n_steps=25, full_every=5) -> dict:
    """Solve the RS fixed point of ridge ERM on SLR at one (λ, α) (docs/theory.md).

    Args:
        sigma: 'softmax' | 'linear' | 'softplus_norm'.  model: 'spiked' | 'max'.
        nu: signal strength ≥ 0 (max-SLR: inf allowed).  L: fixed sequence length ≥ 1.
        delta: label-noise std Δ ≥ 0.  lam: ridge λ > 0.  alpha: n/D > 0.
        n_samples: Monte Carlo samples of the channel (even; antithetic pairs).  seed: their seed.
        init: dict of starting order parameters (keys ``STATE``; e.g. a neighbour's solution).
        damping: d ∈ (0, 1].  tol: on the max relative change.  max_iter: iteration cap.
        vhat: 'stein' (default, exact for a jumping prox) or 'jacobian' (pointwise, diagnostic).
        fields: pre-drawn common random numbers (overrides n_samples/seed).
        n_steps: Newton steps per prox start.  full_every: iterations between full multi-start
        prox searches (convergence is only declared on a full pass).
    Returns:
        dict: test_error (MSE incl. Δ²), train_loss (E ½(y − f)², per sample), objective
        (= α·train_loss + λ(q_k + q_v)/2, i.e. min 𝓛 / D), the six order parameters, the six
        conjugates, iterations, residual, converged, wall_time (s), n_samples, seed, plus
        diagnostics: Vhat_k_jac/Vhat_v_jac (pointwise-Jacobian V̂), mhat_k_tilt (spiked/finite ν),
        prox_unconverged, prox_multi, damping (final).
    Raises:
        ValueError: any argument outside its range (one line naming it).
    """
    nu, L, delta, lam, alpha = float(nu), int(L), float(delta), float(lam), float(alpha)
    _check(sigma, model, nu, L, delta, lam, alpha, damping, tol, max_iter)
    if vhat not in VHAT_ESTIMATORS:
        raise ValueError(f"vhat: must be one of {VHAT_ESTIMATORS}, got {vhat!r}")
    t0 = time.perf_counter()
    if fields is None:
        fields = draw_fields(model, nu, L, delta, n_samples, seed)
    x0 = dict(DEFAULT_INIT, **(init or {}))
    x = np.array([float(x0[k]) for k in STATE])
    d, warm, hist = float(damping), None, []
    converged, resid, ch = False, math.inf, None
    it = 0
    for it in range(1, int(max_iter) + 1):
        # full global prox search every ``full_every`` iterations and whenever convergence is
        # near; in between, only the centre and the warm start (the previous global prox)
        full = warm is None or it % full_every == 0 or (hist and hist[-1] < 10 * tol)
        ch = channel(sigma, fields, alpha, *x, vhat=vhat, warm=warm, n_steps=n_steps, multistart=full)
        warm = ch["chi"]
        try:
            new = _prior_step(lam, ch)
        except ValueError:
            log.warning("prior step failed (λ + V̂ ≤ 0) at iteration %d", it)
            break
        resid = float(np.max(np.abs(new - x) / (1 + np.abs(x))))
        hist.append(resid)
        if resid < tol and full:
            x, converged = new, True
            break
        if len(hist) > 3 and hist[-1] > hist[-2] > hist[-3] > hist[-4] and d > 0.05:
            d *= 0.5
        x = (1 - d) * x + d * new
    # final channel pass at the returned state: train loss and conjugates consistent with x
    ch = channel(sigma, fields, alpha, *x, vhat=vhat, warm=warm, n_steps=n_steps)
    st = dict(zip(STATE, map(float, x)))
    out = dict(st)
    out.update({k: ch[k] for k in CONJ})
    out.update({k + "_se": ch[k + "_se"] for k in CONJ})
    out["test_error"] = test_error(sigma, model, nu, L, delta, st["m_k"], st["q_k"], st["m_v"], st["q_v"])
    out["train_loss"] = ch["train_loss"]
    out["train_loss_se"] = ch["train_loss_se"]
    out["objective"] = alpha * ch["train_loss"] + 0.5 * lam * (st["q_k"] + st["q_v"])
    for k in ("Vhat_k_jac", "Vhat_v_jac", "Vhat_k_stein", "Vhat_v_stein", "mhat_v_dy", "mhat_k_tilt"):
        out[k] = ch.get(k, math.nan)
    out.update(prox_unconverged=ch["prox_unconverged"], prox_multi=ch["prox_multi"],
               iterations=it, residual=resid, converged=bool(converged), damping=d,
               n_samples=fields.n, seed=fields.seed, wall_time=time.perf_counter() - t0)
    if not converged:
        log.warning("replica %s %s ν=%g L=%d λ=%g α=%g: not converged after %d iterations "
                    "(residual %.2e)", sigma, model, nu, L, lam, alpha, it, resid)
    return out
