"""Finite-α replica theory of ridge ERM on SLR (RS, zero temperature); see docs/theory.md.

Modules: ``options`` (the task ``ReplicaTask`` and the solver options), ``fields`` (common random
numbers, drawn as a ``Draw`` says), ``prox`` (per-sample global proximal point and its
implicit Jacobian, JAX), ``channel`` (output-channel expectations → conjugates), ``prior`` (ridge
channel, closed form), ``solver`` (Anderson-accelerated fixed point, damped fallback),
``continuation`` (the passes along α at one λ: cold starts, halved steps), ``sweep`` ((λ, α)
grids), ``bayes_optimal`` (Nishimori state evolution: the Bayes-optimal error at finite α), ``rsb1``
(zero-temperature one-step RSB: Φ(s), complexity, ground state; docs/theory.md §13).
"""

from slrpipe.theory.replica.bayes_optimal import bayes_optimal_sweep
from slrpipe.theory.replica.fields import Draw
from slrpipe.theory.replica.options import ReplicaTask
from slrpipe.theory.replica.solver import solve_replica
from slrpipe.theory.replica.sweep import replica_sweep

__all__ = ["ReplicaTask", "Draw", "solve_replica", "replica_sweep", "bayes_optimal_sweep"]
