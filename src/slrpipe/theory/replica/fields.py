"""Fixed common random numbers for the output channel: teacher fields, hidden location, noises.

One draw of ``Fields`` is reused at every iteration of the fixed point (and along α), so the
channel map is a deterministic function of the order parameters and its Monte Carlo error is a
single, seed-recorded realisation. The student noise ξ is antithetic: sample ``i + N/2`` has the
same teacher fields and label as sample ``i`` and the opposite ξ, which makes the Stein
estimators of V̂ (docs/theory.md §4) low-variance.

Source: model.md §2 (data law), docs/theory.md §3 (local fields).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MODELS = ("spiked", "max")


@dataclass(frozen=True)
class Fields:
    """Per-sample random variables, all of shape (N, L) unless stated; N is even.

    chi_star, z_star: teacher fields χ*_ℓ, z*_ℓ under the data law (tilted by g_ν).
    eps: (N,) int, hidden location ε*.  noise: (N,) label noise ξ₀ (y = z*_ε + Δ ξ₀).
    xi_k, xi_v: student noises (antithetic halves).  dlogg: ∂ log g_ν / ∂χ*_ℓ (N, L), or None
    where it does not exist (max-SLR at ν = ∞).
    """

    model: str
    nu: float
    L: int
    delta: float
    seed: int
    chi_star: np.ndarray
    z_star: np.ndarray
    eps: np.ndarray
    noise: np.ndarray
    xi_k: np.ndarray
    xi_v: np.ndarray
    dlogg: np.ndarray | None

    @property
    def n(self) -> int:
        return self.chi_star.shape[0]

    @property
    def y(self) -> np.ndarray:
        """Labels y = z*_ε + Δ ξ₀, shape (N,)."""
        return np.take_along_axis(self.z_star, self.eps[:, None], 1)[:, 0] + self.delta * self.noise


def check_task(model: str, nu: float, L: int, delta: float) -> None:
    """Raise ValueError (one line naming the argument) for parameters outside their range."""
    if model not in MODELS:
        raise ValueError(f"model: must be one of {', '.join(MODELS)}, got {model!r}")
    if not (nu >= 0):
        raise ValueError(f"nu: must be ≥ 0, got {nu}")
    if model == "spiked" and math.isinf(nu):
        raise ValueError("nu: spiked-SLR needs a finite nu ≥ 0, got inf")
    if int(L) != L or L < 1:
        raise ValueError(f"L: must be an integer ≥ 1, got {L}")
    if not (delta >= 0):
        raise ValueError(f"delta: must be ≥ 0, got {delta}")


def draw_fields(model: str, nu: float, L: int, delta: float, n_samples: int, seed: int = 0) -> Fields:
    """Draw ``n_samples`` (rounded up to even) channel samples from ``np.random.default_rng(seed)``.

    Spiked-SLR puts ε* = 0 (σ is permutation-equivariant) and χ*_0 ~ N(√ν, 1); max-SLR draws
    χ* ~ N(0, I_L) and ε* ~ Categorical(softmax(ν χ*)) (argmax at ν = ∞). model.md §2.

    Raises:
        ValueError: bad model/nu/L/delta, or n_samples < 2.
    """
    check_task(model, nu, L, delta)
    if n_samples < 2:
        raise ValueError(f"n_samples: must be ≥ 2, got {n_samples}")
    L = int(L)
    half = (int(n_samples) + 1) // 2
    rng = np.random.default_rng(seed)
    chi_star = rng.standard_normal((half, L))
    z_star = rng.standard_normal((half, L))
    noise = rng.standard_normal(half)
    xi_k = rng.standard_normal((half, L))
    xi_v = rng.standard_normal((half, L))
    if model == "spiked":
        eps = np.zeros(half, dtype=np.int64)
        chi_star[:, 0] += math.sqrt(nu)
        dlogg = np.zeros((half, L))
        dlogg[:, 0] = math.sqrt(nu)
    elif math.isinf(nu):
        eps = np.argmax(chi_star, axis=1)
        dlogg = None
    else:
        logits = nu * chi_star
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        u = rng.random(half)
        eps = np.minimum((np.cumsum(p, 1) < u[:, None]).sum(1), L - 1)
        dlogg = nu * (np.eye(L)[eps] - p)
    dup = lambda a: None if a is None else np.concatenate([a, a])  # noqa: E731
    return Fields(model=model, nu=float(nu), L=L, delta=float(delta), seed=int(seed),
                  chi_star=dup(chi_star), z_star=dup(z_star), eps=dup(eps), noise=dup(noise),
                  xi_k=np.concatenate([xi_k, -xi_k]), xi_v=np.concatenate([xi_v, -xi_v]),
                  dlogg=dup(dlogg))
