"""The attention estimator f(X) = σ(X k/√D)ᵀ (X v/√D) as a Flax NNX module (model.md §3).

``attention_apply`` is the pure function (params dict → predictions) that the trainer
differentiates (``xp=jax.numpy``) and that measures test errors on the host (``xp=numpy``, no
compilation); ``Attention`` is the NNX module holding k, v (and the erf offset c) as parameters: ERM
trains its ``nnx.Param`` state (``slrpipe.train.experiment``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from slrpipe.scores import score
from slrpipe.sigmas import get as get_sigma
from slrpipe.vocabulary import RANDOM_INITS, check_sigma, project

INITS = (*RANDOM_INITS, "zeros")


def fields(k, v, X, mask=None, xp=jnp):
    """Key and value fields χ = X k/√D, z = X v/√D, each (..., L), 0 on padded tokens.

    X: (..., L, D); k, v: (D,); mask: bool (..., L) or None. One pass over X (both directions
    multiplied together); padded tokens are zeroed *after* the product so that arbitrary values
    there (even huge ones) never reach the score or the output. ``xp``: ``jax.numpy`` or ``numpy``.
    """
    return project(X, k, v, mask, xp)


def attention_apply(params: dict, X, mask, sigma: str, xp=jnp):
    """f(X) = Σ_ℓ σ(χ)_ℓ z_ℓ for a batch.

    Args:
        params: {"k": (D,), "v": (D,)} plus "c": () for σ with an offset, erf (missing c means 0).
        X: (n, L, D) tokens; mask: bool (n, L) (True = real token) or None.
        sigma: one of ``slrpipe.vocabulary.SIGMAS`` or registered, :mod:`slrpipe.sigmas`.
        xp: ``jax.numpy`` (default; differentiable, jit-able) or ``numpy`` (host evaluation).

    Returns:
        (n,) predictions, dtype of X. Padded tokens are excluded from the score (softmax and
        softplus_norm normalise over valid tokens only) and from the sum.

    Source: model.md §3.
    """
    chi, z = fields(params["k"], params["v"], X, mask, xp)
    return attention_from_fields(params, chi, z, mask, sigma, xp)


def attention_from_fields(params: dict, chi, z, mask, sigma: str, xp=jnp):
    """Σ_ℓ σ(χ)_ℓ z_ℓ from the fields χ, z (..., L) (zero on padded tokens, as ``fields`` gives)."""
    s = score(sigma, chi, mask, xp=xp, c=params.get("c", 0.0))
    return xp.sum(s * z, axis=-1)


class Attention(nnx.Module):
    """Single-head attention estimator f_{σ,k,v}(X) = σ(Xk/√D)ᵀ(Xv/√D) (model.md §3).

    Args:
        D: token dimension ≥ 1.
        sigma: score function name (``slrpipe.vocabulary.SIGMAS`` or registered, :mod:`slrpipe.sigmas`); a σ with an offset
            (``Sigma.offset``, erf) adds a learned scalar c (initialised at 0, unpenalised in ERM).
        rngs: ``nnx.Rngs`` used by the random initialisations (may be None for the others).
        init: "random" (k, v ~ N(0, I_D)), "small" (k, v ~ N(0, scale² I_D)), "zeros", or a
            tuple (k, v) of (D,) arrays (e.g. the informed k = c_ν k*, v = v*).
        scale: standard deviation for init="small".
        dtype: parameter dtype.

    Call: ``model(X, mask=None)`` with X (n, L, D), mask bool (n, L) → (n,).

    Raises:
        ValueError: bad sigma, init, D or shapes of explicit (k, v).
    """

    def __init__(
        self, D: int, sigma: str, rngs: nnx.Rngs | None = None, init="random", scale: float = 1e-2, dtype=jnp.float32
    ):
        if int(D) != D or D < 1:
            raise ValueError(f"D: must be an integer ≥ 1, got {D}")
        self.D, self.sigma = int(D), check_sigma(sigma)
        if isinstance(init, str):
            if init not in INITS:
                raise ValueError(f"init: must be one of {', '.join(INITS)} or a (k, v) pair, got {init!r}")
            if init == "zeros":
                k = v = jnp.zeros(D, dtype)
            else:
                if rngs is None:
                    raise ValueError(f"rngs: init={init!r} needs an nnx.Rngs")
                s = 1.0 if init == "random" else float(scale)
                k = s * jax.random.normal(rngs.params(), (D,), dtype)
                v = s * jax.random.normal(rngs.params(), (D,), dtype)
        else:
            k, v = (jnp.asarray(a, dtype) for a in init)
            if k.shape != (D,) or v.shape != (D,):
                raise ValueError(f"init: explicit k, v must have shape ({D},), got {k.shape}, {v.shape}")
        self.k, self.v = nnx.Param(k), nnx.Param(v)
        self.c = nnx.Param(jnp.zeros((), dtype)) if get_sigma(sigma).offset else None

    def params(self) -> dict:
        """Parameters as a plain dict {"k", "v"[, "c"]} (what ``attention_apply`` takes)."""
        p = {"k": self.k[...], "v": self.v[...]}
        if self.c is not None:
            p["c"] = self.c[...]
        return p

    def set_params(self, params: dict) -> None:
        """Overwrite the parameters from a dict as returned by ``params``."""
        self.k[...] = params["k"]
        self.v[...] = params["v"]
        if self.c is not None:
            self.c[...] = params["c"]

    def __call__(self, X, mask=None):
        return attention_apply(self.params(), X, mask, self.sigma)
