"""The zero-temperature 1RSB rule (slrpipe.theory.replica.rsb1.scan) on the random energy model,
whose 1RSB potential is known in closed form (Derrida 1981; Mézard–Montanari, *Information,
Physics, and Computation*, ch. 5 and 19): 2^N levels of energy N·e with e ~ N(0, 1/(2N)) have the
complexity Σ(e) = ln 2 − e² per N, so

    Φ(s) = min_e [e − Σ(e)/s] = −s/4 − ln 2/s,  Σ(s) = s² Φ′(s) = ln 2 − s²/4,  e(s) = −s/2,

maximal at s* = 2√ln 2 with e_gs = Φ(s*) = −√ln 2 (the REM ground state), de/ds = −1/2 < 0.
"""

import math

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from slrpipe.theory.replica.rsb1.estimators import legendre, paired_se
from slrpipe.theory.replica.rsb1.scan import (
    FALL_Z,
    ScanOptions,
    bracket,
    diff_se,
    discontinuous,
    on_curve,
    scan_potential,
)

LN2 = math.log(2.0)
S_STAR, E_GS = 2 * math.sqrt(LN2), -math.sqrt(LN2)


def rem(phi_se=1e-3, sigma_se=1e-2, rng=None, calls=None):
    """``solve(s, near)`` of the REM: exact values, plus Gaussian noise of sd ``phi_se`` on Φ (and
    ``sigma_se`` on Σ) where ``rng`` is given; the s.e. reported are those sds."""

    def solve(s, near):
        if calls is not None:
            calls.append(s)
        phi, sig = -s / 4 - LN2 / s, LN2 - s * s / 4
        if rng is not None:
            phi, sig = phi + phi_se * rng.standard_normal(), sig + sigma_se * rng.standard_normal()
        row = {"s": s, "phi": phi, "phi_se": phi_se, "sigma": sig, "sigma_se": sigma_se}
        return row | {"energy_direct": -s / 2, "energy_direct_se": 0.01, "converged": True}

    return solve


def phi_bound(lo, hi):
    """e_gs − Φ(s) ≤ ½ max|Φ″| (hi − lo)² for any s in [lo, hi] ∋ s* (Φ″ = −2 ln 2/s³)."""
    return 0.5 * 2 * LN2 / lo**3 * (hi - lo) ** 2


def test_rem_maximum_on_the_grid_is_bracketed_and_refined():
    calls = []
    res = scan_potential(rem(calls=calls), [0.5, 1.0, 2.0, 4.0, 8.0])
    assert calls[:4] == [0.5, 1.0, 2.0, 4.0]  # stops once Φ(4) has fallen: 8 is never solved
    assert res.bracketed and res.star["converged"] and not res.lower_bound
    lo, hi = res.rows[res.bracket.lo], res.rows[res.bracket.hi]
    assert lo["s"] < S_STAR < hi["s"] and res.rows[res.top]["phi"] - max(lo["phi"], hi["phi"]) >= FALL_Z * 1.4e-3
    assert res.refine == "sigma root"  # Σ(1) = 0.44, Σ(2) = −0.31, both resolved (s.e. 0.01)
    assert res.s_star == pytest.approx(S_STAR, abs=0.02)  # the exact 2√ln 2, inside the bracket (1, 2)
    # the refinement stops where its checks hold: Σ(s*) ≈ 0 (both estimators), de/ds < 0
    assert res.check.ok and res.check.de_ds == pytest.approx(-0.5)
    assert abs(res.check.sigma) <= FALL_Z * 1e-2
    phi = res.reported["phi"]
    assert phi <= E_GS and E_GS - phi <= phi_bound(1.0, 2.0)  # exact: Φ(s) ≤ max Φ = e_gs
    assert E_GS - phi < 1e-4  # and here close: s* within 0.02, Φ″ ≈ −0.3
    assert not any(r.get("solved", True) is False and r["s"] != 8.0 for r in res.rows)
    # the complexity curve: every row has de/ds = −1/2; Σ ≥ 0 for s ≤ s* only
    curve = on_curve(res.rows)
    assert curve.tolist() == [r.get("converged", False) and r["s"] <= S_STAR for r in res.rows]


