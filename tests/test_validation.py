"""ERM-vs-replica check: z-scores from the seed spread, enforced only where the theory should hold."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from conftest import comparison_row

from slrpipe.analysis.comparison import compare
from slrpipe.analysis.validation import ValidationFailed, validate_store
from slrpipe.io import write_zarr

ALPHAS = [1.0, 4.0]


def store(tmp_path, erm_shift, converged=True, extra_rep=None, pop_shift=None, extra_erm=None):
    """A store with replica test error 0.5 at every α and ERM runs 0.5 + shift ± 0.01 over 4 seeds
    (``pop_shift``: also a ``test_error_pop`` at 0.5 + pop_shift with the same spread; ``extra_rep``,
    ``extra_erm``: more variables, name → value at every point or array over α)."""
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.01, size=(1, 1, 2, 4))
    noise -= noise.mean(-1, keepdims=True)  # the seed mean is exactly 0.5 + shift
    erm = xr.Dataset(
        {
            "test_error": (("sigma", "lam", "alpha", "seed"), 0.5 + erm_shift + noise),
            "D": (("sigma", "lam", "alpha", "seed"), np.full((1, 1, 2, 4), 100)),
        },
        coords={"sigma": ["softmax"], "lam": [0.1], "alpha": ALPHAS, "seed": [0, 1, 2, 3]},
    )
    for k, v in (extra_erm or {}).items():
        erm[k] = (("sigma", "lam", "alpha", "seed"), np.broadcast_to(np.reshape(v, (1, 1, -1, 1)), (1, 1, 2, 4)))
    if pop_shift is not None:
        erm["test_error_pop"] = (("sigma", "lam", "alpha", "seed"), 0.5 + pop_shift + noise)
    rep = xr.Dataset(
        {
            "test_error": (("sigma", "lam", "alpha"), np.full((1, 1, 2), 0.5)),
            "converged": (("sigma", "lam", "alpha"), np.full((1, 1, 2), converged)),
        },
        coords={"sigma": ["softmax"], "lam": [0.1], "alpha": ALPHAS},
    )
    for k, v in (extra_rep or {}).items():
        rep[k] = (("sigma", "lam", "alpha"), np.broadcast_to(np.reshape(v, (1, 1, -1)), (1, 1, 2)))
    if "test_error_seed_mean" in rep:
        rep.attrs["mc_seeds"] = "4"  # as the aggregation writes experiment fields (JSON text)
    if "prox_tie_fraction" in rep:
        rep.attrs["n_samples"] = "4096"
    tree = xr.DataTree.from_dict({"/erm/e": erm, "/replica/r": rep})
    return write_zarr(tree, tmp_path / "slr.zarr")


CONFIG = {"replica": {"r": {"erm": "e"}}, "validation": {"max_abs_z": 4.0, "rel_tol": 0.05, "fail": True}}


def test_agreement_passes_and_writes_table(tmp_path):
    rows = validate_store(store(tmp_path, 0.0), CONFIG, tmp_path / "v.txt")
    assert [r.agrees for r in rows] == [True, True] and all(r.enforced for r in rows)
    assert rows[0].z == pytest.approx(0.0, abs=1e-9)
    assert "softmax" in (tmp_path / "v.txt").read_text()


def test_disagreement_fails_with_the_points(tmp_path):
    # shift 0.1: z ≈ 0.1 / (0.01/√4) = 20 and relative difference 20 % — both beyond tolerance
    with pytest.raises(ValidationFailed, match=r"2 of 2 enforced ERM points disagree.*α=1 "):
        validate_store(store(tmp_path, 0.1), CONFIG, tmp_path / "v.txt")
    assert not (tmp_path / "v.txt").exists() and (tmp_path / "v.failed.txt").exists()
    # a later passing run leaves no stale failure table behind
    validate_store(store(tmp_path / "b", 0.0), CONFIG, tmp_path / "v.txt")
    assert (tmp_path / "v.txt").exists() and not (tmp_path / "v.failed.txt").exists()


def test_small_bias_within_relative_tolerance_passes(tmp_path):
    # shift 0.02: z ≈ 4 but only 4 % off — the finite-D allowance accepts it
    rows = validate_store(store(tmp_path, 0.02), CONFIG, tmp_path / "v.txt")
    assert all(r.agrees for r in rows)


def test_non_converged_theory_is_not_enforced(tmp_path):
    from slrpipe.analysis.aggregate import open_store

    rows = compare(open_store(store(tmp_path, 0.1, converged=False, extra_rep={"alpha_reached_down": 4.0})), CONFIG)
    assert not any(r.enforced for r in rows) and not any(r.agrees for r in rows)
    # the table says where the branch followed from above stopped (α = 4 on the way to α = 1)
    from slrpipe.analysis.render import format_table

    notes = format_table(rows).split("notes:\n", 1)[1].splitlines()
    assert notes[0].endswith(": not enforced (not converged); branch ends from above at α=4")
    assert notes[1].endswith(": not enforced (not converged)")


def test_runs_stopped_short_of_the_gradient_test_are_counted_and_noted(tmp_path):
    # every seed's run converged at α = 1, none at α = 4 (stopped by max_iter): the row carries the
    # fraction, the text table notes the α = 4 point only; where ERM agrees the verdict does not
    # depend on it
    from slrpipe.analysis.aggregate import open_store
    from slrpipe.analysis.render import _stopped_short, format_table

    rows = compare(open_store(store(tmp_path, 0.0, extra_erm={"converged": [1.0, 0.0]})), CONFIG)
    assert [r.erm_converged for r in rows] == [1.0, 0.0]
    assert all(np.isnan(r.ground_converged) for r in rows)  # one start: no ground state in the store
    assert [r.verdict for r in rows] == [r.verdict for r in compare(open_store(store(tmp_path / "b", 0.0)), CONFIG)]
    notes = format_table(rows).split("notes:\n", 1)[1].splitlines()
    assert [n for n in notes if "gradient test" in n] == [
        "softmax λ=0.1 α=4: ERM runs ended by the gradient test: informed 0/4 seeds"
    ]
    # both fractions, as counts of the row's seeds, as soon as either is short; nothing when both are whole
    row = dataclasses.replace(rows[0], n_seeds=5, erm_converged=1.0, ground_converged=0.4)
    assert _stopped_short(row) == "ERM runs ended by the gradient test: informed 5/5, ground state 2/5 seeds"
    assert _stopped_short(dataclasses.replace(row, ground_converged=1.0)) == ""
    assert _stopped_short(comparison_row(n_seeds=5)) == ""  # a store without ``converged`` (NaN)
    # ERM 0.1 off the theory: the point whose runs all stopped short gets "ERM not at a minimum",
    # the one whose runs all converged keeps the verdict it has without the flag
    far = compare(open_store(store(tmp_path / "c", 0.1, extra_erm={"converged": [1.0, 0.0]})), CONFIG)
    plain = compare(open_store(store(tmp_path / "d", 0.1)), CONFIG)
    assert [r.verdict for r in far] == [plain[0].verdict, "ERM not at a minimum"]
    assert plain[1].verdict not in ("agrees", "ERM not at a minimum")


def test_risk_at_learned_weights_is_compared_when_present(tmp_path):
    # the finite-test-set mean is 0.1 off, the risk at the learned weights agrees: it is the one judged
    rows = validate_store(store(tmp_path, 0.1, pop_shift=0.0), CONFIG, tmp_path / "v.txt")
    assert all(r.agrees and r.erm_quantity == "test_error_pop" for r in rows)
    assert rows[0].erm_test == pytest.approx(0.6) and rows[0].erm_mean == pytest.approx(0.5)
    with pytest.raises(ValidationFailed):
        validate_store(store(tmp_path / "b", 0.0, pop_shift=0.1), CONFIG, tmp_path / "b.txt")


def test_monte_carlo_error_of_the_theory_enters_z(tmp_path):
    from slrpipe.analysis.aggregate import open_store

    # theory = the mean over 4 Monte Carlo draws (0.55), its error = s.d. 0.1 / √4 = 0.05; ERM at
    # 0.6 ± small: z = 0.05 / √(se² + 0.05²) ≈ 1 instead of ≈ 20 against the single draw 0.5
    rows = compare(
        open_store(store(tmp_path, 0.1, extra_rep={"test_error_mc_sd": 0.1, "test_error_seed_mean": 0.55})), CONFIG
    )
    se = rows[0].erm_se
    assert rows[0].theory == pytest.approx(0.55) and rows[0].theory_mc_se == pytest.approx(0.05)
    assert rows[0].z == pytest.approx(0.05 / np.sqrt(se**2 + 0.05**2), rel=1e-6)
    assert all(r.agrees for r in rows)


def test_two_rs_branches_are_reported_not_enforced(tmp_path):
    from slrpipe.analysis.aggregate import open_store

    rows = compare(open_store(store(tmp_path, 0.1, extra_rep={"n_branches": 2, "test_error_alt": 0.6})), CONFIG)
    assert not any(r.enforced for r in rows) and all(r.theory_alt == pytest.approx(0.6) for r in rows)
    from slrpipe.analysis.render import format_table

    assert "2 RS branches" in format_table(rows)


def test_ill_conditioned_theory_is_reported_not_enforced(tmp_path):
    from slrpipe.analysis.aggregate import open_store

    # one draw moves the theory by 0.04 / 0.5 = 8 % > max_theory_rel_sd (3 %): near a fold
    bad = compare(
        open_store(store(tmp_path, 0.3, extra_rep={"test_error_mc_sd": 0.04, "test_error_seed_mean": 0.5})), CONFIG
    )
    assert all(r.ill_conditioned and not r.enforced for r in bad)
    ok = compare(
        open_store(store(tmp_path / "b", 0.3, extra_rep={"test_error_mc_sd": 0.01, "test_error_seed_mean": 0.5})),
        CONFIG,
    )
    assert all(r.enforced and not r.agrees for r in ok)


def test_rs_stability_and_verdict_columns(tmp_path):
    """RS stability from the replica output enters the rows (grid points only) and decides the
    verdict of a disagreeing point: RS unstable vs unexplained (slrpipe.analysis.verdict)."""
    from slrpipe.analysis.aggregate import open_store
    from slrpipe.analysis.render import format_table

    bad = compare(open_store(store(tmp_path, 0.1, extra_rep={"rs_stable": 0.0, "replicon": 1.3})), CONFIG)
    assert all(r.rs_stable == 0.0 and r.replicon == pytest.approx(1.3) for r in bad)
    assert all(r.verdict == "RS unstable" for r in bad)
    assert "unstable ρ=1.30" in format_table(bad) and format_table(bad).count(" RS unstable\n") == 2
    mc = {"test_error_seed_mean": 0.5, "test_error_mc_sd": 0.002}  # the theory's MC error measured
    odd = compare(open_store(store(tmp_path / "b", 0.1, extra_rep={"rs_stable": 1.0, "replicon": 0.5, **mc})), CONFIG)
    assert all(r.verdict == "unexplained" for r in odd)
    one_draw = compare(open_store(store(tmp_path / "f", 0.1, extra_rep={"rs_stable": 1.0, "replicon": 0.5})), CONFIG)
    assert all(r.verdict == "theory MC error not measured" for r in one_draw)
    good = compare(open_store(store(tmp_path / "c", 0.0, extra_rep={"rs_stable": 0.0, "replicon": 1.3})), CONFIG)
    assert all(r.verdict == "agrees" for r in good)
    # the prox ties as a count among the theory's samples (one tie flags the point, docs/theory.md §11)
    ties = compare(
        open_store(
            store(tmp_path / "e", 0.1, extra_rep={"rs_stable": 0.0, "replicon": 0.8, "prox_tie_fraction": 3 / 4096})
        ),
        CONFIG,
    )
    assert all(r.prox_ties == 3 and r.theory_n_samples == 4096 for r in ties)
    assert "unstable ρ=0.80, ties 3/4096" in format_table(ties)
    plain = compare(open_store(store(tmp_path / "d", 0.1)), CONFIG)  # no stability in the store
    assert all(np.isnan(r.rs_stable) and r.verdict == "theory MC error not measured" for r in plain)


def rsb1_at_alpha1(rs_objective, rs_test_error, test_error, rs_objective_se=None) -> dict:
    """The ``rsb1_*`` variables of a replica node solved at α = 1 only (NaN at α = 4): RS objective
    and test error on the 1RSB samples as given, 1RSB Φ = 1.2 ± 0.01 and test error as given, s* = 2,
    2 tr δQ = 0.3; ``rs_objective_se``: RS's outer s.e. (absent: not in the node)."""
    out = {
        "rsb1_rs_objective": [rs_objective, np.nan],
        "rsb1_rs_test_error": [rs_test_error, np.nan],
        "rsb1_objective": [1.2, np.nan],
        "rsb1_objective_se": [0.01, np.nan],
        "rsb1_test_error": [test_error, np.nan],
        "rsb1_s_star": [2.0, np.nan],
        "rsb1_s_reported": [2.0, np.nan],
        "rsb1_bracketed": [1.0, np.nan],
        "rsb1_distance": [0.3, np.nan],
        "rsb1_converged": [1.0, np.nan],
    }
    if rs_objective_se is not None:
        out["rsb1_rs_objective_se"] = [rs_objective_se, np.nan]
    return out


