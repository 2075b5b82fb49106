"""Per-point verdict of the theory-vs-ERM comparison (docs/results.md §2; the measured runs:
docs/validation.md §2; RS stability: docs/theory.md §11).

Each (setting, σ, λ, α) point gets one of ``VERDICTS``, decided in this order:
  1. ``agrees``: ERM (informed start, at the largest D measured) agrees with the theory: NOT
     (|z| > max_abs_z and |ERM − theory| > rel_tol · |theory|) — the rule of ``validation.py``,
     whose relative clause allows the finite-D bias the seed spread does not measure;
  2. ``agrees after D → ∞``: not 1, but the D → ∞ extrapolation of ERM (``extrapolate.py``)
     agrees within |z| ≤ max_abs_z (no relative clause: the extrapolation removes the finite-D
     bias, its error bar includes the fit's), that error bar is narrow enough to have told the
     largest-D value from the theory (|ERM − theory| > max_abs_z · s.e.): a wide fit that covers
     both shows nothing, and the limit lies closer to the theory than to the largest-D value: for
     a Gaussian limit estimate the data then favour "the gap closes as D → ∞" over "no drift"
     (without this clause a limit 3.9 s.e. from the theory and 0.6 s.e. from the largest-D value
     would count, as at max-SLR softmax λ = 0.01, α = 0.5, docs/validation.md §2);
  3. ``ERM not at its ground state``: not 1–2, but the ERM ground state (lowest training objective
     over informed and random starts) agrees, at the largest D or extrapolated (same rules, the
     precision clause of 2 against the ground state at the largest D);
  4. ``ERM not at a minimum``: not 1–3, and the ERM runs at the largest D did not reach minima:
     fewer than half of the seeds' informed runs, and (where measured) fewer than half of their
     ground-state runs, ended by the gradient test (|∇J|₂ < tol; the others stopped at
     ``max_iter`` or on a stalled line search). RS and 1RSB describe minima of the training objective, so
     neither is tested there (e.g. linear σ at its interpolation peak, λ = 0.01, α = 2, in float32
     at 1000 iterations; docs/theory.md §13);
  5. ``1RSB agrees``: not 1–4, one-step RSB was solved at the point with a maximum of Φ(s)
     bracketed (s* found; slrpipe.theory.replica.rsb1.scan, docs/theory.md §13), and ERM agrees
     with the 1RSB state on every quantity of :class:`Rsb1Evidence` — the test error (ground state
     or informed start), the objective and the overlaps q₁_k, q₁_v, m_k, m_v (ERM's ground state),
     each at the largest D or extrapolated, by the rules of 1–2 with the 1RSB value's own Monte
     Carlo s.e. (batch means) in z;
  6. ``1RSB not judged``: not 1–4, 1RSB solved but no maximum of Φ bracketed (its objective only a
     lower bound of e_gs), or every quantity of 5 that is measured on both sides (its 1RSB s.e. and
     an ERM value) agrees but some are not: no claim either way;
  6b. ``Monte Carlo not converged``: not 1–4, 1RSB solved and checked at 2N₀ outer samples
     (``n0_check``), and RS or the 1RSB state moved from N₀ to 2N₀ by more than half the 1RSB
     correction (1RSB − RS) of the objective or the test error: no 1RSB verdict on that evidence;
  7. ``RS unstable``: not 1–4, 1RSB not solved there, and the RS fixed point is unstable
     (``rs_stable`` False, docs/theory.md §11): the replica-symmetric prediction is not expected
     to be exact there;
  8. ``1RSB does not close the gap``: s* bracketed and a quantity of 5 measured on both sides
     disagrees: RS instability alone no longer explains the gap (the validation table's 1RSB
     section gives the numbers);
  9. ``unexplained``: none of the above — a bug until shown otherwise.
``theory missing`` (not one of ``VERDICTS``) is returned where the theory has no converged
value: nothing is compared there; ``theory MC error not measured`` where the point would be
``unexplained`` but the theory's Monte Carlo error is unknown (one draw, ``mc_seeds`` = 1): a gap
there may be that error (near a fold, or where the fixed point depends on the draw: docs/validation.md
§1 (ii), §3), so it is not called a bug before the error is measured. Missing ERM data (None/NaN)
simply cannot make a rule hold, so a point with RS stable and only the informed ERM disagreeing is
``unexplained`` until the D ladder and the ground state are measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

VERDICTS = (
    "agrees",
    "agrees after D → ∞",
    "ERM not at its ground state",
    "ERM not at a minimum",
    "1RSB agrees",
    "1RSB not judged",
    "Monte Carlo not converged",
    "RS unstable",
    "1RSB does not close the gap",
    "unexplained",
)
MISSING = "theory missing"
UNMEASURED = "theory MC error not measured"
#: defaults of the agreement rule (those of config/validation.yaml's enforcement)
MAX_ABS_Z, REL_TOL = 4.0, 0.05


def _finite(*xs) -> bool:
    return all(x is not None and math.isfinite(x) for x in xs)


def _z(value, se, theory, theory_se) -> float:
    s = math.hypot(se, theory_se)
    return (value - theory) / s if s > 0 else (0.0 if value == theory else math.inf)


def agrees(value, se, theory, theory_se=0.0, *, max_abs_z=MAX_ABS_Z, rel_tol=REL_TOL) -> bool:
    """Agreement of a finite-D value with the theory (rule 1 of the module docstring); False if any
    input is missing (None/NaN). ``rel_tol`` = 0 leaves the z clause alone (rule 2)."""
    if not _finite(value, se, theory, theory_se):
        return False
    return abs(_z(value, se, theory, theory_se)) <= max_abs_z or abs(value - theory) <= rel_tol * abs(theory)


def _resolves(finite_d, limit, limit_se, theory, theory_se, max_abs_z) -> bool:
    """Whether a D → ∞ limit shows the gap closing: its error bar would have told the largest-D
    value from the theory (|value − theory| > max_abs_z · s.e.; a limit whose error bar also covers
    the finite-D value is only a wide fit), and it lies closer to the theory than to that value."""
    if not _finite(finite_d, limit, limit_se):
        return False
    precise = abs(finite_d - theory) > max_abs_z * math.hypot(limit_se, theory_se)
    return precise and abs(limit - theory) < abs(limit - finite_d)


@dataclass(frozen=True)
class Measurement:
    """One ERM quantity at a point (test error, mean over seeds): ``value`` ± ``se`` at the largest
    D measured and its D → ∞ extrapolation ``limit`` ± ``limit_se`` (``Extrapolation.limit`` /
    ``limit_se``, extrapolate.py). None/NaN: not measured (it then cannot make a rule hold)."""

    value: float | None = None
    se: float | None = None
    limit: float | None = None
    limit_se: float | None = None


@dataclass(frozen=True)
class Rule:
    """The agreement rule (module docstring, rule 1): |z| ≤ ``max_abs_z`` or |ERM − theory| ≤
    ``rel_tol`` · |theory|. Checked by :func:`verdict` (max_abs_z > 0, rel_tol ≥ 0)."""

    max_abs_z: float = MAX_ABS_Z
    rel_tol: float = REL_TOL


class Compared(NamedTuple):
    """One quantity of the 1RSB state against ERM (rule 5): its ``name``, the 1RSB ``value`` ± its
    Monte Carlo s.e. ``se`` and the ERM measurements it may agree with (any one suffices)."""

    name: str
    value: float
    se: float
    erm: tuple


@dataclass(frozen=True)
class Rsb1Evidence:
    """The 1RSB state of a point for rules 5–6: whether a maximum of Φ was bracketed (s* found),
    its test error ± Monte Carlo s.e. (compared with the ground state and the informed start given
    to :func:`verdict`) and the other quantities that must agree (:class:`Compared`: the
    objective and the overlaps q₁_k, q₁_v, m_k, m_v); ``mc_converged``: whether RS and the state
    moved by at most half the 1RSB correction from N₀ to 2N₀ outer samples (None: not checked)."""

    bracketed: bool
    test_error: float
    test_error_se: float
    others: tuple = ()
    mc_converged: bool | None = None


#: defaults of :func:`verdict`: nothing measured (the ground state of a point with one start) and
#: the rule of config/validation.yaml's enforcement
NOT_MEASURED, DEFAULT_RULE = Measurement(), Rule()


def verdict(
    theory,
    theory_se,
    erm: Measurement,
    ground: Measurement = NOT_MEASURED,
    *,
    rs_stable=None,
    rsb1=None,
    converged=(None, None),
    rule: Rule = DEFAULT_RULE,
) -> str:
    """The verdict of one point (module docstring).

    Args:
        theory, theory_se: replica test error and its Monte Carlo error (NaN se → 0).
        erm: ERM from the informed start (largest D, and its D → ∞ limit where there is a ladder).
        ground: the same for the ERM ground state (default: not measured).
        rs_stable: True/False (or 1/0) from the replica output (NaN/None: not checked).
        rsb1: :class:`Rsb1Evidence` of the 1RSB state reported (None, or a NaN test error: not solved).
        converged: (informed, ground): the fractions of the seeds whose informed run and whose
            ground-state run at the largest D ended by the gradient test (NaN/None: not recorded).
        rule: the agreement rule.
    Returns: one of ``VERDICTS``, or ``MISSING`` / ``UNMEASURED``.
    Raises: ValueError: rule.max_abs_z ≤ 0 or rule.rel_tol < 0.
    """
    max_abs_z, rel_tol = rule.max_abs_z, rule.rel_tol
    if not max_abs_z > 0 or not rel_tol >= 0:
        raise ValueError(f"max_abs_z, rel_tol: need > 0 and ≥ 0, got {max_abs_z}, {rel_tol}")
    if not _finite(theory):
        return MISSING
    tse = theory_se if _finite(theory_se) else 0.0
    if agrees(erm.value, erm.se, theory, tse, max_abs_z=max_abs_z, rel_tol=rel_tol):
        return VERDICTS[0]
    if _limit_agrees(erm, theory, tse, max_abs_z):
        return VERDICTS[1]
    if agrees(ground.value, ground.se, theory, tse, max_abs_z=max_abs_z, rel_tol=rel_tol) or _limit_agrees(
        ground, theory, tse, max_abs_z
    ):
        return VERDICTS[2]
    if not_at_minimum(*converged):
        return VERDICTS[3]
    if rsb1 is not None and _finite(rsb1.test_error):
        return _rsb1_verdict(rsb1, erm, ground, rule)
    stable = None if rs_stable is None or (isinstance(rs_stable, float) and math.isnan(rs_stable)) else bool(rs_stable)
    if stable is False:
        return VERDICTS[7]
    return VERDICTS[9] if _finite(theory_se) else UNMEASURED


def _rsb1_verdict(ev: Rsb1Evidence, erm: Measurement, ground: Measurement, rule: Rule) -> str:
    """Rules 5, 6, 6b and 8 at a point where 1RSB was solved."""
    if ev.mc_converged is False:
        return VERDICTS[6]
    if not ev.bracketed:
        return VERDICTS[5]
    quantities = (Compared("test_error", ev.test_error, ev.test_error_se, (ground, erm)), *ev.others)
    both = lambda q: _finite(q.value, q.se) and any(_finite(m.value) or _finite(m.limit) for m in q.erm)
    measured = [q for q in quantities if both(q)]
    z, rel = rule.max_abs_z, rule.rel_tol
    close = lambda q, m: (
        agrees(m.value, m.se, q.value, q.se, max_abs_z=z, rel_tol=rel) or _limit_agrees(m, q.value, q.se, z)
    )
    if not all(any(close(q, m) for m in q.erm) for q in measured):
        return VERDICTS[8]
    return VERDICTS[4] if len(measured) == len(quantities) else VERDICTS[5]


def not_at_minimum(informed, ground=None) -> bool:
    """Rule 4's test: fewer than half of the seeds' informed runs ended by the gradient test, and
    fewer than half of their ground states where that fraction is recorded (floats in [0, 1];
    NaN/None: not recorded). False where neither is recorded: nothing is claimed."""
    fracs = [f for f in (informed, ground) if _finite(f)]
    return bool(fracs) and all(f < 0.5 for f in fracs)


def _limit_agrees(m: Measurement, theory, tse, max_abs_z) -> bool:
    """Rule 2 for ``m``: its D → ∞ limit agrees (z clause only) and shows the gap closing."""
    return agrees(m.limit, m.limit_se, theory, tse, max_abs_z=max_abs_z, rel_tol=0.0) and _resolves(
        m.value, m.limit, m.limit_se, theory, tse, max_abs_z
    )