def test_rem_scan_is_extended_up_until_the_maximum_is_bracketed():
    calls = []
    res = scan_potential(rem(calls=calls), [0.25, 0.5], ScanOptions(extend=2.0, max_rows=8))
    assert calls[:5] == [0.25, 0.5, 1.0, 2.0, 4.0] and res.bracketed
    assert abs(res.s_star - S_STAR) < 0.02 and 0 <= E_GS - res.reported["phi"] < 1e-4


def test_rem_scan_is_extended_down_when_the_maximum_is_its_first_row():
    calls = []
    res = scan_potential(rem(calls=calls), [8.0, 16.0], ScanOptions(extend=2.0, max_rows=8))
    assert calls[:5] == [8.0, 16.0, 4.0, 2.0, 1.0] and res.bracketed
    assert abs(res.s_star - S_STAR) < 0.02 and 0 <= E_GS - res.reported["phi"] < 1e-4


def test_rem_without_a_bracket_reports_a_lower_bound():
    # Φ still rises on the grid and no row may be added: the largest Φ is a lower bound, no s*
    res = scan_potential(rem(), [0.2, 0.4, 0.8], ScanOptions(max_rows=3))
    assert not res.bracketed and res.lower_bound and res.star is None and math.isnan(res.s_star)
    assert res.reported["s"] == 0.8 and res.reported["phi"] < E_GS
    # the same beyond the maximum (Φ falling on the grid, nothing below it allowed)
    res = scan_potential(rem(), [4.0, 8.0], ScanOptions(max_rows=2))
    assert res.lower_bound and res.reported["s"] == 4.0 and res.reported["phi"] < E_GS


def test_a_fall_just_below_two_standard_errors_does_not_bracket():
    """Φ at s = 4 below the top by 1.9 (then 2.1) combined s.e.: not fallen, so the scan extends to
    s = 8 (then fallen: the grid is enough)."""
    se = 0.1
    for z, extended in ((1.9, True), (2.1, False)):
        table = {1.0: 0.0, 2.0: 1.0, 4.0: 1.0 - z * math.hypot(se, se), 8.0: -10.0}
        calls = []

        def solve(s, near, table=table, calls=calls):
            calls.append(s)
            return {"s": s, "phi": table.get(s, -20.0), "phi_se": se, "sigma": 0.0, "sigma_se": 1.0}

        res = scan_potential(
            lambda s, near, f=solve: f(s, near) | {"energy_direct": 0.0, "converged": True},
            [1.0, 2.0, 4.0],
            ScanOptions(max_rows=4, refine_max=1, continuity=False),  # a table, not one potential
        )
        assert (8.0 in calls) is extended and res.bracketed


def test_false_bracket_rate_on_a_flat_potential_is_that_of_the_two_se_rule():
    """A flat Φ (no maximum) on three rows with iid Gaussian noise of the s.e. reported: a bracket
    is claimed when the middle row lies ≥ 2 combined s.e. (√2 σ) above each other one, with
    probability P(Z₁ ≥ 2, Z₂ ≥ 2), (Z₁, Z₂) the two normalised differences (bivariate normal,
    correlation ½). The observed rate over 20000 scans lies within 4 binomial s.e. of it."""
    p_one = multivariate_normal(mean=[0, 0], cov=[[1, 0.5], [0.5, 1]]).cdf([-FALL_Z, -FALL_Z])
    rng, n, se = np.random.default_rng(7), 20000, 0.01
    phi = se * rng.standard_normal((n, 3))
    hits = 0
    for p in phi:
        rows = [{"s": s, "phi": v, "phi_se": se, "converged": True} for s, v in zip((1.0, 2.0, 3.0), p)]
        hits += bracket(rows).found
    sd = math.sqrt(p_one * (1 - p_one) / n)
    assert abs(hits / n - p_one) < 4 * sd, (hits / n, p_one, sd)
    assert p_one < 0.01  # the rule: a false maximum on three flat rows well under 1 %


