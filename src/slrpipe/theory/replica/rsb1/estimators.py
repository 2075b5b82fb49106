"""The Monte Carlo estimators the 1RSB scan compares (docs/theory.md §13, "Σ by two estimators").

Differences of Φ between the rows of one scan are paired over the outer samples the rows share
(:func:`diff_se`). The complexity has two estimators: the closed form Σ(s) at each row
(slrpipe.theory.replica.rsb1.channel.thermodynamics, exact at the saddle) and s² dΦ/ds from the
differences of Φ. At the exact saddles of one potential they are one: e(s) = Φ + Σ/s = d(sΦ)/ds.
Between two consecutive rows i < j the trapezoid rule on that relation, s_jΦ_j − s_iΦ_i =
(s_j − s_i)(e_i + e_j)/2, exact where e is linear in s over the interval, reads

    Σ_Φ = s_i s_j (Φ_j − Φ_i)/(s_j − s_i)  =  Σ_cf = (s_j Σ_i + s_i Σ_j)/(s_i + s_j):

the chord of Φ in 1/s (the mean of Σ over the interval) against the closed forms' weighted mean.
:func:`legendre` measures each interval's difference in standard errors,

    z = (Σ_cf − Σ_Φ) / se(Σ_cf − Σ_Φ).

Where the rows carry their estimators per outer sample (``phi_samples``, ``sigma_samples``: one
scan's solves on common random numbers) the s.e. is that of the per-sample difference, paired over
the antithetic halves: the noise the two estimators and the two rows share cancels, each
covariance counted once. Σ per sample is the closed form linearised in its estimators at the
state held fixed (slrpipe.theory.replica.rsb1.channel.thermodynamics), so the state's own Monte
Carlo error, to which Σ (unlike Φ, stationary there) is sensitive at first order, is not in this
s.e.; nor is the trapezoid's error (−(s_j − s_i)³ e″/12). Both then show as z, and S below carries
them. Without per-sample values (a table of rows) the s.e. is the bound √(se_cf² + se_Φ²): se_Φ
paired (:func:`diff_se`), se_cf the weighted mean of the two rows' s.e. (fully correlated, its
largest value). Over the intervals χ² = Σ z², ν = the intervals with a finite z. Where χ²/ν > 1
the errors understate the difference, and the s.e. of both estimators of Σ is multiplied by the
scale factor S = √(χ²/ν), the Particle Data Group's rule for measurements that disagree beyond
their errors (Review of Particle Physics, Introduction, "Unconstrained averaging"); S = 1 where
χ²/ν ≤ 1 or ν = 0. The rule uses the scaled s.e. wherever it reads Σ
(slrpipe.theory.replica.rsb1.scan).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from slrpipe.theory.replica.channel import paired_mean_se


def paired_se(x) -> float:
    """Standard error of the mean of per-outer-sample values x (N,), N even, pairing the antithetic
    halves (sample i with i + N/2), as the channel's estimators do (``paired_mean_se``)."""
    return float(paired_mean_se(np.asarray(x, float))[1])


def shared(*rows, key: str = "phi_samples") -> bool:
    """Whether every row carries ``key`` (per-outer-sample values) on the same outer samples (one
    scan's solves)."""
    samples = [r.get(key) for r in rows]
    return all(v is not None for v in samples) and len({np.shape(v) for v in samples}) == 1


def diff_se(a: dict, b: dict) -> float:
    """Standard error of Φ_a − Φ_b: paired over the outer samples where both rows carry
    ``phi_samples`` (the Monte Carlo part of Φ per outer sample, common random numbers: the
    difference is far less noisy than either value), else the two s.e. combined as if independent."""
    if shared(a, b):
        return paired_se(np.asarray(a["phi_samples"]) - np.asarray(b["phi_samples"]))
    return math.hypot(a.get("phi_se", 0.0), b.get("phi_se", 0.0))