def test_rsb1_columns_give_the_fraction_of_the_gap_closed(tmp_path):
    """Where the replica experiment solved 1RSB (rsb1_* in its node) each row gets the 1RSB columns:
    (1RSB − RS)/(ERM − RS) of the objective and of the test error, RS on the 1RSB samples, the ERM
    reference named; a point 1RSB did not solve (NaN) gets NaN and no line in the 1RSB section."""
    from slrpipe.analysis.aggregate import open_store
    from slrpipe.analysis.render import format_table
    from slrpipe.analysis.rows import RSB1_COLUMNS

    rsb1 = rsb1_at_alpha1(rs_objective=1.0, rs_test_error=0.5, test_error=0.53)
    # ERM 0.6 ± 0.005 and α·J = 1.4 at α = 1
    tree = open_store(store(tmp_path, 0.1, extra_rep=rsb1, extra_erm={"train_loss": [1.4, 0.35]}))
    rows = compare(tree, CONFIG)
    one, four = rows
    assert one.has_rsb1 and set(RSB1_COLUMNS) <= set(one.to_dict())
    assert one.gap_closed_objective == pytest.approx((1.2 - 1.0) / (1.4 - 1.0))
    assert one.gap_closed_test == pytest.approx((0.53 - 0.5) / (0.6 - 0.5))
    assert one.rsb1_erm_ref == "informed" and one.rsb1_erm_objective == pytest.approx(1.4)
    assert np.isnan(four.gap_closed_objective) and np.isnan(four.rsb1_objective)
    table = format_table(rows)
    section = table.split("1RSB (docs/theory.md §13)", 1)[1].splitlines()
    lines = [s for s in section if s.startswith("softmax ")]
    assert len(lines) == 1 and "1.2000±0.0100" in lines[0] and "0.50" in lines[0] and "0.30" in lines[0]
    assert max(map(len, table.splitlines())) <= 120
    plain = compare(open_store(store(tmp_path / "p", 0.1)), CONFIG)  # no 1RSB in the store: no columns
    assert (
        not set(RSB1_COLUMNS) & set(plain[0].to_dict()) and not plain[0].has_rsb1 and "1RSB" not in format_table(plain)
    )


