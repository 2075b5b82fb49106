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

:func:`solve_rsb1` iterates it at one s; :func:`thermodynamics` gives Φ(s), the complexity Σ(s) and
the energy e(s) at a point; :func:`rsb1_ground_state` scans s, finds s* with Σ(s*) = 0 and returns
the ground-state energy e_gs = Φ(s*) (= the 1RSB training objective per D) and test error, next to

Modules: ``sampling`` (the outer and inner samples, :class:`Rsb1Draw`), ``channel`` (the output
channel, ridge prior and thermodynamics at one state), ``solve`` (the saddle point at one s),
``scan`` (the s scan and the ground state read off it).
"""

from slrpipe.theory.replica.rsb1.channel import (
    CONJ1,
    STATE1,
    _residual,  # noqa: F401 (private, for the tests)
    rsb1_channel,
    rsb1_prior,
    thermodynamics,
)
from slrpipe.theory.replica.rsb1.sampling import Inner, Rsb1Draw, draw_inner
from slrpipe.theory.replica.rsb1.scan import (
    _SUMMARY,  # noqa: F401 (private, for the tests)
    RISE_REL_TOL,
    _scan,  # noqa: F401 (private, for the tests)
    _star,  # noqa: F401 (private, for the tests)
    physical,
    physical_closed,
    rsb1_ground_state,
)
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
    "RISE_REL_TOL",
    "Rsb1Draw",
    "Rsb1Options",
    "draw_inner",
    "inner_size_check",
    "physical",
    "physical_closed",
    "rs_on_samples",
    "rs_state",
    "rsb1_channel",
    "rsb1_ground_state",
    "rsb1_prior",
    "solve_rsb1",
    "thermodynamics",
]