def slope_weights(ss, s: float) -> np.ndarray:
    """Weights w (3,) with w·Φ the derivative at s of the parabola (Lagrange) through the three
    points of abscissae ``ss`` (distinct)."""
    s0, s1, s2 = (float(v) for v in ss)
    return np.array(
        [
            (2 * s - s1 - s2) / ((s0 - s1) * (s0 - s2)),
            (2 * s - s0 - s2) / ((s1 - s0) * (s1 - s2)),
            (2 * s - s0 - s1) / ((s2 - s0) * (s2 - s1)),
        ]
    )


def sigma_fd(pts, s: float) -> tuple[float, float]:
    """(s² Φ′(s), its s.e.) from the parabola of Φ through the three rows ``pts`` (each with s, phi,
    phi_se, optionally phi_samples): the s.e. paired over the outer samples where all three carry
    them (:func:`shared`), else the three s.e. combined as if independent."""
    w = slope_weights([r["s"] for r in pts], s)
    value = s * s * float(w @ np.array([r["phi"] for r in pts], float))
    if shared(*pts):
        se = s * s * paired_se(sum(wj * np.asarray(r["phi_samples"]) for wj, r in zip(w, pts)))
    else:
        se = s * s * math.sqrt(sum((wj * r.get("phi_se", 0.0)) ** 2 for wj, r in zip(w, pts)))
    return value, float(se)


@dataclass(frozen=True)
class Legendre:
    """The two estimators of Σ compared over a scan's rows (module docstring). Per row (arrays of
    the rows' length), for the interval from that row to the next row compared (NaN elsewhere and
    on the last): ``sigma_chord`` ± ``sigma_chord_se`` (Σ_Φ, from the difference of Φ), ``z``
    ((Σ_cf − Σ_Φ) in the s.e. of the difference, :func:`legendre`); ``chi2`` = Σ z² over the
    ``dof`` intervals with a finite z."""

    sigma_chord: np.ndarray
    sigma_chord_se: np.ndarray
    z: np.ndarray
    chi2: float = 0.0
    dof: int = 0

    @property
    def scale(self) -> float:
        """The factor S ≥ 1 on the s.e. of both estimators: √(χ²/ν), 1 where that is ≤ 1 or ν = 0."""
        return math.sqrt(self.chi2 / self.dof) if self.dof and self.chi2 > self.dof else 1.0


def legendre(rows, use) -> Legendre:
    """:class:`Legendre` of ``rows`` (ascending s; each with s, phi, phi_se, sigma, sigma_se and
    optionally phi_samples and sigma_samples, (N₀,) each) over the consecutive pairs of the rows of
    indices ``use`` (those the rule uses). z's s.e. is that of Σ_cf − Σ_Φ paired over the outer
    samples where both rows carry both per-sample arrays, else the bound of the module docstring.
    An interval whose s.e. is 0 (an exact table) gets no z."""
    n = len(rows)
    chord, chord_se, z = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    use = list(use)
    for i, j in zip(use, use[1:]):
        a, b = rows[i], rows[j]
        si, sj = a["s"], b["s"]
        w = si * sj / (sj - si)
        chord[i], chord_se[i] = w * (b["phi"] - a["phi"]), w * diff_se(a, b)
        cf = (sj * a["sigma"] + si * b["sigma"]) / (si + sj)
        if shared(a, b) and shared(a, b, key="sigma_samples"):
            # per outer sample: the shared noise cancels in the difference, each counted once
            cf_i = (sj * np.asarray(a["sigma_samples"]) + si * np.asarray(b["sigma_samples"])) / (si + sj)
            chord_i = w * (np.asarray(b["phi_samples"]) - np.asarray(a["phi_samples"]))
            se = paired_se(cf_i - chord_i)
        else:
            cf_se = (sj * a.get("sigma_se", 0.0) + si * b.get("sigma_se", 0.0)) / (si + sj)
            se = math.hypot(cf_se, chord_se[i])
        if se > 0 and math.isfinite(cf):
            z[i] = (cf - chord[i]) / se
    ok = np.isfinite(z)
    return Legendre(chord, chord_se, z, float(np.sum(z[ok] ** 2)), int(ok.sum()))