def test_batch_means_errors_give_the_error_of_the_fraction_closed(tmp_path):
    """With the batch-means s.e. of the 1RSB state in the node (rule rsb1_error), the table shows
    1RSB ± that s.e. and the fraction closed ± √(x_se² + f² erm_se²)/|ERM − RS|: test error 0.53 ±
    0.02 against RS 0.5 and ERM 0.6 ± 0.0016 → f = 0.3 ± 0.2; objective 1.2 ± 0.05 against RS 1.0
    and ERM 1.4 (no s.e.) → f = 0.5 ± 0.125."""
    from slrpipe.analysis.aggregate import open_store
    from slrpipe.analysis.render import format_table

    rsb1 = rsb1_at_alpha1(rs_objective=1.0, rs_test_error=0.5, test_error=0.53)
    rsb1.update(
        rsb1_test_error_batch_se=[0.02, np.nan], rsb1_objective_batch_se=[0.05, np.nan], rsb1_batches_converged=[4, 0]
    )
    tree = open_store(store(tmp_path, 0.1, extra_rep=rsb1, extra_erm={"train_loss": [1.4, 0.35]}))
    r = compare(tree, CONFIG)[0]
    f = (0.53 - 0.5) / (0.6 - 0.5)
    assert r.gap_closed_test_se == pytest.approx(math.hypot(0.02, f * r.rsb1_erm_test_se) / 0.1)
    assert 0.2 < r.gap_closed_test_se < 0.21  # ERM's s.e. adds little
    assert r.gap_closed_objective_se == pytest.approx(0.05 / 0.4)
    line = next(
        s for s in format_table([r]).split("1RSB (docs/theory.md §13)", 1)[1].splitlines() if s.startswith("softmax")
    )
    assert "1.2000±0.0500" in line and "0.5300±0.0200" in line and "0.30±0.20" in line and "0.50±0.13" in line
    assert len(line) <= 120


