"""Per-point verdict (slrpipe.analysis.verdict): each rule, its order, and missing data."""

import math

import pytest

from slrpipe.analysis.verdict import (
    MISSING,
    UNMEASURED,
    VERDICTS,
    Compared,
    Measurement,
    Rsb1Evidence,
    Rule,
    agrees,
    verdict,
)

T, TSE = 1.0, 0.005  # theory value and its Monte Carlo error


def test_agrees_rule():
    assert agrees(1.03, 0.001, T, 0.0)  # |z| = 30 but |rel| = 3 % ≤ 5 %
    assert agrees(1.2, 0.05, T, 0.0)  # |rel| = 20 % but |z| = 4
    assert not agrees(1.21, 0.05, T, 0.0)  # |z| = 4.2 and |rel| = 21 %
    assert not agrees(1.03, 0.001, T, 0.0, rel_tol=0.0)
    assert not agrees(math.nan, 0.01, T) and not agrees(None, 0.01, T) and not agrees(1.0, None, T)


def _far(limit=None, limit_se=None) -> Measurement:
    """Informed ERM at the largest D that disagrees with the theory, with the given D → ∞ limit."""
    return Measurement(1.3, 0.01, limit, limit_se)


def _ground(value=None, se=None, limit=None, limit_se=None) -> Measurement:
    return Measurement(value, se, limit, limit_se)


