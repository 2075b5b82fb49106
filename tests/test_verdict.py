"""Per-point verdict (slrpipe.store.verdict): each rule, its order, and missing data."""

import math

import pytest

from slrpipe.store.verdict import MISSING, UNMEASURED, VERDICTS, agrees, verdict

T, TSE = 1.0, 0.005  # theory value and its Monte Carlo error


def test_agrees_rule():
    assert agrees(1.03, 0.001, T, 0.0)  # |z| = 30 but |rel| = 3 % ≤ 5 %
    assert agrees(1.2, 0.05, T, 0.0)  # |rel| = 20 % but |z| = 4
    assert not agrees(1.21, 0.05, T, 0.0)  # |z| = 4.2 and |rel| = 21 %
    assert not agrees(1.03, 0.001, T, 0.0, rel_tol=0.0)
    assert not agrees(math.nan, 0.01, T) and not agrees(None, 0.01, T) and not agrees(1.0, None, T)


def test_order_of_the_rules():
    far = dict(erm=1.3, erm_se=0.01)  # informed ERM at the largest D: disagrees
    assert verdict(T, TSE, 1.01, 0.01) == "agrees"
    # the limit agrees: finite D explains the gap, whatever the stability
    assert verdict(T, TSE, **far, erm_limit=1.02, erm_limit_se=0.01, rs_stable=False) == "agrees after D → ∞"
    # a limit 3 % away with a small error bar does not agree (no relative clause after D → ∞) ...
    v = verdict(T, TSE, **far, erm_limit=1.03, erm_limit_se=0.002, ground=1.0, ground_se=0.01)
    assert v == "ERM not at its ground state"  # ... but the ground state does
    assert (
        verdict(T, TSE, **far, ground=1.3, ground_se=0.01, ground_limit=0.99, ground_limit_se=0.01)
        == "ERM not at its ground state"
    )
    # a limit whose error bar also covers the largest-D value (|1.3 − 1| < 4 × 0.1) shows no gap
    # closing: not "agrees after D → ∞"
    assert verdict(T, TSE, **far, erm_limit=1.05, erm_limit_se=0.1, rs_stable=True) == "unexplained"
    assert verdict(T, TSE, **far, erm_limit=1.05, erm_limit_se=0.07, rs_stable=True) == "agrees after D → ∞"
    # within 4 s.e. of the theory (z = 3.85) and precise, but nearer the largest-D value than the
    # theory: the data favour "no drift" over "the gap closes", so it does not count
    assert verdict(T, TSE, **far, erm_limit=1.27, erm_limit_se=0.07, rs_stable=True) == "unexplained"
    assert (
        verdict(T, TSE, **far, ground=1.3, ground_se=0.01, ground_limit=1.27, ground_limit_se=0.07, rs_stable=False)
        == "RS unstable"
    )
    assert verdict(T, TSE, **far, erm_limit=1.2, erm_limit_se=0.01, rs_stable=False) == "RS unstable"
    assert verdict(T, TSE, **far, erm_limit=1.2, erm_limit_se=0.01, rs_stable=True) == "unexplained"
    assert verdict(T, TSE, **far, rs_stable=math.nan) == "unexplained"  # stability not checked
    assert verdict(T, TSE, **far, rs_stable=0.0) == "RS unstable"  # stored as 1/0 in the sweep
    assert set(VERDICTS) == {
        "agrees",
        "agrees after D → ∞",
        "ERM not at its ground state",
        "RS unstable",
        "unexplained",
    }


def test_missing_theory_and_bad_rule():
    assert verdict(math.nan, TSE, 1.0, 0.01) == MISSING
    assert verdict(T, math.nan, 1.01, 0.01) == "agrees"  # a NaN MC error counts as 0
    # ... but a gap with the theory's MC error unknown (one draw) is not called unexplained
    assert verdict(T, math.nan, 1.3, 0.01, rs_stable=True) == UNMEASURED
    assert verdict(T, math.nan, 1.3, 0.01, rs_stable=False) == "RS unstable"
    assert verdict(T, TSE, 1.3, 0.01, rs_stable=True) == "unexplained"
    with pytest.raises(ValueError, match="max_abs_z"):
        verdict(T, TSE, 1.0, 0.01, max_abs_z=0.0)
