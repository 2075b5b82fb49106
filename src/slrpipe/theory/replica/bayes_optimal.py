"""Bayes-optimal test error at finite α (Nishimori state evolution) — NOT IMPLEMENTED yet.

The spec (docs/theory.md §8) is written down; the solver is not. ``bayes_optimal_sweep`` raises
NotImplementedError rather than return a number that has not been validated.
"""

from __future__ import annotations


def bayes_optimal_sweep(model, nu, L, delta, alphas, **kw):
    """Bayes-optimal test error vs α (dim alpha). Not implemented.

    Raises:
        NotImplementedError: always (see docs/theory.md §8 for the planned equations).
    """
    raise NotImplementedError("bayes_optimal_sweep: the Bayes-optimal state evolution is not implemented yet")
