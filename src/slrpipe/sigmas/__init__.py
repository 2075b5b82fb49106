"""The σ registry: the score functions of the attention estimator (docs/model.md §3), one module
each, each declaring a :class:`Sigma` (scores, structure, m → ∞ limit, exact-in-L reduction,
replica support, plot style).

The vocabulary (``slrpipe.vocabulary.SIGMAS``, ``NORMALISED_SIGMAS``, ``ODD_SIGMAS``,
``REPLICA_SIGMAS``), the models, the theories and the figures read σ from here; a σ none of them
knows raises ValueError (:func:`get`). A new σ is a new module here and one line in ``_BUILTIN``
(docs/extending.md). This package imports numpy (and jax.numpy through ``xp``), nothing of slrpipe
outside it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from slrpipe.sigmas import erf, linear, softmax, softplus_norm
from slrpipe.sigmas.base import EXACT_REDUCTIONS, LENGTH_LAWS, Sigma

__all__ = ["EXACT_REDUCTIONS", "LENGTH_LAWS", "REGISTRY", "Sigma", "get", "names", "registered"]

#: the σ of slrpipe, in the order of ``slrpipe.vocabulary.SIGMAS`` (configs, schema, figures)
_BUILTIN = (softmax.SIGMA, linear.SIGMA, erf.SIGMA, softplus_norm.SIGMA)
#: name → declaration; :func:`registered` adds one for the duration of a block (tests)
REGISTRY: dict[str, Sigma] = {s.name: s for s in _BUILTIN}


def names() -> tuple[str, ...]:
    """The registered σ names, in registration order."""
    return tuple(REGISTRY)


def get(name: str) -> Sigma:
    """The declaration of σ ``name``.

    Raises:
        ValueError: ``name`` is not registered (one line listing the registered names).
    """
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"sigma: must be one of {', '.join(REGISTRY)}, got {name!r}") from None


@contextmanager
def registered(sigma: Sigma) -> Iterator[Sigma]:
    """Register ``sigma`` for the duration of the block (the library calls and the config schema,
    slrpipe.config.load_schema, accept its name; the static name lists of ``slrpipe.vocabulary``
    do not change).

    Raises:
        ValueError: a σ of that name is already registered.
    """
    if sigma.name in REGISTRY:
        raise ValueError(f"sigma: {sigma.name!r} is already registered")
    REGISTRY[sigma.name] = sigma
    try:
        yield sigma
    finally:
        del REGISTRY[sigma.name]
