"""Counter-based sampling of SLR data chunks: spiked-SLR and max-SLR, fixed or random length.

Chunk ``i`` of a dataset is a pure function of (task, teacher, ``seed``, ``i``, chunk size): its
random stream is ``np.random.default_rng([seed, i])``, so any chunk can be regenerated alone and a
dataset of any size is produced by streaming chunks (never more than one chunk in memory).

Source: model.md §2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from slrpipe.scores import softmax
from slrpipe.setting import Setting

#: default number of floats per chunk (64 MiB of float32 X).
CHUNK_FLOATS = 2**24


@dataclass(frozen=True)
class SLRTask:
    """The data distribution: a data setting (:class:`slrpipe.setting.Setting`: model, ν, length
    law L, label noise Δ) in dimension D ≥ 2. The setting's fields read through (``task.model``,
    ``task.nu``, ``task.L``, ``task.delta``, ``task.L_max``, ``task.c_nu``).

    Raises:
        ValueError: D not an integer ≥ 2.
        TypeError: ``setting`` not a :class:`~slrpipe.setting.Setting`.
    """

    setting: Setting
    D: int

    def __post_init__(self):
        if not isinstance(self.setting, Setting):
            raise TypeError(f"setting: must be a Setting, got {type(self.setting).__name__}")
        if int(self.D) != self.D or self.D < 2:
            raise ValueError(f"D: must be an integer ≥ 2, got {self.D}")
        object.__setattr__(self, "D", int(self.D))

    model = property(lambda self: self.setting.model, doc="'spiked' | 'max'.")
    nu = property(lambda self: self.setting.nu, doc="ν (float).")
    L = property(lambda self: self.setting.L, doc="The length law {length: probability}.")
    delta = property(lambda self: self.setting.delta, doc="Δ (float).")
    L_max = property(lambda self: self.setting.L_max, doc="The longest length (the padded token axis).")
    c_nu = property(lambda self: self.setting.c_nu, doc="Bayes key scale c_ν (model.md §3).")

    def default_chunk_size(self) -> int:
        """Samples per chunk for ~:data:`CHUNK_FLOATS` floats of X (at least 1)."""
        return max(1, CHUNK_FLOATS // (self.L_max * self.D))


class Chunk(NamedTuple):
    """One chunk of c samples. X: float32 (c, L_max, D), padded tokens exactly 0; mask: bool
    (c, L_max), True = real token; y: float64 (c,); eps: int64 (c,) hidden location ε* (0-based,
    always < length); lengths: int64 (c,)."""

    X: np.ndarray
    mask: np.ndarray
    y: np.ndarray
    eps: np.ndarray
    lengths: np.ndarray


def check_chunk(task: SLRTask, k_star, v_star, seed: int, index: int, size: int) -> None:
    """The argument checks of every sampler.

    Raises:
        ValueError: negative seed/index, size < 1 or teacher of the wrong shape."""
    if seed < 0 or index < 0:
        raise ValueError(f"seed, index: must be ≥ 0, got {seed}, {index}")
    if size < 1:
        raise ValueError(f"size: must be ≥ 1, got {size}")
    if np.shape(k_star) != (task.D,) or np.shape(v_star) != (task.D,):
        raise ValueError(f"k_star, v_star: must have shape ({task.D},)")


def sample_chunk(task: SLRTask, k_star, v_star, seed: int, index: int, size: int) -> Chunk:
    """Draw chunk ``index`` (``size`` samples) of the dataset with random seed ``seed``.

    Sampling (model.md §2): tokens iid N(0, I_D); length L_i ~ P_L; spiked-SLR: ε* uniform on the
    valid positions and x_{ε*} += √ν k*/√D; max-SLR: ε* ~ Categorical(softmax(ν χ*)) over valid
    positions (argmax of χ* at ν = inf); y = x_{ε*}·v*/√D + Δ ξ.

    Args:
        task: the distribution.
        k_star, v_star: teacher directions, shape (D,), from ``make_teacher``.
        seed, index: non-negative ints; the stream is ``default_rng([seed, index])``.
        size: number of samples, ≥ 1.

    Raises:
        ValueError: negative seed/index, size < 1 or teacher of the wrong shape.
    """
    check_chunk(task, k_star, v_star, seed, index, size)
    D, Lm = task.D, task.L_max
    rng = np.random.default_rng([int(seed), int(index)])
    lengths_vals = np.fromiter(task.L, dtype=np.int64)
    if len(lengths_vals) == 1:
        lengths = np.full(size, lengths_vals[0], dtype=np.int64)
    else:
        lengths = rng.choice(lengths_vals, size=size, p=np.fromiter(task.L.values(), float))
    mask = np.arange(Lm)[None, :] < lengths[:, None]
    X = rng.standard_normal((size, Lm, D), dtype=np.float32)
    if not mask.all():
        X[~mask] = 0.0
    u = rng.random(size)
    xi = rng.standard_normal(size)
    rows = np.arange(size)
    sqrtD = math.sqrt(D)
    if task.model == "spiked" or task.nu == 0:
        eps = np.minimum((u * lengths).astype(np.int64), lengths - 1)
        if task.model == "spiked" and task.nu > 0:
            X[rows, eps] += (math.sqrt(task.nu) / sqrtD * k_star).astype(np.float32)
    else:
        chi = (X @ (k_star / sqrtD).astype(np.float32)).astype(np.float64)
        if math.isinf(task.nu):
            eps = np.argmax(np.where(mask, chi, -np.inf), axis=1)
        else:
            cdf = np.cumsum(softmax(task.nu * chi, mask), axis=1)
            eps = np.minimum((cdf < u[:, None] * cdf[:, -1:]).sum(axis=1), lengths - 1)
    z_star = X[rows, eps].astype(np.float64) @ (v_star / sqrtD)
    y = z_star + task.delta * xi
    return Chunk(X, mask, y, eps.astype(np.int64), lengths)