def test_a_gap_under_two_standard_errors_gets_no_fraction(tmp_path):
    """An RS–ERM gap within 2 s.e. is not resolved: the fraction closed is NaN (not a ratio of two
    noises), the gap in s.e. is reported and the text says 'no gap'. Test error: RS 0.598 against ERM
    0.6 ± 0.0016 (this store's 4 seeds) → z ≈ 1.2; objective: RS 1.0 ± 0.3 (outer s.e.) against ERM 1.4
    (no s.e.) → z = 1.33. With RS at 0.5 and 0.0 ± 0.1 both gaps are resolved (z ≈ 60, 14)."""
    from slrpipe.analysis.aggregate import open_store
    from slrpipe.analysis.render import format_table

    def rows(rs_test, rs_obj, rs_obj_se):
        rsb1 = rsb1_at_alpha1(rs_objective=rs_obj, rs_test_error=rs_test, test_error=0.599, rs_objective_se=rs_obj_se)
        path = tmp_path / f"s{rs_test}"
        extra_erm = {"train_loss": [1.4, 0.35]}
        return compare(open_store(store(path, 0.1, extra_rep=rsb1, extra_erm=extra_erm)), CONFIG)

    r = rows(0.598, 1.0, 0.3)[0]
    assert r.gap_z_test == pytest.approx(0.002 / r.rsb1_erm_test_se) and abs(r.gap_z_test) < 2
    assert np.isnan(r.gap_closed_test) and r.rsb1_erm_test_se > 0
    assert r.gap_z_objective == pytest.approx(0.4 / 0.3) and np.isnan(r.gap_closed_objective)
    line = next(
        s for s in format_table([r]).split("1RSB (docs/theory.md §13)", 1)[1].splitlines() if s.startswith("softmax")
    )
    assert line.count("no gap") == 2
    resolved = rows(0.5, 0.0, 0.1)[0]
    assert resolved.gap_closed_test == pytest.approx((0.599 - 0.5) / (0.6 - 0.5))
    assert resolved.gap_closed_objective == pytest.approx(1.2 / 1.4)
    assert resolved.gap_z_objective == pytest.approx(14)