def test_order_of_the_rules():
    assert verdict(T, TSE, Measurement(1.01, 0.01)) == "agrees"
    # the limit agrees: finite D explains the gap, whatever the stability
    assert verdict(T, TSE, _far(1.02, 0.01), rs_stable=False) == "agrees after D → ∞"
    # a limit 3 % away with a small error bar does not agree (no relative clause after D → ∞) ...
    v = verdict(T, TSE, _far(1.03, 0.002), _ground(1.0, 0.01))
    assert v == "ERM not at its ground state"  # ... but the ground state does
    assert verdict(T, TSE, _far(), _ground(1.3, 0.01, 0.99, 0.01)) == "ERM not at its ground state"
    # a limit whose error bar also covers the largest-D value (|1.3 − 1| < 4 × 0.1) shows no gap
    # closing: not "agrees after D → ∞"
    assert verdict(T, TSE, _far(1.05, 0.1), rs_stable=True) == "unexplained"
    assert verdict(T, TSE, _far(1.05, 0.07), rs_stable=True) == "agrees after D → ∞"
    # within 4 s.e. of the theory (z = 3.85) and precise, but nearer the largest-D value than the
    # theory: the data favour "no drift" over "the gap closes", so it does not count
    assert verdict(T, TSE, _far(1.27, 0.07), rs_stable=True) == "unexplained"
    assert verdict(T, TSE, _far(), _ground(1.3, 0.01, 1.27, 0.07), rs_stable=False) == "RS unstable"
    assert verdict(T, TSE, _far(1.2, 0.01), rs_stable=False) == "RS unstable"
    assert verdict(T, TSE, _far(1.2, 0.01), rs_stable=True) == "unexplained"
    assert verdict(T, TSE, _far(), rs_stable=math.nan) == "unexplained"  # stability not checked
    assert verdict(T, TSE, _far(), rs_stable=0.0) == "RS unstable"  # stored as 1/0 in the sweep
    assert VERDICTS == (
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


def _rsb1(test_error, se=0.01, bracketed=True, q1_k=(30.0, 0.5, 31.0, 0.8)) -> Rsb1Evidence:
    """A 1RSB state of test error ``test_error`` ± ``se`` and key norm q₁_k ± s.e. against ERM's
    ground state (value ± s.e.) — the overlaps stand for all four of the validation."""
    v, vse, erm, erm_se = q1_k
    return Rsb1Evidence(bracketed, test_error, se, (Compared("q1_k", v, vse, (Measurement(erm, erm_se),)),))


def test_a_solved_1rsb_point_replaces_the_rs_unstable_flag():
    """Where the 1RSB ground state was solved with s* bracketed, it decides what RS instability only
    flagged: ERM agreeing with it on the test error (ground state or informed start, largest D or
    D → ∞) and on every other quantity (here q₁_k), by the same rule with the 1RSB value's own s.e.
    in z, is "1RSB agrees", else "1RSB does not close the gap" whatever the stability; rules 1–3
    still come first, and NaN means not solved."""
    assert verdict(T, TSE, _far(), _ground(1.21, 0.01), rs_stable=False, rsb1=_rsb1(1.2)) == "1RSB agrees"
    assert verdict(T, TSE, _far(), rs_stable=False, rsb1=_rsb1(1.28)) == "1RSB agrees"  # the informed start
    assert verdict(T, TSE, _far(), _ground(1.3, 0.01, 1.19, 0.02), rsb1=_rsb1(1.2)) == "1RSB agrees"  # D → ∞
    no = "1RSB does not close the gap"
    assert verdict(T, TSE, _far(), _ground(1.3, 0.01), rs_stable=False, rsb1=_rsb1(1.1)) == no
    assert verdict(T, TSE, _far(), rs_stable=True, rsb1=_rsb1(1.1)) == no
    assert verdict(T, TSE, _far(), rs_stable=False, rsb1=_rsb1(math.nan)) == "RS unstable"
    assert verdict(T, TSE, Measurement(1.01, 0.01), rsb1=_rsb1(1.3)) == "agrees"
    # the test error agrees but the state does not (q₁_k 58 ± 0.5 against ERM's 33.8 ± 0.8: z ≈ 26)
    far_state = _rsb1(1.2, q1_k=(58.1, 0.5, 33.8, 0.8))
    assert verdict(T, TSE, _far(), _ground(1.21, 0.01), rs_stable=False, rsb1=far_state) == no
    # the theory's own s.e. enters z: 1.2 against the informed 1.3 ± 0.01 (8.3 %) is z = 9.8 with
    # an s.e. of 0.002 and z = 0.1/√(0.01² + 0.03²) = 3.2 with 0.03
    assert verdict(T, TSE, _far(), rs_stable=False, rsb1=_rsb1(1.2, se=0.002)) == no
    assert verdict(T, TSE, _far(), rs_stable=False, rsb1=_rsb1(1.2, se=0.03)) == "1RSB agrees"


def test_1rsb_without_a_bracketed_maximum_or_its_errors_is_not_judged():
    """No maximum of Φ bracketed (a lower bound of e_gs only), a 1RSB s.e. not measured (NaN: the
    theory's error is not set to 0) or no ERM value of a quantity: "1RSB not judged", no claim."""
    nj = "1RSB not judged"
    assert verdict(T, TSE, _far(), _ground(1.21, 0.01), rs_stable=False, rsb1=_rsb1(1.2, bracketed=False)) == nj
    assert verdict(T, TSE, _far(), _ground(1.21, 0.01), rsb1=_rsb1(1.2, se=math.nan)) == nj
    assert verdict(T, TSE, _far(), _ground(1.21, 0.01), rsb1=_rsb1(1.2, q1_k=(30.0, 0.5, math.nan, 0.8))) == nj


def test_runs_stopped_short_of_a_minimum_test_no_theory():
    """Rule 4: where fewer than half of the seeds' informed runs and of their ground states ended by
    the gradient test, a gap is "ERM not at a minimum", before 1RSB and RS stability are asked;
    rules 1–3 still come first, half or more converged (either fraction) claims nothing, and an
    unrecorded fraction (NaN/None) is left out."""
    stopped = (0.0, 0.2)
    assert verdict(T, TSE, _far(), rs_stable=False, rsb1=1.1, converged=stopped) == "ERM not at a minimum"
    assert verdict(T, TSE, _far(), rs_stable=False, rsb1=1.3, converged=stopped) == "ERM not at a minimum"
    assert verdict(T, TSE, _far(), rs_stable=True, converged=(0.4, math.nan)) == "ERM not at a minimum"
    assert verdict(T, TSE, Measurement(1.01, 0.01), converged=stopped) == "agrees"
    assert verdict(T, TSE, _far(), _ground(1.0, 0.01), converged=stopped) == "ERM not at its ground state"
    assert verdict(T, TSE, _far(), rs_stable=False, converged=(0.4, 0.6)) == "RS unstable"
    assert verdict(T, TSE, _far(), rs_stable=False, converged=(0.6, 0.0)) == "RS unstable"
    assert verdict(T, TSE, _far(), rs_stable=False, converged=(0.5, 0.5)) == "RS unstable"
    assert verdict(T, TSE, _far(), rs_stable=False, converged=(None, math.nan)) == "RS unstable"


def test_missing_theory_and_bad_rule():
    assert verdict(math.nan, TSE, Measurement(1.0, 0.01)) == MISSING
    assert verdict(T, math.nan, Measurement(1.01, 0.01)) == "agrees"  # a NaN MC error counts as 0
    # ... but a gap with the theory's MC error unknown (one draw) is not called unexplained
    assert verdict(T, math.nan, Measurement(1.3, 0.01), rs_stable=True) == UNMEASURED
    assert verdict(T, math.nan, Measurement(1.3, 0.01), rs_stable=False) == "RS unstable"
    assert verdict(T, TSE, Measurement(1.3, 0.01), rs_stable=True) == "unexplained"
    with pytest.raises(ValueError, match="max_abs_z"):
        verdict(T, TSE, Measurement(1.0, 0.01), rule=Rule(max_abs_z=0.0))
    # a rule with no relative clause: 3 % away at |z| = 30 disagrees
    assert verdict(T, 0.0, Measurement(1.03, 0.001), rule=Rule(rel_tol=0.0), rs_stable=True) == "unexplained"


def test_1rsb_that_moves_with_n0_is_monte_carlo_not_converged():
    """RS or the 1RSB state moving from N₀ to 2N₀ by more than half the 1RSB correction (as RS's
    objective 0.320 → 0.351 against a correction of 0.033): "Monte Carlo not converged", whatever
    the agreement; not checked (None): the other rules."""
    import dataclasses

    agreeing = _rsb1(1.2)
    drifting = dataclasses.replace(agreeing, mc_converged=False)
    assert verdict(T, TSE, _far(), _ground(1.21, 0.01), rsb1=drifting) == "Monte Carlo not converged"
    assert verdict(T, TSE, _far(), _ground(1.21, 0.01), rsb1=dataclasses.replace(agreeing, mc_converged=True)) == (
        "1RSB agrees"
    )
