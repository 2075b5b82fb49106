"""Counter-based sampling of SLR data chunks on the JAX device that trains (the "jax" sampler).

The law is that of :func:`slrpipe.data.sampling.sample_chunk` (the host sampler); the numbers are
another draw of it. Chunk ``i`` is a pure function of (task, teacher, ``seed``, ``i``, chunk size):
its stream is the threefry key ``fold_in(PRNGKey(seed), i)``, split into one key per variate, so any
chunk is regenerated alone, on the device it is used on, and a data set never passes through the
host. Threefry's bits are the same on every backend; the Gaussian and uniform transforms of them
may differ between CPU and GPU in the last bits (floating-point rounding).

Source: docs/model.md §2 (the law) and §8 (chunked sampling).
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from slrpipe.data.sampling import Chunk, SLRTask, check_chunk
from slrpipe.scores import softmax


def sample_chunk_device(task: SLRTask, k_star, v_star, seed: int, index: int, size: int) -> Chunk:
    """Draw chunk ``index`` (``size`` samples) of the data set with random seed ``seed`` on JAX's
    default device.

    Same law and arrays as :func:`slrpipe.data.sampling.sample_chunk` (docs/model.md §2), as jax
    arrays: X float32 (size, L_max, D), padded tokens exactly 0; mask bool (size, L_max); y float64
    (size,); eps, lengths int64 (size,). The stream is ``fold_in(PRNGKey(seed), index)`` (threefry).

    Raises:
        ValueError: seed/index outside [0, 2³²) (threefry's 32-bit words), size < 1 or teacher of
            the wrong shape.
    """
    check_chunk(task, k_star, v_star, seed, index, size)
    if seed >= 2**32 or index >= 2**32:
        raise ValueError(f"seed, index: must be < 2**32 for the jax sampler, got {seed}, {index}")
    sqrtD = math.sqrt(task.D)
    with jax.enable_x64(True):  # y, u, ξ in float64 as on the host; X stays float32
        return Chunk(
            *_draw(
                jnp.asarray(int(seed), jnp.uint32),
                jnp.asarray(int(index), jnp.uint32),
                jnp.asarray(np.asarray(k_star) / sqrtD, jnp.float64),
                jnp.asarray(np.asarray(v_star) / sqrtD, jnp.float64),
                size=int(size),
                D=task.D,
                setting=task.setting,
            )
        )


@partial(jax.jit, static_argnames=("size", "D", "setting"))
def _draw(seed, index, k_scaled, v_scaled, *, size, D, setting):
    model, nu, delta = setting.model, setting.nu, setting.delta
    lengths, probs = tuple(setting.L), tuple(setting.L.values())
    key = jax.random.fold_in(jax.random.PRNGKey(seed), index)
    k_len, k_x, k_u, k_xi = jax.random.split(key, 4)
    Lm = max(lengths)
    if len(lengths) == 1:
        lens = jnp.full(size, lengths[0], jnp.int64)
    else:
        lens = jax.random.choice(k_len, jnp.asarray(lengths, jnp.int64), (size,), p=jnp.asarray(probs))
    mask = jnp.arange(Lm)[None, :] < lens[:, None]
    X = jnp.where(mask[..., None], jax.random.normal(k_x, (size, Lm, D), jnp.float32), 0.0)
    u = jax.random.uniform(k_u, (size,), jnp.float64)
    xi = jax.random.normal(k_xi, (size,), jnp.float64)
    rows = jnp.arange(size)
    if model == "spiked" or nu == 0:
        eps = jnp.minimum((u * lens).astype(jnp.int64), lens - 1)
        if model == "spiked" and nu > 0:
            X = X.at[rows, eps].add((math.sqrt(nu) * k_scaled).astype(jnp.float32))
    else:
        chi = (X @ k_scaled.astype(jnp.float32)).astype(jnp.float64)
        if math.isinf(nu):
            eps = jnp.argmax(jnp.where(mask, chi, -jnp.inf), axis=1)
        else:
            cdf = jnp.cumsum(softmax(nu * chi, mask, xp=jnp), axis=1)
            eps = jnp.minimum((cdf < u[:, None] * cdf[:, -1:]).sum(axis=1), lens - 1)
    y = X[rows, eps].astype(jnp.float64) @ v_scaled + delta * xi
    return X, mask, y, eps.astype(jnp.int64), lens


def concatenate(n: int, chunks) -> Chunk:
    """The ``n`` rows of an iterable of device chunks, in order, as one ``Chunk`` on the device.
    The rows are written into one buffer in place (donated), so the peak is the result plus one
    chunk.

    Raises:
        ValueError: the chunks do not hold exactly ``n`` rows."""
    out, a = None, 0
    with jax.enable_x64(True):
        for ch in chunks:
            if out is None:
                out = Chunk(*(jnp.zeros((n, *x.shape[1:]), x.dtype) for x in ch))
            if a + len(ch.y) > n:
                raise ValueError(f"n: the chunks hold more than {n} rows")
            out = _put(out, ch, a)
            a += len(ch.y)
    if a != n:
        raise ValueError(f"n: the chunks hold {a} rows, not {n}")
    return out


@partial(jax.jit, donate_argnums=0)
def _put(out, ch, a):
    return Chunk(*(jax.lax.dynamic_update_slice_in_dim(o, c, a, 0) for o, c in zip(out, ch)))
