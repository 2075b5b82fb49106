"""Finite-size extrapolation D → ∞ of an ERM quantity measured on a ladder of dimensions D.

The replica theory is a D → ∞ statement at fixed α; ERM at finite D differs from it by a
finite-size correction. Model: y(D) = a + b·x(D) with x = 1/D (regular corrections, the generic
case away from singularities) or x = 1/√D (fluctuation-dominated corrections, e.g. near a fold or
a non-smooth transition where the correction exponent is 1/2). Each law is fitted by weighted
least squares (weights 1/se²) to the per-D means; the quality of a fit is its χ² with
dof = (number of D) − 2 and the p-value P(χ²_dof ≥ χ²).

Choice and error bar (stated rule):
  * the reported law is the one with the lower χ² (both have two parameters, so this is the
    likelihood-ratio / AIC choice);
  * the statistical error of the limit a is the weighted-LS standard error, inflated by
    √max(1, χ²/dof) (the Birge ratio: a fit worse than its error bars says so in its error bar);
  * the uncertainty of the choice itself is the Akaike-weighted spread of the laws' limits,
    limit_sys² = Σ_i w_i (a_i − a_best)², w_i ∝ exp(−χ²_i/2) (equal parameter counts; model
    averaging in the sense of Buckland, Burnham & Augustin, Biometrics 53 (1997) 603), added in
    quadrature: it vanishes when the data single out one law and is ~ half the spread when they
    cannot tell. ``fit_ok`` is False when the chosen law's p-value is below ``P_ACCEPT``.
Per-D errors from a few seeds are themselves uncertain: :func:`ladder_means` scales s.d./√n by
t_{n−1}(Φ(1)) (the Student-t equivalent of one Gaussian standard error; 1.20 for n = 4).
Coverage, measured on synthetic ladders (D = 250 … 4000, 400 draws, tests/test_extrapolate.py):
|z| < 3 in 95–99 % of draws with 4 seeds per D, 97–100 % with 8 seeds or known errors, for
1/D and 1/√D truths of several strengths (without the t factor and with an acceptance-based
systematic instead of the weighted one: down to 89 %).
z-score against a theory value: z = (a − theory)/√(se_a² + se_theory²).
Pure numpy/scipy (``scipy.stats`` imported where used); source: docs/validation.md §2 (the D ladders).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

#: finite-size laws y = a + b x(D): name → x(D)
LAWS = {"1/D": lambda D: 1.0 / D, "1/sqrt(D)": lambda D: 1.0 / np.sqrt(D)}
#: a fit is acceptable when its χ² p-value is at least this
P_ACCEPT = 0.05


@dataclass(frozen=True)
class LawFit:
    """Weighted least-squares fit y = a + b x(D) of one law."""

    law: str
    a: float
    a_se: float  # unscaled weighted-LS standard error
    b: float
    b_se: float
    chi2: float
    dof: int
    p_value: float  # NaN at dof = 0

    @property
    def acceptable(self) -> bool:
        """Whether the fit is acceptable: no degrees of freedom left, or p-value ≥ ``P_ACCEPT``."""
        return self.dof == 0 or self.p_value >= P_ACCEPT


@dataclass(frozen=True)
class Extrapolation:
    """D → ∞ limit with its error bar (module docstring for the rule)."""

    law: str
    limit: float
    limit_se: float  # total: statistical (Birge-inflated) ⊕ systematic of the law choice
    limit_stat: float
    limit_sys: float
    chi2_dof: float  # χ²/dof of the chosen law (NaN at dof = 0)
    p_value: float
    fit_ok: bool
    fits: dict = field(default_factory=dict)  # law → LawFit

    def z(self, theory: float, theory_se: float = 0.0) -> float:
        """z = (limit − theory)/√(limit_se² + theory_se²): > 0 when ERM's D → ∞ limit lies above."""
        return z_score(self.limit, self.limit_se, theory, theory_se)


def _check(D, y, se):
    D, y, se = (np.asarray(v, dtype=float).ravel() for v in (D, y, se))
    if not (D.shape == y.shape == se.shape):
        raise ValueError(f"D, y, se: need equal lengths, got {D.size}, {y.size}, {se.size}")
    if D.size < 2 or np.unique(D).size < 2:
        raise ValueError(f"D: need at least 2 distinct dimensions, got {D.tolist()}")
    if np.any(~np.isfinite(D)) or np.any(D <= 0):
        raise ValueError(f"D: must be finite and > 0, got {D.tolist()}")
    if np.any(~np.isfinite(y)):
        raise ValueError(f"y: must be finite, got {y.tolist()}")
    if np.any(~np.isfinite(se)) or np.any(se <= 0):
        raise ValueError(f"se: must be finite and > 0, got {se.tolist()}")
    return D, y, se