def test_rem_with_noise_of_known_se_finds_the_ground_state_within_its_errors():
    """Noise of sd σ_Φ = 2·10⁻³ on Φ and σ_Σ = 10⁻² on Σ (the s.e. reported), 50 draws: the maximum
    is bracketed on the grid every time (the true falls around it, ≥ 0.1, are ≫ 2 s.e.); the Φ
    reported is the REM's at the s reported within 4 σ_Φ (its own noise); and where the closed-form
    check Σ(s*) ≈ 0 holds (|Σ̂| ≤ 2 σ_Σ), s* lies within (2 + 4) σ_Σ / |Σ′(s*)| of the true one
    (Σ′ = −s/2; 4 σ_Σ for Σ̂'s own noise), so Φ(s*) is within ½|Φ″| (s − s*)² of e_gs."""
    sig_se = 1e-2
    for seed in range(50):
        res = scan_potential(rem(2e-3, sig_se, np.random.default_rng(seed)), [0.5, 1.0, 2.0, 4.0, 8.0])
        assert res.bracketed and 1.0 < res.s_star < 4.0
        s = res.reported["s"]
        assert abs(res.reported["phi"] - (-s / 4 - LN2 / s)) <= 4 * 2e-3
        if res.check.sigma_ok:
            assert abs(s - S_STAR) <= (FALL_Z + 4) * sig_se / (S_STAR / 2), (seed, s)


def test_scan_options_are_checked():
    with pytest.raises(ValueError, match="extend"):
        ScanOptions(extend=1.0)
    with pytest.raises(ValueError, match="max_rows"):
        ScanOptions(max_rows=0)
    with pytest.raises(ValueError, match="bisect"):
        ScanOptions(bisect=-1)
    with pytest.raises(ValueError, match="s_grid"):
        scan_potential(rem(), [])


def test_rows_on_common_samples_bracket_by_the_se_of_their_difference():
    """The rows of one scan share their outer samples: Φ(s) per outer sample = the REM's Φ(s) + a
    noise common to every s (sd 1) + a part of its own (sd 0.01), N₀ = 2000. Each Φ has an s.e. of
    ≈ 0.022, far above the falls around the maximum (Φ(1.7) − Φ(1.5) = 0.004, Φ(1.7) − Φ(1.9) =
    0.007); their differences, paired over the samples, have an s.e. of ≈ 0.01·√2/√2000 = 3·10⁻⁴:
    with the samples the maximum is bracketed, without them (the two s.e. combined as if
    independent) it is not and the scan reports a lower bound."""
    rng = np.random.default_rng(3)
    n = 2000
    common = rng.standard_normal(n)

    def solve(s, near, samples=True):
        x = -s / 4 - LN2 / s + common + 0.01 * rng.standard_normal(n)
        row = {"s": s, "phi": float(x.mean()), "phi_se": paired_se(x), "sigma": LN2 - s * s / 4, "sigma_se": 0.01}
        return row | {"energy_direct": -s / 2, "converged": True} | ({"phi_samples": x} if samples else {})

    grid, o = [1.5, 1.7, 1.9], ScanOptions(max_rows=3, refine_max=1)
    res = scan_potential(solve, grid, o)
    assert res.bracketed and 1.5 < res.s_star < 1.9
    a, b = res.rows[0], res.rows[1]
    assert a["phi_se"] > 0.02 and diff_se(a, b) == pytest.approx(0.01 * math.sqrt(2 / n), rel=0.1)
    plain = scan_potential(lambda s, near: solve(s, near, samples=False), grid, o)
    assert not plain.bracketed and plain.lower_bound


def two_branches(c=LN2, end=math.inf, leap=1.5, calls=None, conv_up_to=math.inf, leap_above=1.5):
    """``solve(s, near)`` with two saddles at each s: branch A, a REM of complexity c − e² per N
    (Φ_A = −s/4 − c/s, s* = 2√c, e_gs = −√c), which exists for s ≤ ``end`` only, and branch B above
    it, Φ_B = Φ_A + ½ + s/5 (Σ_B = Σ_A + s²/5, e_B = e_A + ½ + 2s/5: a potential of its own, Legendre
    relations exact). The continuation to an s above ``leap_above`` lands on B from a start more
    than ``leap`` times away in s; from a start on B or beyond ``end`` it lands on B; else on A. Exact values; s.e. 10⁻⁴ on Φ, 10⁻² on Σ and
    e. Rows beyond ``conv_up_to`` do not converge."""

    def solve(s, near):
        if calls is not None:
            calls.append(s)
        far = near is not None and s > leap_above and max(s / near["s"], near["s"] / s) > leap
        on_b = s > end or far or (near is not None and near["branch"] == "B")
        phi, sig, e = -s / 4 - c / s, c - s * s / 4, -s / 2
        if on_b:
            phi, sig, e = phi + 0.5 + s / 5, sig + s * s / 5, e + 0.5 + 2 * s / 5
        row = {"s": s, "phi": phi, "phi_se": 1e-4, "sigma": sig, "sigma_se": 1e-2, "energy_direct": e}
        return row | {"energy_direct_se": 1e-2, "converged": s <= conv_up_to, "branch": "B" if on_b else "A"}

    return solve


