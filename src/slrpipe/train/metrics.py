"""What a trained (or prescribed) estimator is measured by: overlaps, Gram matrix, streamed
test error and the population risk at the learned overlaps (model.md §4–5)."""

from __future__ import annotations

import logging
import math

import numpy as np

log = logging.getLogger(__name__)

OVERLAPS = ("m_k", "q_k", "m_v", "q_v", "k_vstar", "v_kstar", "k_v")


def gram(k_star, v_star, k, v) -> np.ndarray:
    """(4, 4) Gram matrix WᵀW/D of W = [k*, v*, k, v] (D, 4), float64."""
    W = np.stack([np.asarray(a, np.float64) for a in (k_star, v_star, k, v)], axis=1)
    return W.T @ W / W.shape[0]


def overlaps(k_star, v_star, k, v) -> dict[str, float]:
    """m_k = k·k*/D, q_k = |k|²/D, m_v = v·v*/D, q_v = |v|²/D and the cross overlaps
    k_vstar = k·v*/D, v_kstar = v·k*/D, k_v = k·v/D (zero on the manifold 𝓜, model.md §4)."""
    G = gram(k_star, v_star, k, v)
    return {"m_k": G[0, 2], "q_k": G[2, 2], "m_v": G[1, 3], "q_v": G[3, 3],
            "k_vstar": G[1, 2], "v_kstar": G[0, 3], "k_v": G[2, 3]}


def streamed_error(predict, chunks) -> tuple[float, float, int]:
    """Mean squared error E[(y − f(X))²] over a stream of ``Chunk``s, with its standard error.

    ``predict(X, mask) -> (c,)`` is called once per chunk (one chunk in memory at a time).
    Returns (mse, standard error of the mean = std(sq)/√n, n). Accumulates in float64.
    """
    s1 = s2 = 0.0
    n = 0
    for ch in chunks:
        r = ch.y - np.asarray(predict(ch.X, ch.mask), np.float64)
        sq = r * r
        s1 += sq.sum()
        s2 += (sq * sq).sum()
        n += sq.size
    mean = s1 / n
    var = max(s2 / n - mean * mean, 0.0) * n / max(n - 1, 1)
    return mean, math.sqrt(var / n), n


#: log2 of the scrambled-Sobol points per scrambling used for learned (off-manifold) Gram matrices:
#: the default tensor rule needs a 2L-dimensional grid there (tens of GB at L = 3); 8 × 2¹⁵ QMC
#: points agree with it to ~1e-5 at L = 2, far below the Monte Carlo error of a 10⁵-sample test set.
QMC_LOG2 = 15


def population_risk(sigma, task, G, c=0.0) -> float:
    """Population risk at Gram matrix G via ``slrpipe.theory.population.risk_gram`` (quasi-Monte
    Carlo, see ``QMC_LOG2``).

    Returns NaN (with a warning) where the theory module is missing or cannot evaluate the point,
    so that a training run never dies for a theory gap.
    """
    try:
        from slrpipe.theory.population import risk_gram
        from slrpipe.theory.quadrature import QuadSpec
    except ImportError as exc:
        log.warning("population risk unavailable (%s); recording NaN", exc)
        return math.nan
    try:
        return float(risk_gram(sigma, task.model, task.nu, task.L, task.delta, np.asarray(G), c=float(c),
                               quad=QuadSpec(method="qmc", qmc_log2=QMC_LOG2)))
    except Exception as exc:  # noqa: BLE001 - theory failures are recorded, not fatal here
        log.warning("risk_gram failed at this point (%s: %s); recording NaN", type(exc).__name__, exc)
        return math.nan
