"""The declaration of one score function σ (:class:`Sigma`): everything the rest of slrpipe reads
about it — its scores, its structure, its m → ∞ limit, which exact-in-L reduction and which
theories apply to it, and how figures draw it. Source: docs/model.md §3; docs/extending.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

#: the exact-in-L reductions of slrpipe.theory.exact_length (docs/theory.md §12) a σ may name:
#: normalised scores with log-weights λ = mχ* (its m → ∞ limit the argmax) or λ = log softplus(mχ*)
#: (its limit relu-normalised, the argmax when every field is < 0), and the per-token closed forms
#: σ = 1 + χ and σ = 1 + erf(c + χ)
EXACT_REDUCTIONS = ("normalised_exp", "normalised_softplus", "token_linear", "token_erf")
#: the laws the length figure fits to the ν reaching a target excess risk against L (Cor. 4.3–4.4):
#: a + b ln L (normalised σ, erf) or c·L^p (linear)
LENGTH_LAWS = ("log", "power")


@dataclass(frozen=True)
class Sigma:
    """One score function σ of the attention estimator f(X) = σ(Xk/√D)ᵀ(Xv/√D) (docs/model.md §3).

    Fields:
        name: the σ's name in configs, paths and the store (a Python identifier).
        score: ``score(chi, mask=None, xp=numpy)`` → scores (..., L) from key fields χ (..., L);
            padded tokens (mask False) get 0 and enter no normalisation; ``xp`` numpy or jax.numpy
            with the same numbers; differentiable in jax. With ``offset``, a keyword ``c`` too.
        normalised: the scores are a probability vector over the valid tokens.
        odd: σ − 1 is an odd function of χ (erf at c = 0), so ERM's minima are compared with the
            mirror image (−k, −v) of the other run's too (slrpipe.analysis.distance).
        offset: σ has a learned scalar offset c (an ERM parameter, unpenalised; optimised with
            m_k in the population optimum).
        limit: ``limit(chi_star)``: lim_{m→∞} σ(m χ*) up to a positive factor, numpy (n, L) → (n, L)
            (the population optimum evaluates m_k = ∞ with it).
        limit_up_to_scale: the limit holds only up to a positive factor (the value overlap m_v of
            the m_k = ∞ optimum then has no finite representative and is NaN).
        exact_length: the name of the exact-in-L reduction of slrpipe.theory.exact_length that
            applies (one of ``EXACT_REDUCTIONS``), or None: unsupported, the population theory uses
            the field quadrature.
        replica: the replica solver of ERM (slrpipe.theory.replica) supports σ.
        replica_note: why it does or does not (said in the solver's error message).
        label, colour, marker: how figures draw σ (matplotlib colour and marker).
        length_law: the law the length figure fits to ν(L) (one of ``LENGTH_LAWS``).

    Raises:
        ValueError: a name that is no identifier, an unknown ``exact_length`` or ``length_law``.
    """

    name: str
    score: Callable
    normalised: bool
    odd: bool
    offset: bool
    limit: Callable
    limit_up_to_scale: bool
    exact_length: str | None
    replica: bool
    replica_note: str
    label: str
    colour: str
    marker: str
    length_law: str

    def __post_init__(self):
        if not self.name.isidentifier():
            raise ValueError(f"name: must be an identifier, got {self.name!r}")
        if self.exact_length is not None and self.exact_length not in EXACT_REDUCTIONS:
            raise ValueError(
                f"exact_length: must be None or one of {', '.join(EXACT_REDUCTIONS)}, got {self.exact_length!r}"
            )
        if self.length_law not in LENGTH_LAWS:
            raise ValueError(f"length_law: must be one of {', '.join(LENGTH_LAWS)}, got {self.length_law!r}")
