"""The data setting of SLR, defined once: the model, the signal strength ν, the length law P_L and
the label noise Δ (docs/model.md §2).

Everything that describes *which data* — the samplers (:class:`slrpipe.data.sampling.SLRTask`, the
setting and a dimension D), the population theory (:mod:`slrpipe.theory.population`) and the
replica theory (:class:`slrpipe.theory.replica.options.ReplicaTask`, a σ and a setting) — takes one
:class:`Setting`, checked once when it is built. This module imports only the vocabulary and the
length laws.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from slrpipe.lengths import length_law
from slrpipe.vocabulary import c_nu, check_delta, check_model_nu


@dataclass(frozen=True)
class Setting:
    """The SLR data setting (docs/model.md §2).

    model: str, 'spiked' | 'max'.  nu: float, signal strength ν ≥ 0 (max-SLR: inf allowed).
    L: the length law, given as an int ≥ 1 (fixed length) or a dict {length ≥ 1: probability};
    stored normalised (:func:`slrpipe.lengths.length_law`: a sorted dict {int: float}).
    delta: float, label-noise standard deviation Δ ≥ 0 (default 0).
    Frozen and hashable (a static argument of jitted functions); equal settings hash equal.

    Raises:
        ValueError: one line naming the field: unknown model, ν < 0 or NaN, ν = inf for spiked-SLR,
            a bad length law, Δ < 0 or not finite.
    """

    model: str
    nu: float
    L: dict = field(hash=False)
    delta: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "nu", check_model_nu(self.model, self.nu))
        object.__setattr__(self, "L", length_law(self.L))
        object.__setattr__(self, "delta", check_delta(self.delta))

    def __hash__(self) -> int:
        return hash((self.model, self.nu, tuple(self.L.items()), self.delta))

    @property
    def law(self) -> dict[int, float]:
        """The length law {length: probability} (the same dict as ``L``)."""
        return self.L

    @property
    def fixed(self) -> bool:
        """Whether the law is one length."""
        return len(self.L) == 1

    @property
    def length(self) -> int:
        """The one sequence length of a fixed-length setting.

        Raises:
            ValueError: the law has more than one length.
        """
        if not self.fixed:
            raise ValueError(f"L: must be one fixed length here, got the law {self.L}")
        return next(iter(self.L))

    @property
    def L_max(self) -> int:
        """The longest sequence length of the law (the padded token axis)."""
        return max(self.L)

    @property
    def c_nu(self) -> float:
        """Bayes key scale c_ν: √ν (spiked), ν (max; inf at ν = inf). docs/model.md §3."""
        return c_nu(self.model, self.nu)

    def replace(self, **changes) -> Setting:
        """This setting with the named fields replaced (checked again).

        Raises:
            ValueError: as the constructor.
        """
        return dataclasses.replace(self, **changes)