LADDER = [100, 200, 400, 800]


def ladder_store(tmp_path, informed, random, random_loss=None, extra_rep=()):
    """A store whose ERM experiment has a D ladder: per (D, seed) the informed and one random start
    (objectives: the random start is lower: 0.9, or ``random_loss(D)`` + the same seed noise),
    values ``informed(D)`` / ``random(D)`` + seed noise (s.d. 0.002, centred per D so each seed
    mean is exact); replica 0.5 at α = 1, RS stable, plus ``extra_rep`` (name, value) pairs."""
    from slrpipe.analysis.ground import add_ground_state

    rng = np.random.default_rng(1)
    noise = rng.normal(0, 0.002, size=(len(LADDER), 4))
    noise -= noise.mean(-1, keepdims=True)
    D = np.array(LADDER, float)[:, None]
    te = np.stack([informed(D) + noise, random(D) + noise], axis=-1)  # (D, seed, init)
    low = np.full_like(noise, 0.9) if random_loss is None else random_loss(D) + noise
    loss = np.stack([np.full_like(noise, 1.0), low], axis=-1)
    dims = ("sigma", "lam", "alpha", "D", "seed", "init", "restart", "optimizer")
    shape = (1, 1, 1, len(LADDER), 4, 2, 1, 1)
    erm = xr.Dataset(
        {"test_error": (dims, te.reshape(shape)), "train_loss": (dims, loss.reshape(shape))},
        coords={
            "sigma": ["softmax"],
            "lam": [0.1],
            "alpha": [1.0],
            "D": LADDER,
            "seed": [0, 1, 2, 3],
            "init": ["informed", "random"],
            "restart": [0],
            "optimizer": ["lbfgs"],
        },
    )
    rep = xr.Dataset(
        {
            v: (("sigma", "lam", "alpha"), np.full((1, 1, 1), x))
            for v, x in (
                ("test_error", 0.5),
                ("converged", True),
                ("rs_stable", 1.0),
                ("replicon", 0.5),
                ("test_error_seed_mean", 0.5),
                ("test_error_mc_sd", 0.001),
                *extra_rep,
            )
        },
        coords={"sigma": ["softmax"], "lam": [0.1], "alpha": [1.0]},
        attrs={"mc_seeds": "4"},
    )
    tree = xr.DataTree.from_dict({"/erm/e": add_ground_state(erm), "/replica/r": rep})
    return write_zarr(tree, tmp_path / "slr.zarr")


def test_rsb1_gap_uses_the_ground_state_extrapolated_over_the_ladder(tmp_path):
    """With a D ladder the 1RSB gap is measured against ERM's ground state D → ∞, objective and
    test error: ground = the random start, test error 0.45 + 20/D and objective 0.8 + 10/D (exact
    1/D laws + seed noise s.d. 0.002 over 4 seeds), RS 0.55 / 0.7, 1RSB 0.52 / 0.75 → closed
    0.3 and 0.5 (at the largest D, 800, they would be 0.26 and 0.44); the verdict is "1RSB does
    not close the gap" (ERM 0.45 vs 1RSB 0.52 ± 0.005: 13 %, z ≫ 4; the overlaps, not in this
    store, cannot change that)."""
    from slrpipe.analysis.aggregate import open_store

    rsb1 = (
        ("rsb1_rs_objective", 0.7),
        ("rsb1_rs_test_error", 0.55),
        ("rsb1_objective", 0.75),
        ("rsb1_objective_se", 0.01),
        ("rsb1_test_error", 0.52),
        ("rsb1_s_star", 1.0),
        ("rsb1_bracketed", 1.0),
        ("rsb1_test_error_batch_se", 0.005),
        ("rsb1_distance", 0.2),
        ("rsb1_converged", 1.0),
    )
    path = ladder_store(
        tmp_path, lambda D: 0.6 + 0 * D, lambda D: 0.40 + 20 / D, random_loss=lambda D: 0.8 + 10 / D, extra_rep=rsb1
    )
    (r,) = compare(open_store(path), CONFIG)
    assert r.rsb1_erm_ref == "ground D→∞"
    assert r.rsb1_erm_test == pytest.approx(0.40, abs=0.003) and r.gap_closed_test == pytest.approx(0.2, abs=0.01)
    assert r.rsb1_erm_objective == pytest.approx(0.8, abs=0.003)
    assert r.gap_closed_objective == pytest.approx(0.5, abs=0.02)
    assert r.verdict == "1RSB does not close the gap"


