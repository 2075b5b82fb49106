"""Fixed-point solver of the RS zero-temperature equations of ridge ERM on SLR.

State x = (m_k, q_k, V_k, m_v, q_v, V_v). The map F: conjugates from the output channel
(:mod:`.channel`, Monte Carlo over fixed common random numbers), then the ridge prior
(:mod:`.prior`). Converged when max_i |F(x)_i − x_i| / (1 + |x_i|) < tol on a pass with the full
multi-start prox search; otherwise ``converged=False`` with the residual — never a silent number.

Iteration (``method``):
  * "anderson" (default): Anderson acceleration, type II (mixing 1), on f = F(x) − x with the
    weighted least-squares norm of the convergence test (Walker & Ni, SIAM J. Numer. Anal. 49
    (2011) 1715): the next point is Σ_i a_i (x_i + f_i) over the last ``memory`` + 1 evaluations,
    Σ a_i = 1, minimising |Σ a_i f_i|. Safeguards: a trust region (≤ 50 % relative change of any
    order parameter per step); the memory restarts from the best point when the residual exceeds
    ``_RESTART`` × the best one, and with a halved damped step from the best point after every
    ``_STALL`` evaluations without progress (Anderson can cycle); extrapolations outside the
    domain (q_a < m_a², V_a ≤ 0), failed prior steps (λ + V̂ ≤ 0) and stagnation (a point already
    in memory) fall back to the damped step from the best point; ``patience`` evaluations without
    a new best residual end the solve.
  * "damped": x ← (1 − d) x + d F(x), d halved whenever the residual grows three times running.
Prox passes: the first, every ``full_every``-th and, once the residual is below ``_FULL_BELOW``,
every pass is a full multi-start search; the others start from the centre and the previous
pass's minima only. Convergence is declared on full passes only.
Polish (``polish=True``): when the iteration ends unconverged with its best residual below
``_POLISH_BELOW`` — a near miss, e.g. Anderson stalling at 4e-5 where the map is steep (softmax,
λ = 0.01, spiked ν = 2, α = 5: a relative change of 1e-4 in x moves F(x) − x by 1e-3) — the root
of F(x) − x is sought by MINPACK's hybrid Powell method (``scipy.optimize.root``, 'hybr',
finite-difference Jacobian) on the full-search map with the prox warm starts frozen at those of
a fresh full search at the best point (so that the map is deterministic). Its result passes the
same test as any other point: one full pass, residual < tol.
Source: docs/theory.md §2–6, §9.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from scipy.optimize import root

from slrpipe.theory import population
from slrpipe.theory.replica.channel import MHAT_ESTIMATORS, VHAT_ESTIMATORS, channel
from slrpipe.theory.replica.fields import Fields, check_task, draw_fields
from slrpipe.theory.replica.prior import ridge_prior
from slrpipe.theory.replica.prox import check_sigma

log = logging.getLogger(__name__)

STATE = ("m_k", "q_k", "V_k", "m_v", "q_v", "V_v")
CONJ = ("mhat_k", "qhat_k", "Vhat_k", "mhat_v", "qhat_v", "Vhat_v")
DEFAULT_INIT = dict(m_k=0.5, q_k=1.0, V_k=1.0, m_v=0.5, q_v=1.0, V_v=1.0)
METHODS = ("anderson", "damped")
_FULL_BELOW = 1e-2  # residual below which every prox pass is a full multi-start search
_RESTART = 10.0  # Anderson memory restarts when the residual exceeds this factor × the best one
_STALL = 6  # … and every _STALL evaluations without a new best residual (breaks cycles)
_POLISH_BELOW = 1e-2  # best residual under which an unconverged solve is polished (module docstring)
_POLISH_MAXFEV = 30  # channel evaluations allowed to the polish


def _check(sigma, model, nu, L, delta, lam, alpha, damping, tol, max_iter, method, memory, patience):
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
    if method not in METHODS:
        raise ValueError(f"method: must be one of {METHODS}, got {method!r}")
    if int(memory) != memory or memory < 1:
        raise ValueError(f"memory: must be an integer ≥ 1, got {memory}")
    if int(patience) != patience or patience < 1:
        raise ValueError(f"patience: must be an integer ≥ 1, got {patience}")


def _prior_step(lam, c):
    mk, qk, Vk = ridge_prior(lam, c["mhat_k"], c["qhat_k"], c["Vhat_k"])
    mv, qv, Vv = ridge_prior(lam, c["mhat_v"], c["qhat_v"], c["Vhat_v"])
    return np.array([mk, qk, Vk, mv, qv, Vv])


def _residual(lam, ch, x):
    """(F(x) − x, max_i |F(x)_i − x_i| / (1 + |x_i|)) from a channel pass ``ch`` at x; (None, inf)
    where the prior step fails (λ + V̂ ≤ 0 or a non-finite conjugate)."""
    try:
        f = _prior_step(lam, ch) - x
    except ValueError:
        return None, math.inf
    return f, float(np.max(np.abs(f) / (1 + np.abs(x))))


def _valid(x) -> bool:
    """x inside the domain of the channel: finite, V_a > 0 and q_a ≥ m_a²."""
    return bool(np.all(np.isfinite(x)) and x[2] > 0 and x[5] > 0
                and x[1] >= x[0] ** 2 and x[4] >= x[3] ** 2)


def _anderson(xs, fs, d):
    """Type-II Anderson point from iterates xs (k, 6) and residuals fs = F(x) − x (k, 6), k ≥ 2:
    x + d f − (ΔX + d ΔF) γ, γ = argmin |W (f − ΔF γ)|₂, W = diag 1/(1 + |x|) at the last iterate
    (the norm of the convergence test)."""
    x, f = xs[-1], fs[-1]
    w = 1.0 / (1.0 + np.abs(x))
    dX, dF = np.diff(xs, axis=0).T, np.diff(fs, axis=0).T
    gamma = np.linalg.lstsq(w[:, None] * dF, w * f, rcond=1e-10)[0]
    return x + d * f - (dX + d * dF) @ gamma


def _polish(sigma, fields, alpha, lam, x0, warm, chkw):
    """Root of F(x) − x near x0 by 'hybr' (module docstring); F with its prox warm starts frozen.
    The unknowns are (m_a, q_a − m_a², V_a): forward finite differences then stay inside the
    domain q_a ≥ m_a² even where it is tight (L = 1: m_k = q_k = 0). Returns (x, number of channel
    evaluations); x is not checked here."""
    scale = 1.0 + np.abs(x0)
    bad = np.full(x0.size, 1e3)  # outside the domain, or λ + V̂ ≤ 0: steer hybr away
    to_u = lambda x: x - np.array([0, x[0] ** 2, 0, 0, x[3] ** 2, 0])  # noqa: E731
    to_x = lambda u: u + np.array([0, u[0] ** 2, 0, 0, u[3] ** 2, 0])  # noqa: E731

    def g(u):
        x = to_x(u)
        if not _valid(x):
            return bad
        f = _residual(lam, channel(sigma, fields, alpha, *x, warm=warm, **chkw), x)[0]
        return bad if f is None else f / scale

    sol = root(g, to_u(x0), method="hybr", options=dict(xtol=1e-9, maxfev=_POLISH_MAXFEV, diag=1.0 / scale))
    return to_x(sol.x), int(sol.nfev)


def test_error(sigma, model, nu, L, delta, m_k, q_k, m_v, q_v) -> float:
    """e_test = E(y − f)² = Δ² + 1 − 2 m_v A + q_v B at the order parameters (model.md §4),
    by the quadrature of :mod:`slrpipe.theory.population` (deterministic)."""
    return population.risk(sigma, model, nu, L, delta, m_k, q_k, m_v, q_v)


def solve_replica(sigma, model, nu, L, delta, lam, alpha, *, n_samples=20000, seed=0, init=None,
                  damping=0.5, tol=1e-5, max_iter=300, vhat="stein", fields: Fields | None = None,
                  n_steps=25, full_every=5, method="anderson", memory=5, qmc=True,
                  softmin=100.0, mhat="rb", patience=40, polish=True) -> dict:
    """Solve the RS fixed point of ridge ERM on SLR at one (λ, α) (docs/theory.md).

    Args:
        sigma: 'softmax' | 'linear' | 'softplus_norm'.  model: 'spiked' | 'max'.
        nu: signal strength ≥ 0 (max-SLR: inf allowed).  L: fixed sequence length ≥ 1.
        delta: label-noise std Δ ≥ 0.  lam: ridge λ > 0.  alpha: n/D > 0.
        n_samples: Monte Carlo samples of the channel (even; antithetic pairs).  seed: their seed.
        init: dict of starting order parameters (keys ``STATE``; e.g. a neighbour's solution).
        damping: d ∈ (0, 1] of the damped steps (method 'damped', and Anderson's fallback
        steps; Anderson itself mixes with 1).  tol: on the max relative change (of F(x) − x).
        max_iter: cap on channel evaluations.
        vhat: 'stein' (default, exact for a jumping prox) or 'jacobian' (pointwise, diagnostic).
        fields: pre-drawn common random numbers (overrides n_samples/seed/qmc).
        n_steps: Newton steps per prox start.  full_every: iterations between full multi-start
        prox searches (convergence is only declared on a full pass).
        method: 'anderson' (default) or 'damped' (module docstring).  memory: Anderson memory
        (number of past differences, ≥ 1).  qmc: scrambled-Sobol fields (:func:`draw_fields`).
        softmin: β of the soft-min over local minima in the channel (None = hard global minimum;
        docs/theory.md §4: makes F continuous; bias measured ≤ 0.2 s.e. at 32000 samples).
        mhat: 'rb' (default, Rao–Blackwellised m̂, lower variance) or 'general' (:mod:`.channel`).
        patience: Anderson gives up (converged=False) after this many channel evaluations
        without a new smallest residual (e.g. past a fold of the branch, where no fixed point is
        left nearby).
        polish: root-find from the best point of an unconverged solve whose residual is below
        ``_POLISH_BELOW`` (module docstring; at most ``_POLISH_MAXFEV`` more evaluations).
    Returns:
        dict: test_error (MSE incl. Δ²), train_loss (E ½(y − f)², per sample), objective
        (= α·train_loss + λ(q_k + q_v)/2, i.e. min 𝓛 / D), the six order parameters, the six
        conjugates, iterations (channel evaluations), residual, converged, wall_time (s),
        n_samples, seed, qmc, plus diagnostics: Vhat_k_jac/Vhat_v_jac (pointwise-Jacobian V̂),
        mhat_k_tilt (spiked/finite ν), mhat_*_general, prox_unconverged, prox_multi, damping
        (final), n_rejected (Anderson memory restarts and fallback steps), polished (the
        polish ran; its evaluations count in ``iterations``). When converged, the
        conjugates and train loss are those of the last (full) pass, at the returned state.
    Raises:
        ValueError: any argument outside its range (one line naming it).
    """
    nu, L, delta, lam, alpha = float(nu), int(L), float(delta), float(lam), float(alpha)
    _check(sigma, model, nu, L, delta, lam, alpha, damping, tol, max_iter, method, memory, patience)
    if vhat not in VHAT_ESTIMATORS:
        raise ValueError(f"vhat: must be one of {VHAT_ESTIMATORS}, got {vhat!r}")
    if mhat not in MHAT_ESTIMATORS:
        raise ValueError(f"mhat: must be one of {MHAT_ESTIMATORS}, got {mhat!r}")
    t0 = time.perf_counter()
    if fields is None:
        fields = draw_fields(model, nu, L, delta, n_samples, seed, qmc=qmc)
    x0 = dict(DEFAULT_INIT, **(init or {}))
    x = np.array([float(x0[k]) for k in STATE])
    if not _valid(x):
        raise ValueError(f"init: needs V_a > 0 and q_a ≥ m_a², got {dict(zip(STATE, x.tolist()))}")
    chkw = dict(vhat=vhat, n_steps=n_steps, softmin=softmin, mhat=mhat)  # every channel pass
    d, warm = float(damping), None
    hist, xs, fs = [], [], []  # residuals of accepted steps; Anderson memory: iterates, F(x) − x
    best, near, n_rej, it_best = None, False, 0, 0
    converged, resid = False, math.inf
    it = 0
    for it in range(1, int(max_iter) + 1):
        # cheap passes (centre + warm starts: the previous global prox and its runners-up) between
        # full multi-start searches; once near the solution every pass is full, so that the
        # accelerated iteration sees one consistent map (cheap and full passes differ by ~1e-3
        # where a new branch appears)
        full = warm is None or near or it % full_every == 0
        ch = channel(sigma, fields, alpha, *x, warm=warm, multistart=full, **chkw)
        warm = ch["warm"]
        f, resid = _residual(lam, ch, x)
        log.debug("iteration %d full=%s residual %.3e x=%s", it, full, resid, np.round(x, 5).tolist())
        if resid < tol and full:
            converged = True  # x is reported, with this (full) pass's conjugates and train loss
            break
        if not near and resid < max(_FULL_BELOW, 10 * tol):
            near = True
            hist, xs, fs, best = [], [], [], None
            if not full:
                continue  # evaluate the same point again, with the full search
        if method == "damped":
            if f is None:
                break
            hist.append(resid)
            if len(hist) > 3 and hist[-1] > hist[-2] > hist[-3] > hist[-4] and d > 0.05:
                d *= 0.5
            x = x + d * f
            continue
        if f is None:
            # the prior step failed (λ + V̂ ≤ 0): back to the best point, smaller damped step
            if best is None:
                log.warning("prior step failed (λ + V̂ ≤ 0) at iteration %d", it)
                break
            n_rej += 1
            d = max(0.5 * d, 0.05)
            xs, fs = [best[0]], [best[1]]
            x = best[0] + d * best[1]
            continue
        if best is None or resid < best[2]:
            best, it_best = (x, f, resid), it
        elif it - it_best >= patience:
            log.debug("no progress in %d iterations: giving up", patience)
            break
        elif resid > _RESTART * best[2] or (it - it_best) % _STALL == 0:
            # the secant model failed (residual blew up), or the iteration is cycling without
            # progress: restart the memory from the best point (and, when stalled, from a
            # smaller damped step there)
            n_rej += 1
            xs, fs = [best[0]], [best[1]]
            if (it - it_best) % _STALL == 0:
                d = max(0.5 * d, 0.05)
                x = best[0] + d * best[1]
                continue
        xs, fs = (xs + [x])[-(memory + 1):], (fs + [f])[-(memory + 1):]
        cand = _anderson(np.array(xs), np.array(fs), 1.0) if len(xs) > 1 else x + d * f
        # trust region: at most a 50 % relative change of any order parameter per step
        step = np.max(np.abs(cand - x) / (1 + np.abs(x)))
        cand = x + (cand - x) * min(1.0, 0.5 / step) if step > 0 else cand
        # stagnation guard: Anderson can return a point already in its memory (F then adds no
        # information); restart from the best point with a (smaller) damped step instead
        seen = min(np.max(np.abs(cand - xi) / (1 + np.abs(xi))) for xi in xs) < 1e-12
        if seen or not _valid(cand):
            d = max(0.5 * d, 0.05) if seen else d
            xs, fs = [best[0]], [best[1]]
            cand = best[0] + d * best[1]
        x = cand
    polished = False
    if not converged:
        if best is not None and best[2] < resid:
            x, resid = best[0], best[2]  # report the best point seen, not the last one
        ch = None
        if polish and resid < _POLISH_BELOW:
            polished = True
            # the warm starts of one full search at x: those carried along the iteration can
            # leave a jump in the frozen map near the root (seen: hybr stuck at 4e-5)
            warm = channel(sigma, fields, alpha, *x, **chkw)["warm"]
            xp, nfev = _polish(sigma, fields, alpha, lam, x, warm, chkw)
            it += nfev + 1
            if _valid(xp):
                chp = channel(sigma, fields, alpha, *xp, warm=warm, **chkw)
                rp = _residual(lam, chp, xp)[1]
                if rp < resid:
                    x, resid, ch, converged = xp, rp, chp, rp < tol
            log.info("replica %s λ=%g α=%g: polish (%d evaluations) → residual %.2e", sigma, lam, alpha,
                     nfev, resid)
        if ch is None:
            # a full channel pass at the reported state: train loss and conjugates consistent with x
            ch = channel(sigma, fields, alpha, *x, warm=warm, **chkw)
    st = dict(zip(STATE, map(float, x)))
    out = dict(st)
    out.update({k: ch[k] for k in CONJ})
    out.update({k + "_se": ch[k + "_se"] for k in CONJ})
    out["test_error"] = test_error(sigma, model, nu, L, delta, st["m_k"], st["q_k"], st["m_v"], st["q_v"])
    out["train_loss"] = ch["train_loss"]
    out["train_loss_se"] = ch["train_loss_se"]
    out["objective"] = alpha * ch["train_loss"] + 0.5 * lam * (st["q_k"] + st["q_v"])
    for k in ("Vhat_k_jac", "Vhat_v_jac", "Vhat_k_stein", "Vhat_v_stein", "mhat_v_dy", "mhat_k_tilt",
              "mhat_k_general", "mhat_v_general"):
        out[k] = ch.get(k, math.nan)
    out.update(prox_unconverged=ch["prox_unconverged"], prox_multi=ch["prox_multi"],
               iterations=it, residual=resid, converged=bool(converged), damping=d, n_rejected=n_rej,
               polished=polished,
               n_samples=fields.n, seed=fields.seed, qmc=bool(fields.qmc),
               wall_time=time.perf_counter() - t0)
    if not converged:
        log.warning("replica %s %s ν=%g L=%d λ=%g α=%g: not converged after %d iterations "
                    "(residual %.2e)", sigma, model, nu, L, lam, alpha, it, resid)
    return out
