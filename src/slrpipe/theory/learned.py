"""The population risk at a learned estimator: any (k, v), off the manifold 𝓜 (docs/model.md §4).

What the store attaches to every ERM run (``test_error_pop``): R(σ; Gram) at the Gram matrix of
(k*, v*, k, v)/D that training produced, by :func:`slrpipe.theory.overlap_risk.risk_gram` with a
quasi-Monte Carlo rule (``QMC_LOG2``).
"""

from __future__ import annotations

import logging
import math

import numpy as np

from slrpipe.setting import Setting

log = logging.getLogger(__name__)

#: log2 of the scrambled-Sobol points per scrambling used for learned (off-manifold) Gram matrices:
#: the default tensor rule needs a 2L-dimensional grid there (tens of GB at L = 3); 8 × 2¹⁵ QMC
#: points agree with it to ~1e-5 at L = 2, far below the Monte Carlo error of a 10⁵-sample test set.
QMC_LOG2 = 15

#: the overlaps of a learned (k, v) with the teacher (docs/model.md §4), as ERM records them
OVERLAPS = ("m_k", "q_k", "m_v", "q_v", "k_vstar", "v_kstar", "k_v")


def gram_from_overlaps(ov) -> np.ndarray:
    """(4, 4) Gram matrix of (k*, v*, k, v)/D from the overlaps ``ov`` (a mapping with the keys
    ``OVERLAPS``), for the orthonormal teacher of docs/model.md §2 (k*·v* = 0, |k*|² = |v*|² = D)."""
    return np.array(
        [
            [1.0, 0.0, ov["m_k"], ov["v_kstar"]],
            [0.0, 1.0, ov["k_vstar"], ov["m_v"]],
            [ov["m_k"], ov["k_vstar"], ov["q_k"], ov["k_v"]],
            [ov["v_kstar"], ov["m_v"], ov["k_v"], ov["q_v"]],
        ],
        dtype=float,
    )


def risk_at_gram(sigma: str, setting: Setting, gram, c: float = 0.0) -> float:
    """R(σ; gram) (docs/model.md §4) by ``risk_gram`` with 8 × 2^``QMC_LOG2`` scrambled-Sobol points.

    setting: the data setting (:class:`~slrpipe.setting.Setting`); gram: (4, 4) WᵀW/D of
    W = [k*, v*, k, v]; c: the erf offset. Returns NaN (with a warning) where
    the formula cannot evaluate the point (a non-PSD Gram, a σ it lacks), so that a store or a
    training run never dies for one point.
    """
    from slrpipe.theory.overlap_risk import risk_gram
    from slrpipe.theory.quadrature import QuadSpec

    try:
        return float(
            risk_gram(
                sigma,
                setting,
                np.asarray(gram, float),
                c=float(c),
                quad=QuadSpec(method="qmc", qmc_log2=QMC_LOG2),
            )
        )
    except Exception as exc:
        log.warning("risk_gram failed at this point (%s: %s); recording NaN", type(exc).__name__, exc)
        return math.nan


def risk_at_overlaps(sigma: str, setting: Setting, ov, c: float = 0.0) -> float:
    """``risk_at_gram`` at ``gram_from_overlaps(ov)``; NaN where an overlap is not finite."""
    if not np.isfinite([float(ov[k]) for k in OVERLAPS]).all():
        return math.nan
    return risk_at_gram(sigma, setting, gram_from_overlaps(ov), c)