def test_ladder_rows_extrapolate_and_decide_the_verdict(tmp_path):
    """Informed start 0.5 + 40/D: 5 % off at the largest D (z ≈ 50), its exact 1/D limit is the
    theory → "agrees after D → ∞". Informed flat at 0.6 but the lower-objective random start
    0.5 + 40/D → "ERM not at its ground state". Both at 0.6 → "unexplained" (RS stable)."""
    from slrpipe.analysis.aggregate import open_store
    from slrpipe.analysis.render import format_table

    finite = lambda D: 0.5 + 40.0 / D
    flat = lambda D: 0.6 + 0 * D
    cfg = dict(CONFIG, validation=dict(CONFIG["validation"], rel_tol=0.01))
    (r,) = compare(open_store(ladder_store(tmp_path, finite, finite)), cfg)
    assert r.D == 800 and r.erm_mean == pytest.approx(0.55) and not r.agrees
    assert r.ladder_D == LADDER and r.ladder_erm == pytest.approx([0.9, 0.7, 0.6, 0.55])
    assert r.erm_law == "1/D" and r.erm_limit == pytest.approx(0.5, abs=1e-9) and r.erm_fit_ok
    # exact 1/D data: the chosen law fits perfectly, its rival's χ² is large, so the law-choice systematic vanishes
    assert r.erm_limit_se < 0.01 and abs(r.z_limit) < 1e-6
    assert r.verdict == "agrees after D → ∞"
    (r,) = compare(open_store(ladder_store(tmp_path / "b", flat, finite)), cfg)
    assert r.ladder_erm == pytest.approx([0.6] * 4) and r.ladder_ground == pytest.approx([0.9, 0.7, 0.6, 0.55])
    assert r.ground_limit == pytest.approx(0.5, abs=1e-9) and r.verdict == "ERM not at its ground state"
    assert abs(r.z_limit) > 20
    (r,) = compare(open_store(ladder_store(tmp_path / "c", flat, flat)), cfg)
    assert r.verdict == "unexplained"
    text = format_table([r])
    assert "D ladder" in text and "D=800: 0.6000±" in text and "D=∞: 0.6000 ± " in text
    assert max(map(len, text.splitlines())) <= 120


def test_text_table_is_at_most_120_columns_and_markdown_has_every_point(tmp_path):
    """The widest cases: long names, every note, a 6-rung ladder, large values; the markdown
    rendering (docs/validation.md's table) of the same rows."""
    from slrpipe.analysis import tables
    from slrpipe.analysis.aggregate import open_store
    from slrpipe.analysis.render import WIDTH, format_table

    rows = compare(
        open_store(
            store(
                tmp_path,
                0.1,
                converged=False,
                extra_rep={
                    "alpha_reached_down": 4.0,
                    "alpha_reached_up": 0.7,
                    "rs_stable": 0.0,
                    "replicon": 12.345,
                    "prox_tie_fraction": 843 / 16384,
                },
            )
        ),
        CONFIG,
    )
    long = [
        dataclasses.replace(
            r,
            experiment="a_rather_long_experiment_name_x",
            sigma="softplus_norm",
            D=10000,
            erm_mean=10.1234,
            erm_se=1.2345,
            theory=9.8765,
            theory_mc_se=0.4321,
            z=-100.53,
            rel_diff=-0.882,
            n_seeds=12,
            n_branches=2,
            theory_alt=3.4281,
            prox_ties=843.0,
            theory_n_samples=16384,
            verdict="theory MC error not measured",
            ladder_D=[128, 256, 512, 1024, 2048, 4096],
            ladder_erm=[1.0] * 6,
            ladder_erm_se=[0.01] * 6,
            ladder_ground_D=[128, 256, 512, 1024, 2048, 4096],
            ladder_ground=[1.0] * 6,
            ladder_ground_se=[0.01] * 6,
            erm_limit=1.0,
            erm_limit_se=0.01,
            erm_law="1/sqrt(D)",
            erm_chi2_dof=12.5,
            erm_fit_p=0.001,
            erm_fit_ok=False,
            ground_limit=1.0,
            ground_limit_se=0.01,
            ground_law="1/D",
            ground_chi2_dof=1.0,
            ground_fit_p=0.5,
            ground_fit_ok=True,
            z_limit=-3.2,
            z_ground_limit=1.1,
        )
        for r in rows
    ]
    text = format_table(rows + long)
    assert max(map(len, text.splitlines())) <= WIDTH, max(text.splitlines(), key=len)
    assert "ERM vs replica theory: 4 points" in text.splitlines()[0]
    md = tables.validation(rows + long).splitlines()
    assert len([line for line in md if line.startswith("| a_rather_long")]) == 2 and len(md) == 2 + 4
    counts = tables.verdicts(rows + long).splitlines()
    assert counts[-1] == "| all | 4 |" and "| theory MC error not measured | 2 |" in counts


