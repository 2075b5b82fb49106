"""The teacher directions k*, v* of single-location regression (model.md §2)."""

from __future__ import annotations

import numpy as np


def make_teacher(D: int, teacher_seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Draw the hidden key and value directions.

    k*, v* are drawn from N(0, I_D) with ``np.random.default_rng(teacher_seed)``, then made exactly
    orthogonal (Gram–Schmidt) and rescaled to |k*|² = |v*|² = D, so that the teacher projections
    χ* = x·k*/√D and z* = x·v*/√D of a token x ~ N(0, I_D) are independent N(0, 1).

    Args:
        D: token dimension, ≥ 2.
        teacher_seed: non-negative integer seed.

    Returns:
        (k_star, v_star), float64 arrays of shape (D,).

    Raises:
        ValueError: D < 2 or a negative seed.

    Source: model.md §2 (first bullet).
    """
    if int(D) != D or D < 2:
        raise ValueError(f"D: must be an integer ≥ 2, got {D}")
    if int(teacher_seed) != teacher_seed or teacher_seed < 0:
        raise ValueError(f"teacher_seed: must be an integer ≥ 0, got {teacher_seed}")
    D = int(D)
    g = np.random.default_rng(int(teacher_seed)).standard_normal((2, D))
    k = g[0] / np.linalg.norm(g[0])
    v = g[1] - (g[1] @ k) * k
    v -= (v @ k) * k  # second pass: orthogonal to machine precision
    v /= np.linalg.norm(v)
    return np.sqrt(D) * k, np.sqrt(D) * v
