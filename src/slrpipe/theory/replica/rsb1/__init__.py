"""Zero-temperature one-step replica-symmetry breaking (1RSB) of ridge ERM on SLR (docs/theory.md §13).

Per column a ∈ {k, v} (the manifold of docs/theory.md §6) the state is x = (m_a, q₀_a, δq_a, V_a):
overlap with the teacher, overlap between two minima ("states"), δq = q₁ − q₀ (q₁ the self-overlap
of one minimum) and the within-state response V; the Parisi parameter s (> 0, units 1/objective per
D; the y of Mézard–Parisi) weights states by e^{−sD·e}. One fixed-point map:

* output channel (:func:`rsb1_channel`): nested Monte Carlo. Outer = the RS ``Fields`` (teacher,
  label, outer student noise ξ⁰, antithetic); inner = ``Inner`` (N₁ vectors ξ¹ per outer sample,
  independent across outer samples, or one set shared by all; antithetic).
  ω = m h* + √(q₀ − m²) ξ⁰ + √δq ξ¹; the hard global prox of
  :func:`slrpipe.theory.replica.prox.prox` at V gives 𝓜 and f = (h − ω)/V per (outer, inner) pair;
  per outer sample the tilt π ∝ e^{−s𝓜} gives ⟨f⟩, Var_π f, log Z, KL, ⟨loss⟩ (optionally each
  jackknifed over the two halves of the inner set) and the conjugates
  q̂₀ = αEΣ⟨f⟩², δq̂ = αEΣVar_π f, V̂ = −αEΣ⟨f⟩ξ⁰/√(q₀ − m²) + sδq̂ and the Rao–Blackwellised m̂;
* ridge prior (:func:`rsb1_prior`): V = 1/(λ + V̂), A = λ + V̂ − sδq̂, m = m̂/A,
  q₀ = (m̂² + q̂₀)/A², δq = V²δq̂/(1 − sVδq̂).

:func:`solve_rsb1` iterates it at one s; :func:`thermodynamics` gives Φ(s), its s.e., the complexity
Σ(s) and the energy e(s) at a point; :func:`rsb1_ground_state` scans s by the zero-temperature rule
(:mod:`~slrpipe.theory.replica.rsb1.scan`: e_gs = max_s Φ(s) = Φ(s*), Σ(s*) = 0, or a lower bound
where no maximum is bracketed), next to the RS solution on the same samples. Everything is float64
numpy around the JAX prox.

Modules: ``sampling`` (the outer and inner samples, :class:`Rsb1Draw`), ``channel`` (the output
channel, ridge prior and thermodynamics at one state), ``solve`` (the saddle point at one s),
``scan`` (the zero-temperature rule: the s scan, s* = argmax Φ or a lower bound), ``ground``
(RS and the scan at one point).
"""

from slrpipe.theory.replica.rsb1.channel import (
    CONJ1,
    STATE1,
    rsb1_channel,
    rsb1_prior,
    state_residual,  # noqa: F401 (for the tests)
    thermodynamics,
)
from slrpipe.theory.replica.rsb1.ground import GroundState, rsb1_ground_state
from slrpipe.theory.replica.rsb1.sampling import Inner, Rsb1Draw, draw_inner
from slrpipe.theory.replica.rsb1.scan import FALL_Z, ScanOptions, ScanResult, scan_potential
from slrpipe.theory.replica.rsb1.solve import (
    Rsb1Options,
    inner_size_check,
    rs_on_samples,
    rs_state,
    solve_rsb1,
)

__all__ = [
    "CONJ1",
    "STATE1",
    "Inner",
    "FALL_Z",
    "GroundState",
    "Rsb1Draw",
    "Rsb1Options",
    "draw_inner",
    "inner_size_check",
    "rs_on_samples",
    "rs_state",
    "ScanOptions",
    "ScanResult",
    "scan_potential",
    "rsb1_channel",
    "rsb1_ground_state",
    "rsb1_prior",
    "solve_rsb1",
    "thermodynamics",
]