def _stats():
    """``scipy.stats``, imported only where a p-value or a t quantile is computed: importing it
    takes ~1 s, which every figure job importing this module (through slrpipe.analysis.ladder) paid."""
    from scipy import stats

    return stats


def fit_law(D, y, se, law: str) -> LawFit:
    """Weighted least-squares fit of y = a + b x(D), x from ``LAWS[law]``.

    Args: D, y, se: (n,) dimensions, measured values (e.g. seed means) and their standard errors.
    Raises: ValueError: unknown law, fewer than 2 distinct D, non-finite or non-positive se/D.
    """
    if law not in LAWS:
        raise ValueError(f"law: must be one of {tuple(LAWS)}, got {law!r}")
    D, y, se = _check(D, y, se)
    X = np.stack([np.ones_like(D), LAWS[law](D)], axis=1) / se[:, None]
    coef, *_ = np.linalg.lstsq(X, y / se, rcond=None)
    cov = np.linalg.inv(X.T @ X)
    chi2 = float(np.sum((X @ coef - y / se) ** 2))
    dof = D.size - 2
    p = float(_stats().chi2.sf(chi2, dof)) if dof > 0 else math.nan
    return LawFit(
        law, float(coef[0]), float(math.sqrt(cov[0, 0])), float(coef[1]), float(math.sqrt(cov[1, 1])), chi2, dof, p
    )


def extrapolate(D, y, se, laws=tuple(LAWS)) -> Extrapolation:
    """D → ∞ limit of y(D) by the rule of the module docstring.

    Args: D, y, se: (n,) ladder of dimensions, values and standard errors (n ≥ 2 distinct D; the
        fit quality needs n ≥ 3).  laws: the candidate laws (keys of ``LAWS``).
    Raises: ValueError: as :func:`fit_law`, or an empty ``laws``.
    """
    if not laws:
        raise ValueError("laws: need at least one law")
    fits = {law: fit_law(D, y, se, law) for law in laws}
    best = min(fits.values(), key=lambda f: f.chi2)
    ratio = best.chi2 / best.dof if best.dof > 0 else math.nan
    stat = best.a_se * math.sqrt(max(1.0, ratio)) if best.dof > 0 else best.a_se
    w = {k: math.exp(-0.5 * (f.chi2 - best.chi2)) for k, f in fits.items()}
    sys = math.sqrt(sum(w[k] * (f.a - best.a) ** 2 for k, f in fits.items()) / sum(w.values()))
    ok = best.acceptable
    return Extrapolation(best.law, best.a, math.hypot(stat, sys), stat, sys, ratio, best.p_value, ok, fits)


def ladder_means(D, values, t_correct: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-D mean and standard error of per-seed values.

    Args: D, values: (n,) the dimension and the value of each run (NaN runs are left out).
        t_correct: scale s.d./√n (ddof = 1) by t_{n−1}(Φ(1)), so that an error estimated from n
        seeds covers like one Gaussian standard error (module docstring).
    Returns: (D_unique, mean, se), sorted by D.
    Raises: ValueError: a dimension with fewer than 2 finite values (no error estimate).
    """
    D, values = np.asarray(D, dtype=float).ravel(), np.asarray(values, dtype=float).ravel()
    if D.shape != values.shape:
        raise ValueError(f"D, values: need equal lengths, got {D.size}, {values.size}")
    Du = np.unique(D)
    mean, se = np.empty(Du.size), np.empty(Du.size)
    stats = _stats() if t_correct else None
    for i, d in enumerate(Du):
        v = values[(D == d) & np.isfinite(values)]
        if v.size < 2:
            raise ValueError(f"values: D = {d:g} has {v.size} finite value(s), need ≥ 2 for an error")
        fac = stats.t.ppf(stats.norm.cdf(1.0), v.size - 1) if t_correct else 1.0
        mean[i], se[i] = v.mean(), fac * v.std(ddof=1) / math.sqrt(v.size)
    return Du, mean, se


def z_score(value: float, se: float, theory: float, theory_se: float = 0.0) -> float:
    """(value − theory)/√(se² + theory_se²); NaN if the combined error is 0 or not finite."""
    s = math.hypot(se, theory_se)
    return (value - theory) / s if s > 0 and math.isfinite(s) else math.nan
