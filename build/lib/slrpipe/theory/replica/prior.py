"""Ridge ("prior") channel of the replica fixed point, closed form, one column (k or v) at a time.

With a Gaussian teacher column (|w*|²/D = 1) and penalty (λ/2)|w|², the zero-temperature RS
equations on the manifold (docs/theory.md §2) are, per column a ∈ {k, v}:
    V_a = 1 / (λ + V̂_a),   m_a = V_a m̂_a,   q_a = V_a² (m̂_a² + q̂_a).
"""

from __future__ import annotations


def ridge_prior(lam: float, mhat: float, qhat: float, Vhat: float) -> tuple[float, float, float]:
    """(m, q, V) from the conjugates (m̂, q̂, V̂) for ridge strength λ.

    Raises:
        ValueError: λ + V̂ ≤ 0 (no finite minimiser: the ridge problem is unbounded below).
    """
    if not (lam + Vhat > 0):
        raise ValueError(f"lam: λ + V̂ must be > 0, got λ={lam}, V̂={Vhat}")
    V = 1.0 / (lam + Vhat)
    return V * mhat, V * V * (mhat * mhat + qhat), V