def test_validation_figure_title_gives_the_range_of_D():
    """Where the ERM grid varies D with α (fixed √(nD)), the panel title states the whole range, not
    one α's D; a missing ERM point (D = -1) does not enter it."""
    from slrpipe.figures.validation import _dimension_text

    rows = [comparison_row(D=d) for d in (849, 1897, -1, 1200)]
    assert _dimension_text(rows) == " at D = 849–1897"
    assert _dimension_text([comparison_row(D=600), comparison_row(D=600)]) == " at D = 600"
    assert _dimension_text([comparison_row(D=-1)]) == ""


def test_validation_figure_draws_the_rows_it_is_given(tmp_path):
    """The figure reads the comparison's rows (results/validation.json), never compares again: it
    draws the rows of each experiment named and raises for an experiment without rows."""
    from slrpipe.figures.validation import plot

    rows = [comparison_row(alpha=a, rel_diff=0.01, agrees=True, enforced=True) for a in (2.0, 8.0)]
    paths = plot(None, ["e"], tmp_path / "validation", rows=rows)
    assert sorted(p.suffix for p in map(Path, paths)) == [".pdf", ".png"] and all(
        Path(p).stat().st_size > 0 for p in paths
    )
    with pytest.raises(ValueError, match="'other' has no linked ERM points"):
        plot(None, ["other"], tmp_path / "x", rows=rows)
    with pytest.raises(ValueError, match="rows are required"):
        plot(None, ["e"], tmp_path / "x")


def test_points_outside_the_theory_grid_are_reported_not_enforced(tmp_path):
    # ERM at α = 1 and 4 against a replica sweep of α = 4 only (a costly L solved at large α), and
    # an ERM σ the sweep lacks: every point gets a row with the same columns, NaN theory where none
    from slrpipe.analysis.aggregate import open_store

    path = store(tmp_path, 0.0, extra_rep={"prox_tie_fraction": 0.0})
    tree = open_store(path)
    rep = tree["replica/r"].to_dataset().sel(alpha=[4.0])
    erm = tree["erm/e"].to_dataset()
    erm = xr.concat([erm, erm.assign_coords(sigma=["linear"])], dim="sigma")
    tree = xr.DataTree.from_dict({"/erm/e": erm, "/replica/r": rep})
    rows = compare(tree, CONFIG)
    assert [(r.sigma, r.alpha) for r in rows] == [
        ("softmax", 1.0),
        ("softmax", 4.0),
        ("linear", 1.0),
        ("linear", 4.0),
    ]
    assert len({frozenset(r.to_dict()) for r in rows}) == 1  # the same columns in every row
    covered = [r for r in rows if np.isfinite(r.theory)]
    assert [(r.sigma, r.alpha) for r in covered] == [("softmax", 4.0)] and covered[0].enforced
    assert not any(r.enforced or r.agrees for r in rows if r not in covered)


def test_the_s_column_of_the_1rsb_section_marks_s_star_and_a_lower_bound():
    """``1.7*`` at a bracketed s* whose checks hold, ``1.7*?`` where one fails, ``4lb`` at the largest
    Φ of a scan without a bracketed maximum (a lower bound only); '—' where not solved."""
    from slrpipe.analysis.render import _s_reported

    def s_reported(**values):
        return _s_reported(comparison_row(**{"rsb1_s_star": np.nan} | values))

    assert s_reported(rsb1_s_reported=1.666, rsb1_bracketed=1.0, rsb1_checked=1.0) == "1.7*"
    assert s_reported(rsb1_s_reported=1.666, rsb1_bracketed=1.0, rsb1_checked=0.0) == "1.7*?"
    assert s_reported(rsb1_s_reported=4.0, rsb1_bracketed=0.0, rsb1_lower_bound=1.0) == "4lb"
    assert s_reported(rsb1_s_reported=np.nan) == "—"


