"""Distance between the ERM minima that different starts reach on the same data (docs/theory.md
§13): d = (1/D)(|k_a − k_b|² + |v_a − v_b|²) between a run and the informed start of the same
(σ, λ, α, D, seed, optimiser). It needs no theory: where the training objective has one minimum
(replica symmetry) d → 0 as D → ∞; between two states of a one-step RSB phase it tends to
2 tr(Q₁ − Q₀). For odd σ (``ODD_SIGMAS``: f(−k, −v) = f(k, v)) the distance is to the nearer of
(k_b, v_b) and its mirror image (−k_b, −v_b).
"""

from __future__ import annotations

import numpy as np

from slrpipe.vocabulary import ODD_SIGMAS

#: the run coordinates that distinguish two starts on the same data
START_KEYS = ("init", "restart")


def weight_distance(sigma: str, a, b) -> float:
    """(1/D)(|k_a − k_b|² + |v_a − v_b|²) for a = (k_a, v_a) and b = (k_b, v_b), arrays of shape
    (D,); for odd σ the smaller of that and the distance to (−k_b, −v_b).

    Raises:
        ValueError: the four arrays do not share one shape (D,).
    """
    (ka, va), (kb, vb) = ((np.asarray(x, float) for x in w) for w in (a, b))
    if not (ka.ndim == 1 and ka.shape == va.shape == kb.shape == vb.shape):
        raise ValueError(f"weights: need four arrays of one shape (D,), got {ka.shape, va.shape, kb.shape, vb.shape}")
    d = (np.sum((ka - kb) ** 2) + np.sum((va - vb) ** 2)) / ka.size
    if sigma in ODD_SIGMAS:
        d = min(d, (np.sum((ka + kb) ** 2) + np.sum((va + vb) ** 2)) / ka.size)
    return float(d)


def to_informed(runs) -> list[float]:
    """``dist_informed`` of each run: runs = [(index, (k, v))] with index the run's coordinates
    (``slrpipe.store.aggregate._erm_index``: one-element lists); the distance to the informed start
    (restart 0) with the same other coordinates — 0 for that run itself, NaN where there is none."""
    key = lambda index: tuple((k, v[0]) for k, v in sorted(index.items()) if k not in START_KEYS)
    informed = {key(i): w for i, w in runs if i["init"] == ["informed"] and i["restart"] == [0]}
    out = []
    for index, w in runs:
        ref = informed.get(key(index))
        out.append(np.nan if ref is None else weight_distance(index["sigma"][0], w, ref))
    return out
