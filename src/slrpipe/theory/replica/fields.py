"""Fixed common random numbers for the output channel: teacher fields, hidden location, noises.

One draw of ``Fields`` is reused at every iteration of the fixed point (and along α), so the
channel map is a deterministic function of the order parameters and its Monte Carlo error is a
single, seed-recorded realisation. The student noise ξ is antithetic: sample ``i + N/2`` has the
same teacher fields and label as sample ``i`` and the opposite ξ, which makes the Stein
estimators of V̂ (docs/theory.md §4) low-variance.

With ``qmc=True`` the Gaussian (and the categorical-location uniform) draws of the first half are
a randomly scrambled Sobol' point set (Owen scrambling, ``scipy.stats.qmc.Sobol``, seeded) mapped
by the inverse normal CDF; the transformations to the data law (spiked tilt, argmax/categorical
location) are the same exact maps as for plain Monte Carlo. Each scramble is an unbiased
estimator of the channel expectations; the spread over seeds is their Monte Carlo error.

Source: model.md §2 (data law), docs/theory.md §3 (local fields), §9 (variance reduction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.special import ndtri
from scipy.stats import qmc as _qmc

from slrpipe.setting import Setting
from slrpipe.vocabulary import DEFAULTS


@dataclass(frozen=True)
class Fields:
    """Per-sample random variables, all of shape (N, L) unless stated; N is even.

    chi_star, z_star: teacher fields χ*_ℓ, z*_ℓ under the data law (tilted by g_ν).
    eps: (N,) int, hidden location ε*.  noise: (N,) label noise ξ₀ (y = z*_ε + Δ ξ₀).
    xi_k, xi_v: student noises (antithetic halves).  dlogg: ∂ log g_ν / ∂χ*_ℓ (N, L), or None
    where it does not exist (max-SLR at ν = ∞).  qmc: scrambled-Sobol draws (else iid).
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
    qmc: bool = False

    @property
    def n(self) -> int:
        """Number of channel samples N."""
        return self.chi_star.shape[0]

    @property
    def y(self) -> np.ndarray:
        """Labels y = z*_ε + Δ ξ₀, shape (N,)."""
        return np.take_along_axis(self.z_star, self.eps[:, None], 1)[:, 0] + self.delta * self.noise


def _base_draws(half: int, L: int, n_uniform: int, seed: int, qmc: bool):
    """(half, 4L + 1) standard normals and (half, n_uniform) uniforms, iid or scrambled Sobol'.

    Sobol' coordinates in order χ*, z*, ξ₀, ξ_k, ξ_v, u (the teacher and label first: the leading
    coordinates of a Sobol' sequence are the best equidistributed)."""
    n_gauss = 4 * L + 1
    if not qmc:
        rng = np.random.default_rng(seed)
        # draw order of the original iid scheme (same numbers for the same seed)
        g = np.concatenate(
            [
                rng.standard_normal((half, L)),
                rng.standard_normal((half, L)),
                rng.standard_normal((half, 1)),
                rng.standard_normal((half, L)),
                rng.standard_normal((half, L)),
            ],
            axis=1,
        )
        return g, rng.random((half, n_uniform))
    sob = _qmc.Sobol(n_gauss + n_uniform, scramble=True, seed=np.random.default_rng(seed))
    m = max(int(math.ceil(math.log2(half))), 0)
    u = sob.random_base2(m)[:half]  # a prefix of the 2^m-point net when half is not a power of 2
    # scrambled points are never exactly 0; clip anyway so that ndtri stays finite
    u = np.clip(u, 2.0**-60, 1 - 2.0**-53)
    return ndtri(u[:, :n_gauss]), u[:, n_gauss:]


def draw_fields(setting: Setting, n_samples: int, seed: int = 0, *, qmc: bool = False) -> Fields:
    """Draw ``n_samples`` (rounded up to even) channel samples of ``setting`` (a fixed-length
    :class:`~slrpipe.setting.Setting`); seed → ``np.random.default_rng``.

    Spiked-SLR puts ε* = 0 (σ is permutation-equivariant) and χ*_0 ~ N(√ν, 1); max-SLR draws
    χ* ~ N(0, I_L) and ε* ~ Categorical(softmax(ν χ*)) by inverse CDF (argmax at ν = ∞). model.md §2.
    ``qmc=True``: the N/2 base points are a scrambled Sobol' set (module docstring); N/2 a power of
    two gives the full net (best), otherwise a prefix is used.

    Raises:
        ValueError: a variable-length setting, or n_samples < 2.
    """
    model, nu, L, delta = setting.model, setting.nu, setting.length, setting.delta
    if n_samples < 2:
        raise ValueError(f"n_samples: must be ≥ 2, got {n_samples}")
    half = (int(n_samples) + 1) // 2
    categorical = model == "max" and not math.isinf(nu)
    g, uni = _base_draws(half, L, int(categorical), int(seed), bool(qmc))
    chi_star, z_star, noise = g[:, :L].copy(), g[:, L : 2 * L], g[:, 2 * L]
    xi_k, xi_v = g[:, 2 * L + 1 : 3 * L + 1], g[:, 3 * L + 1 :]
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
        eps = np.minimum((np.cumsum(p, 1) < uni[:, :1]).sum(1), L - 1)
        dlogg = nu * (np.eye(L)[eps] - p)
    dup = lambda a: None if a is None else np.concatenate([a, a])
    return Fields(
        model=model,
        nu=float(nu),
        L=L,
        delta=float(delta),
        seed=int(seed),
        chi_star=dup(chi_star),
        z_star=dup(z_star),
        eps=dup(eps),
        noise=dup(noise),
        xi_k=np.concatenate([xi_k, -xi_k]),
        xi_v=np.concatenate([xi_v, -xi_v]),
        dlogg=dup(dlogg),
        qmc=bool(qmc),
    )


class Draw(NamedTuple):
    """How the common random numbers of a replica solve are drawn (:func:`draw_fields`):
    n_samples: int, channel samples N (rounded up to even; antithetic pairs).  seed: int, of the
    draw.  qmc: bool, scrambled-Sobol' points (module docstring) instead of iid draws.
    Source: docs/theory.md §9 (variance reduction)."""

    n_samples: int = DEFAULTS["replica"]["n_samples"]
    seed: int = DEFAULTS["replica"]["seed"]
    qmc: bool = True

    def fields(self, task) -> Fields:
        """The :class:`Fields` of ``task`` (a :class:`~slrpipe.theory.replica.options.ReplicaTask`;
        its setting) drawn this way.

        Raises:
            ValueError: as :func:`draw_fields`.
        """
        return draw_fields(task.setting, self.n_samples, self.seed, qmc=self.qmc)