def test_1rsb_agrees_only_with_the_objective_test_error_and_overlaps_within_its_errors(tmp_path):
    """Item 4 of the 1RSB rule: RS misses ERM (0.5 against 0.6, 20 %); the 1RSB state matches ERM's
    test error (0.6 ± 0.005), objective (1.2 ± 0.05 against α·J = 1.21) and overlaps (m_k, m_v, q₁_k,
    q₁_v ± 0.01 against ERM's ground state, in validation.json beside them): "1RSB agrees". The same
    state with q₁_k = 58.1 against ERM's 33.8 (as at spiked ν = 1, α = 20): "1RSB does not close the
    gap"; without a bracketed s*: "1RSB not judged"."""
    from slrpipe.analysis.aggregate import open_store

    erm_overlaps = {"m_k_ground": [0.8, 0.8], "m_v_ground": [0.9, 0.9], "q_k_ground": [33.8, 33.8]}
    erm_overlaps |= {"q_v_ground": [1.1, 1.1], "train_loss": [1.21, 0.3]}

    def verdict(q1_k=33.8, bracketed=1.0, tag=""):
        rsb1 = rsb1_at_alpha1(rs_objective=1.0, rs_test_error=0.5, test_error=0.6)
        rsb1 |= {"rsb1_bracketed": [bracketed, np.nan], "rsb1_test_error_batch_se": [0.005, np.nan]}
        rsb1 |= {"rsb1_objective_batch_se": [0.05, np.nan]}
        for o, v in (("m_k", 0.8), ("m_v", 0.9), ("q1_k", q1_k), ("q1_v", 1.1)):
            rsb1 |= {f"rsb1_{o}": [v, np.nan], f"rsb1_{o}_batch_se": [0.01, np.nan]}
        path = store(tmp_path / f"q{q1_k}{tag}", 0.1, extra_rep=rsb1, extra_erm=erm_overlaps)
        return compare(open_store(path), CONFIG)[0]

    r = verdict()
    assert r.verdict == "1RSB agrees", r
    assert r.erm_q_k == pytest.approx(33.8) and r.rsb1_q1_k == pytest.approx(33.8)
    assert r.erm_overlaps_ref == "ground" and r.rsb1_m_v_batch_se == pytest.approx(0.01)
    assert verdict(q1_k=58.1).verdict == "1RSB does not close the gap"
    assert verdict(bracketed=0.0, tag="lb").verdict == "1RSB not judged"


def test_1rsb_that_moves_from_n0_to_2n0_by_half_its_correction_is_not_converged(tmp_path):
    """RS on 2N₀ samples moves the objective from 1.0 to 1.12 against a 1RSB correction of 0.2
    (1.2 − 1.0): more than half, "Monte Carlo not converged"; moving by 0.05 (and the state by
    0.01), the comparison stands ("1RSB does not close the gap": objective 1.2 ± 0.01 against α·J
    = 1.4, no overlaps measured by ERM here)."""
    from slrpipe.analysis.aggregate import open_store

    def row(rs_2n0, tag):
        rsb1 = rsb1_at_alpha1(rs_objective=1.0, rs_test_error=0.5, test_error=0.6)
        rsb1 |= {"rsb1_test_error_batch_se": [0.005, np.nan], "rsb1_n0x2_rs_objective": [rs_2n0, np.nan]}
        rsb1 |= {"rsb1_n0x2_objective": [1.21, np.nan], "rsb1_n0x2_rs_test_error": [0.5, np.nan]}
        rsb1 |= {"rsb1_n0x2_test_error": [0.6, np.nan]}
        path = store(tmp_path / tag, 0.1, extra_rep=rsb1, extra_erm={"train_loss": [1.4, 0.35]})
        return compare(open_store(path), CONFIG)[0]

    r = row(1.12, "far")
    assert r.rsb1_n0_drift_objective == pytest.approx(0.12) and r.rsb1_mc_converged == 0.0
    assert r.verdict == "Monte Carlo not converged"
    r = row(1.05, "near")
    assert r.rsb1_n0_drift_objective == pytest.approx(0.05) and r.rsb1_mc_converged == 1.0
    assert r.verdict == "1RSB does not close the gap"
    assert compare(open_store(store(tmp_path / "p", 0.1)), CONFIG)[0].rsb1_mc_converged is None