def test_a_continuation_that_jumps_to_another_saddle_is_bisected_back_onto_the_branch():
    """From s = 1 to 2 the continuation lands on B (Φ higher by ≈ 0.9: Φ is discontinuous there);
    the midpoint √2 solved from 1 and then 2 from √2 stay on A, and at s = 2 the saddle of smaller
    Φ (A) is kept, B dropped: the maximum is bracketed on A at the exact s*."""
    calls = []
    res = scan_potential(two_branches(calls=calls), [0.5, 1.0, 2.0, 4.0], ScanOptions(bisect=1))
    assert calls[:5] == [0.5, 1.0, 2.0, math.sqrt(2.0), 2.0]
    assert [d["branch"] for d in res.dropped] == ["B"] and res.dropped[0]["s"] == 2.0
    assert all(r["branch"] == "A" and not r.get("off_branch") for r in res.rows if r.get("solved", True))
    assert res.bracketed and res.stop == "bracketed" and res.s_star == pytest.approx(S_STAR, abs=0.02)
    assert 0 <= E_GS - res.reported["phi"] < 1e-3
    # without bisection the solve at 2 stays on B: set off the branch, the grid left there (4
    # unsolved), and the largest Φ on A is a lower bound
    plain = scan_potential(two_branches(), [0.5, 1.0, 2.0, 4.0], ScanOptions(bisect=0, max_rows=4))
    assert [r.get("branch") for r in plain.rows] == ["A", "A", "B", None]
    assert [bool(r.get("off_branch")) for r in plain.rows] == [False, False, True, False]
    assert plain.lower_bound and plain.reported["s"] == 1.0 and plain.stop == "off the branch at s=2"


def test_where_the_branch_ends_the_rows_beyond_bound_nothing_and_the_point_is_a_lower_bound():
    """Branch A (c = 4: s* = 4, e_gs = −2) ends at s = 2.5; beyond it only B exists, whose Φ lies
    above A's maximum (Φ_B(4) = −1.2 > e_gs): a rule taking max Φ over every converged row would
    report B. The bisection finds A up to 2.38 and B from 2.83; the break in Φ between them puts B's
    rows off the branch, the rest of the grid (6) is not solved nor the grid extended, and the largest Φ on A is reported as
    a lower bound (below e_gs, as it must be)."""
    c = 4.0
    calls = []
    solve = two_branches(c=c, end=2.5, leap=math.inf, calls=calls)
    res = scan_potential(solve, [0.5, 1.0, 2.0, 4.0, 6.0], ScanOptions(bisect=2, max_rows=10))
    on = [r for r in res.rows if r.get("solved", True) and not r.get("off_branch")]
    off = [r for r in res.rows if r.get("off_branch")]
    assert {r["branch"] for r in on} == {"A"} and {r["branch"] for r in off} == {"B"} and off
    assert max(r["s"] for r in on) < 2.5 < min(r["s"] for r in off)
    assert res.lower_bound and not res.bracketed and res.stop.startswith("off the branch at s=")
    assert res.reported["branch"] == "A" and res.reported["phi"] < -math.sqrt(c)
    assert 6.0 not in calls and [r["s"] for r in res.rows if not r.get("solved", True)] == [6.0]  # lost above
    assert max(r["phi"] for r in off) > -math.sqrt(c)  # what the plain max over rows would report
    assert not any(on_curve(res.rows)[i] for i, r in enumerate(res.rows) if r.get("off_branch"))
    assert discontinuous(on[-1], min(off, key=lambda r: r["s"]))
    # the same scan with no solve to spare once the branch is lost: the scan still says why s = 6
    # is not solved (the solves spent, and the grid above a row off the branch)
    spent = scan_potential(
        two_branches(c=c, end=2.5, leap=math.inf), [0.5, 1.0, 2.0, 4.0, 6.0], ScanOptions(bisect=2, max_rows=len(calls))
    )
    assert spent.stop == res.stop and [r["s"] for r in spent.rows] == [r["s"] for r in res.rows]


