"""Samples of the 1RSB channel (docs/theory.md §13): the outer fields (the RS ``Fields``) and the
inner (within-state) student noise ξ¹, drawn as an :class:`Rsb1Draw` says."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.special import ndtri
from scipy.stats import qmc as _qmc

from slrpipe.theory.replica.fields import Draw, Fields
from slrpipe.theory.replica.options import replica_task
from slrpipe.vocabulary import DEFAULTS


@dataclass(frozen=True)
class Inner:
    """Inner (within-state) student noise ξ¹: one set shared by all outer samples, or an
    independent set per outer sample.

    xi_k, xi_v: (N₁, L) shared, or (N₀, N₁, L) per outer sample; standard normals, and along the
    N₁ axis rows j and j + N₁/2 are opposite (antithetic).
    halves: two index arrays into the N₁ axis, each an antithetic half-set (the jackknife of the N₁
    bias).
    """

    xi_k: np.ndarray
    xi_v: np.ndarray
    seed: int

    @property
    def n(self) -> int:
        """N₁, the number of inner noise vectors (per outer sample)."""
        return self.xi_k.shape[-2]

    @property
    def independent(self) -> bool:
        """True when every outer sample has its own inner set."""
        return self.xi_k.ndim == 3

    @property
    def halves(self) -> tuple[np.ndarray, np.ndarray]:
        """Index arrays of two halves of the inner sample, each closed under the antithetic pairing
        (the first and second quarter of the points and their mirrors): two independent N₁/2 estimates."""
        h, q = self.n // 2, self.n // 4
        first = np.concatenate([np.arange(q), h + np.arange(q)])
        return first, np.setdiff1d(np.arange(self.n), first)


def _sobol_normals(dim: int, half: int, rng) -> np.ndarray:
    """``half`` scrambled Sobol' points in R^dim mapped to standard normals (inverse CDF)."""
    sob = _qmc.Sobol(dim, scramble=True, seed=rng)
    u = sob.random_base2(max(math.ceil(math.log2(half)), 0))[:half]
    return ndtri(np.clip(u, 2.0**-60, 1 - 2.0**-53))


def draw_inner(L: int, n_inner: int, seed: int = 1, n_outer: int | None = None, qmc: bool = True) -> Inner:
    """N₁ = ``n_inner`` inner noise vectors (a multiple of 4): N₁/2 points in R^{2L} and their
    mirror images; the points are a scrambled Sobol' set (``scipy.stats.qmc.Sobol``, inverse normal
    CDF) or, with ``qmc`` False, iid standard normals.

    With ``n_outer`` = N₀, every outer sample i gets its own set (Sobol' scrambled from the seed
    ``[seed, i]``; iid: rows of ``default_rng(seed)``) (independent sets): the error of the inner
    average then averages out over the outer samples and enters their s.e., leaving the O(1/N₁) bias
    of the self-normalised averages (jackknifed, ``*_n1_bias``), whose 1/N₁ law is exact for iid
    antithetic pairs. Without it one set (seed ``seed``) is shared by all outer samples (common random
    numbers), whose own sampling error does not average out (docs/theory.md §13).

    Returns:
        :class:`Inner` with xi_k, xi_v of shape (N₁, L), or (N₀, N₁, L) with ``n_outer``.
    Raises:
        ValueError: n_inner not a positive multiple of 4, L < 1 or n_outer < 1.
    """
    if int(n_inner) != n_inner or n_inner < 4 or n_inner % 4:
        raise ValueError(f"n_inner: must be a positive multiple of 4, got {n_inner}")
    if int(L) != L or L < 1:
        raise ValueError(f"L: must be an integer ≥ 1, got {L}")
    if n_outer is not None and (int(n_outer) != n_outer or n_outer < 1):
        raise ValueError(f"n_outer: must be an integer ≥ 1, got {n_outer}")
    half, dim = int(n_inner) // 2, 2 * int(L)
    shape = (half, dim) if n_outer is None else (int(n_outer), half, dim)
    if not qmc:
        g = np.random.default_rng(int(seed)).standard_normal(shape)
    elif n_outer is None:
        g = _sobol_normals(dim, half, np.random.default_rng(int(seed)))
    else:
        g = np.stack([_sobol_normals(dim, half, np.random.default_rng([int(seed), i])) for i in range(int(n_outer))])
    g = np.concatenate([g, -g], axis=-2)
    return Inner(xi_k=g[..., :L], xi_v=g[..., L:], seed=int(seed))


class Rsb1Draw(NamedTuple):
    """How the samples of :func:`rsb1_ground_state` are drawn: n_outer: int, N₀ (outer samples, the
    RS fields: scrambled Sobol', :class:`~slrpipe.theory.replica.fields.Draw`); n_inner: int, N₁
    (a multiple of 4, :func:`draw_inner`); seed / inner_seed: int, their seeds; independent: bool,
    an inner set per outer sample (default) or one shared set (docs/theory.md §13)."""

    n_outer: int = DEFAULTS["rsb1"]["n_outer"]
    n_inner: int = DEFAULTS["rsb1"]["n_inner"]
    seed: int = DEFAULTS["replica"]["seed"]
    inner_seed: int = DEFAULTS["rsb1"]["inner_seed"]
    independent: bool = True

    def samples(self, task) -> tuple[Fields, Inner]:
        """(outer fields, inner set) of ``task`` (a :class:`ReplicaTask`) drawn this way.

        Raises:
            ValueError: as :func:`~slrpipe.theory.replica.fields.draw_fields` / :func:`draw_inner`.
        """
        L = replica_task(task).L
        fields = Draw(int(self.n_outer), int(self.seed), qmc=True).fields(task)
        n_outer = fields.n if self.independent else None
        return fields, draw_inner(int(L), int(self.n_inner), int(self.inner_seed), n_outer)
