"""Score functions σ of the attention estimators f(X) = σ(χ)ᵀ z (model.md §3), by name.

Every function takes the key fields ``chi`` of shape (..., L) — χ_ℓ = x_ℓ·k/√D — and an optional
boolean ``mask`` of the same shape (True = real token). Padded tokens get score 0 and never enter
a normalisation. ``xp`` selects the array backend (``numpy`` for the theory's vectorised
quadratures, ``jax.numpy`` for training); both give the same numbers.

The σ themselves are declared in the registry :mod:`slrpipe.sigmas` (one module each); this module
dispatches on the name (:func:`score`) and re-exports the functions other modules use by name.
"""

from __future__ import annotations

import numpy as np

from slrpipe.sigmas import get
from slrpipe.sigmas.erf import erf as erf
from slrpipe.sigmas.kernels import log_softplus as log_softplus
from slrpipe.sigmas.kernels import softmax as softmax
from slrpipe.sigmas.kernels import softplus as softplus
from slrpipe.sigmas.linear import linear as linear
from slrpipe.sigmas.softplus_norm import softplus_norm as softplus_norm


def score(name, chi, mask=None, xp=np, c=0.0):
    """The scores (..., L) of σ ``name`` (a registered σ, :mod:`slrpipe.sigmas`) at fields ``chi``;
    ``c``: the learned offset, passed to σ with ``offset`` (erf) and ignored by the others.

    Raises:
        ValueError: ``name`` is not registered.
    """
    sigma = get(name)
    return sigma.score(chi, mask, xp, c=c) if sigma.offset else sigma.score(chi, mask, xp)