def test_the_grid_is_not_extended_beyond_a_row_that_did_not_converge():
    """REM of c = 4 (s* = 4) whose solves above s = 3 do not converge: extended from [0.25, 0.5] to
    1, 2, 4, the scan stops at the unconverged s = 4 instead of spending its rows on 8, 16, …, and
    reports Φ(2) as a lower bound."""
    calls = []
    res = scan_potential(
        two_branches(c=4.0, calls=calls, conv_up_to=3.0, leap=math.inf), [0.25, 0.5], ScanOptions(max_rows=8)
    )
    assert calls == [0.25, 0.5, 1.0, 2.0, 4.0]
    assert res.stop == "not converged at s=4" and res.lower_bound and res.reported["s"] == 2.0


def test_the_tangent_bound_takes_the_slope_within_its_error_on_either_side():
    """Rows at s = 1 and 1.5 whose Φ falls by 8·10⁻⁴ towards larger s (paired s.e. 10⁻⁵): a
    continuous concave Φ with Σ(1.5) = 0.018 would rise by ≥ 0.018·(1 − 2/3) = 0.006; with Σ's s.e.
    0.082 a slope down to 0.018 − 2·0.082 < 0 is allowed (not discontinuous), with s.e. 10⁻³ it is
    not (discontinuous). The same fall seen from the other side (h at larger s) is never a jump."""
    row = lambda s, phi, se: {"s": s, "phi": phi, "phi_se": 1e-5, "sigma": 0.018, "sigma_se": se, "converged": True}
    assert not discontinuous(row(1.0, 8e-4, 0.082), row(1.5, 0.0, 0.082))
    assert discontinuous(row(1.0, 8e-4, 1e-3), row(1.5, 0.0, 1e-3))
    assert not discontinuous(row(1.0, 0.0, 1e-3), row(1.5, 8e-4, 1e-3))  # rises by less than Σ allows


def test_the_two_estimators_of_sigma_are_one_potential_on_the_rem():
    """The chord of Φ between rows, s_i s_j (Φ_j − Φ_i)/(s_j − s_i), is the REM's ln 2 − s_i s_j/4,
    and the closed forms' weighted mean equals it exactly (e = −s/2 is linear: the trapezoid on
    e = d(sΦ)/ds is exact), so z = 0 on every interval and the s.e. keep their factor 1."""
    res = scan_potential(rem(), [0.5, 1.0, 2.0, 4.0])
    rows, leg = res.rows, res.legendre
    used = [i for i, r in enumerate(rows) if r.get("converged")]
    for i, j in zip(used, used[1:]):
        assert leg.sigma_chord[i] == pytest.approx(LN2 - rows[i]["s"] * rows[j]["s"] / 4, abs=1e-12)
        assert abs(leg.z[i]) < 1e-9
    assert leg.dof == len(used) - 1 and leg.scale == 1.0 and res.check.scale == 1.0
    assert res.check.sigma_se == 1e-2  # the closed form's s.e. as solved


def test_a_closed_form_off_the_potential_is_measured_and_carried_in_the_se():
    """Σ's closed form shifted by δ = 0.05 (5 of its s.e.) on every row: each interval's z is
    δ over its combined s.e. (0.01 and the chord's, s_i s_j/Δs · √2·10⁻³: the rows carry no samples, so
    their two Φ s.e. combine as if independent),
    S = √(mean z²), and the rule reads Σ with s.e. × S: in the check of s* and in the refinement. Its
    first step is the root of Σ between s = 1 and 2; at that root Σ = 0.056 lies within 2·S s.e.
    (0.076), so the second step takes the vertex of Φ's parabola (with the s.e. as solved, 0.02, it
    would take the root of Σ again)."""
    delta = 0.05

    def biased(s, near):
        return rem()(s, near) | {"sigma": LN2 - s * s / 4 + delta}

    grid = [0.5, 1.0, 2.0, 4.0]
    leg = legendre([biased(s, None) for s in grid], range(4))
    se = [math.hypot(1e-2, a * b / (b - a) * math.sqrt(2) * 1e-3) for a, b in zip(grid, grid[1:])]
    assert leg.z[:3] == pytest.approx([delta / v for v in se], rel=1e-9) and np.isnan(leg.z[3])
    scale = math.sqrt(np.mean([(delta / v) ** 2 for v in se]))
    assert leg.scale == pytest.approx(scale) and 3 < scale < 5
    res = scan_potential(biased, grid)
    assert res.bracketed and res.legendre.scale > 3
    assert res.check.scale == res.legendre.scale and res.check.sigma_se == pytest.approx(1e-2 * res.legendre.scale)
    assert res.refine == "phi fit"


