"""Batch-means Monte Carlo error of a fixed point solved on common random numbers (docs/theory.md
§13, "Monte Carlo error of the 1RSB state").

A replica fixed point is a function of its N₀ outer samples, and the quantities read off it (the
test error of a typical state, δq, Φ) have no per-sample form whose spread gives their error: the
samples enter through the state they determine. Batch means: cut the N₀ samples into K batches, each
closed under the antithetic pairing i ↔ i + N₀/2 (:func:`antithetic_batches`), solve the fixed
point on each batch from the full sample's state, and take the spread of the K values. A value from
N₀/K samples has about K times the variance of one from N₀ (its error scales as 1/√N₀), so the
standard error of the full-sample value is sd/√K, with K − 1 degrees of freedom (K = 4: the s.e. is
itself uncertain by about ±40 %). The outer samples are scrambled Sobol' points, and a block of
2^k consecutive points is itself a scrambled net: each batch is a smaller estimate of the same
kind. Blocks of one net are not independent; measured against the spread over independent draws
(tests/test_batch_means.py, an RS point) sd/√K is 1.4–1.7× that spread, so it errs on the
conservative side there. The mean
over batches minus the full value estimates the finite-sample bias at N₀/K; where the bias scales
as 1/N₀, the bias of the full value is that difference divided by K − 1 (:func:`summary`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np


def antithetic_batches(n: int, k: int) -> list[np.ndarray]:
    """K index arrays partitioning range(n): batch b is the b-th block of the first half and its
    mirror block i + n/2 (the antithetic partners of ``fields``' student noise and of the inner sets).

    Raises:
        ValueError: k < 2, or n/2 not a multiple of k (one line naming the sizes).
    """
    if k < 2:
        raise ValueError(f"batches: K = {k} must be at least 2")
    h = n // 2
    if n % 2 or h % k:
        raise ValueError(f"batches: N₀/2 = {n / 2:g} is not a multiple of K = {k}")
    step = h // k
    return [
        np.concatenate([np.arange(b * step, (b + 1) * step), h + np.arange(b * step, (b + 1) * step)]) for b in range(k)
    ]


def subset(samples, idx: np.ndarray):
    """A ``Fields`` or ``Inner`` (any dataclass of per-sample arrays on axis 0) restricted to the
    samples ``idx``: every ndarray field is cut, everything else (seed, model, None) kept. A shared
    inner set (2-D, one set for all outer samples) is returned as is."""
    if getattr(samples, "independent", True) is False:
        return samples
    cut = {
        f.name: getattr(samples, f.name)[idx]
        for f in dataclasses.fields(samples)
        if isinstance(getattr(samples, f.name), np.ndarray)
    }
    return dataclasses.replace(samples, **cut)


def batch_values(solve: Callable[[np.ndarray], dict], n: int, k: int, keys: Sequence[str]) -> dict[str, np.ndarray]:
    """``solve(idx)`` on each of the K :func:`antithetic_batches` of n samples: {key: (K,) values}
    for ``keys`` (floats; bools become 0/1)."""
    rows = [solve(idx) for idx in antithetic_batches(n, k)]
    return {key: np.array([float(r[key]) for r in rows]) for key in keys}


def summary(values: np.ndarray, full: float) -> dict[str, float]:
    """The batch-means error of one quantity: ``values`` (K,) over batches, ``full`` its value on
    all N₀ samples. Returns ``se`` = sd/√K (the s.e. of the full value), ``mean`` over batches,
    ``bias`` = (mean − full)/(K − 1) (the full value's finite-N₀ bias where it scales as 1/N₀). NaN
    where a batch value is not finite."""
    v = np.asarray(values, float)
    k = v.size
    if k < 2 or not np.all(np.isfinite(v)):
        return {"se": math.nan, "mean": math.nan, "bias": math.nan}
    mean = float(v.mean())
    return {"se": float(v.std(ddof=1) / math.sqrt(k)), "mean": mean, "bias": (mean - float(full)) / (k - 1)}
