"""What a trained (or prescribed) estimator is measured by: overlaps, Gram matrix and the streamed
test error (docs/model.md §4–5)."""

from __future__ import annotations

import math

import numpy as np

from slrpipe.theory.learned import OVERLAPS  # noqa: F401 - re-exported: what overlaps() returns


def gram(k_star, v_star, k, v) -> np.ndarray:
    """(4, 4) Gram matrix WᵀW/D of W = [k*, v*, k, v] (D, 4), float64."""
    W = np.stack([np.asarray(a, np.float64) for a in (k_star, v_star, k, v)], axis=1)
    return W.T @ W / W.shape[0]


def overlaps(k_star, v_star, k, v) -> dict[str, float]:
    """m_k = k·k*/D, q_k = |k|²/D, m_v = v·v*/D, q_v = |v|²/D and the cross overlaps
    k_vstar = k·v*/D, v_kstar = v·k*/D, k_v = k·v/D (zero on the manifold 𝓜, docs/model.md §4)."""
    G = gram(k_star, v_star, k, v)
    return {
        "m_k": G[0, 2],
        "q_k": G[2, 2],
        "m_v": G[1, 3],
        "q_v": G[3, 3],
        "k_vstar": G[1, 2],
        "v_kstar": G[0, 3],
        "k_v": G[2, 3],
    }


def streamed_errors(predictors: dict, chunks) -> dict[str, tuple[float, float, int]]:
    """Mean squared error E[(y − f(X))²] of several predictors over one pass of a ``Chunk`` stream.

    ``predictors``: {name: predict(X, mask) -> (c,)}, each called once per chunk (one chunk in
    memory at a time, drawn once for all predictors; host or device arrays: only the labels and
    the (c,) predictions are brought to the host). Returns {name: (mse, standard error of the
    mean = std(sq)/√n, n)}. Accumulates in float64.
    """
    s1 = dict.fromkeys(predictors, 0.0)
    s2 = dict.fromkeys(predictors, 0.0)
    n = 0
    for ch in chunks:
        for name, predict in predictors.items():
            r = np.asarray(ch.y, np.float64) - np.asarray(predict(ch.X, ch.mask), np.float64)
            sq = r * r
            s1[name] += sq.sum()
            s2[name] += (sq * sq).sum()
        n += len(ch.y)
    out = {}
    for name in predictors:
        mean = s1[name] / n
        var = max(s2[name] / n - mean * mean, 0.0) * n / max(n - 1, 1)
        out[name] = (mean, math.sqrt(var / n), n)
    return out


def streamed_error(predict, chunks) -> tuple[float, float, int]:
    """``streamed_errors`` of one predictor: (mse, standard error, n)."""
    return streamed_errors({"f": predict}, chunks)["f"]