def test_per_sample_estimators_give_z_its_paired_se():
    """Rows on common random numbers: per outer sample i, Φ_i(s) = Φ(s) − cε_i/s and Σ_i(s) = Σ(s) +
    cε_i + τη_i(s) (REM Φ, Σ; ε shared by the rows, c = 0.5 large, so that both estimators move
    together: Σ_i = s²Φ_i′ in ε, and the trapezoid is exact per sample; η independent per row, τ =
    0.05). Then Σ_cf − Σ_Φ per sample is τ times a mean of the η, and z over its paired s.e. is a t
    variable with N/2 − 1 = 127 degrees of freedom: E z² = 127/125. Over 300 scans of 4 rows (900 z,
    the three of one scan correlated through their shared rows, ≤ 2× the independent variance),
    mean z² lies within 4 × √(2·2/900) = 0.27 of it. Without the per-sample Σ the s.e. is the
    bound (Φ's s.e. paired, Σ's rows fully correlated), which carries cε: there mean z² < 0.05."""
    rng, grid, n, c, tau = np.random.default_rng(7), [0.5, 1.0, 2.0, 4.0], 256, 0.5, 0.05
    paired, bound = [], []
    for _ in range(300):
        eps = rng.standard_normal(n)
        rows = []
        for s in grid:
            phi_i = -s / 4 - LN2 / s - c * eps / s
            sig_i = LN2 - s * s / 4 + c * eps + tau * rng.standard_normal(n)
            rows.append(
                {"s": s, "phi": phi_i.mean(), "phi_se": paired_se(phi_i), "phi_samples": phi_i}
                | {"sigma": sig_i.mean(), "sigma_se": paired_se(sig_i), "sigma_samples": sig_i}
            )
        paired += list(legendre(rows, range(4)).z[:3])
        bare = [{k: v for k, v in r.items() if k != "sigma_samples"} for r in rows]
        bound += list(legendre(bare, range(4)).z[:3])
    assert np.all(np.isfinite(paired)) and np.mean(np.square(paired)) == pytest.approx(127 / 125, abs=0.27)
    assert np.mean(np.square(bound)) < 0.05


def test_rows_where_e_rises_with_s_are_unphysical_and_bound_nothing():
    """One family of saddles, exact Legendre relations, whose energy has a minimum at s_c = 2:
    e(s) = e₀ + (s − s_c)²/2, sΦ = ∫e ds − 0.3, so Σ = s(e − Φ) has its minimum 0.3 > 0 at s_c and
    Φ rises on every s (Σ > 0). For s > s_c de/ds > 0: Σ(e) is convex, the saddle a maximum over e
    whose Φ bounds nothing. The rule sets every row past s_c unphysical (the bisections the
    continuity test makes there included), reports Φ(1.5), the largest Φ of the physical rows, as a
    lower bound, and does not extend the grid above them. Without the marking it would report a
    row past s_c."""
    e0, sc, c = 1.0, 2.0, -0.3
    calls = []

    def solve(s, near):
        calls.append(s)
        e = e0 + 0.5 * (s - sc) ** 2
        phi = (c + e0 * s + (s - sc) ** 3 / 6) / s
        row = {"s": s, "phi": phi, "phi_se": 1e-3, "sigma": s * (e - phi), "sigma_se": 5e-2}
        return row | {"energy_direct": e, "energy_direct_se": 1e-3, "converged": True}

    res = scan_potential(solve, [0.5, 1.0, 1.5, 2.5, 3.0])
    assert max(calls) == 3.0  # nothing solved above the grid
    assert all(bool(r.get("unphysical")) == (r["s"] > sc) for r in res.rows)
    assert not any(r.get("off_branch") for r in res.rows)
    assert not res.bracketed and res.lower_bound and res.reported["s"] == 1.5
    assert res.stop == "unphysical (de/ds > 0) at s=3"
    assert [r["s"] for r, on in zip(res.rows, on_curve(res.rows)) if on] == [0.5, 1.0, 1.5]
