"""The 1RSB columns of a comparison row (slrpipe.analysis.comparison; docs/theory.md §13).

Read from the replica node at a grid point (:func:`rsb1_at`): s* (NaN unless a maximum of Φ(s)
is bracketed, ``rsb1_bracketed``; slrpipe.theory.replica.rsb1.scan), the s of the state reported
and whether its Φ is only a lower bound of the ground-state energy (no maximum bracketed), the
checks of s* (``rsb1_checked``: Σ(s*) ≈ 0 by the closed form and by s²Φ′, ``rsb1_star_sigma*``,
and de/ds < 0, ``rsb1_star_de_ds``; ``rsb1_sigma_scale``, the factor on Σ's s.e. from the two
estimators' disagreement over the scan, slrpipe.theory.replica.rsb1.estimators); at that state
the objective Φ ± s.e., test error of a typical minimum, 2 tr δQ (the predicted
(1/D)|W_a − W_b|²) and the overlaps m_k, m_v, q₁_k, q₁_v; RS on the same samples; the batch-means
s.e. of the state's Φ, test error, 2 tr δQ and overlaps and the
finite-N₀ bias of the first two (K batches of the outer samples, K − 1 degrees of freedom;
``rsb1_batches_converged`` of K; slrpipe.commands.rsb1_error); RS and the state at 2N₀
(``rsb1_n0x2_*``, rsb1.n0_check); the complexity Σ ± s.e. of the state reported (its scan row).

Computed against ERM (:func:`rsb1_columns`): the ERM reference (``rsb1_erm_ref`` says which for
the test error: the ground state over starts, D → ∞ where there is a ladder, else the informed
start; the objective likewise, α·J, D → ∞ where there is a ladder; each ± s.e.), the fraction of
the RS–ERM gap that 1RSB closes, (1RSB − RS)/(ERM − RS), for both, NaN where the gap itself is
under 2 s.e. (``gap_z_*``: the gap in s.e., ERM's and, for the objective, RS's outer one
combined; slrpipe.analysis.rsb1.gap_closed) with its s.e. (``gap_closed_*_se``: 1RSB's
batch-means s.e. and ERM's, slrpipe.analysis.rsb1.gap_closed_se), and ERM's d₂ ± s.e., the
distance between the two lowest minima found on the same data
(slrpipe.analysis.distance.second_lowest; seed mean, D → ∞ where there is a ladder) — RS predicts
0, 1RSB 2 tr δQ (a diagnostic, not in the verdict); ERM's ground-state overlaps ``erm_<o>`` ±
``erm_<o>_se`` (o in m_k, m_v, q_k, q_v; D → ∞ where fitted, ``erm_overlaps_ref``) beside 1RSB's;
the N₀ drift (``rsb1_n0_drift_*``, ``rsb1_mc_converged``; slrpipe.analysis.verdict). These are
the fields of slrpipe.analysis.rows.Row of group rsb1 (``RSB1_COLUMNS``); :func:`rsb1_evidence`
is the 1RSB state as the verdict sees it.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from slrpipe.analysis.distance import second_lowest
from slrpipe.analysis.ground import reference
from slrpipe.analysis.ladder import point_ladder
from slrpipe.analysis.render import finite
from slrpipe.analysis.replica import ALPHA_RTOL
from slrpipe.analysis.rows import RSB1_COLUMNS
from slrpipe.analysis.rsb1 import gap_closed, gap_closed_se
from slrpipe.analysis.seeds import point_mean_se
from slrpipe.analysis.verdict import Compared, Measurement, Rsb1Evidence

#: RSB1_COLUMNS read from the replica node as they are (its ``rsb1_*`` variables, slrpipe.analysis.aggregate)
_RSB1 = RSB1_COLUMNS[: RSB1_COLUMNS.index("rsb1_batches_converged") + 1]


def rsb1_at(rep: xr.Dataset, sigma, lam, alpha) -> dict:
    """The 1RSB values (``_RSB1``) at a grid point (σ, λ, α) of the replica node; NaN where 1RSB
    was not solved there (no interpolation: each point is its own job)."""
    out = dict.fromkeys((*_RSB1, "rsb1_complexity", "rsb1_complexity_se"), np.nan)
    a, lams = rep["alpha"].values, rep["lam"].values
    near, lam_near = np.abs(np.log(a / alpha)) <= ALPHA_RTOL, np.isclose(lams, lam)
    if sigma not in rep["sigma"].values or not near.any() or not lam_near.any():
        return out
    pt = rep.sel(sigma=sigma).isel(alpha=int(np.argmax(near)), lam=int(np.argmax(lam_near)))
    for col in _RSB1:
        if col in pt:  # a store aggregated before a column was added lacks it
            out[col] = float(pt[col].values)
    out["rsb1_complexity"], out["rsb1_complexity_se"] = _complexity_at(pt, out)
    return out


def _complexity_at(pt: xr.Dataset, out: dict) -> tuple[float, float]:
    """The complexity Σ ± s.e. of the 1RSB state reported at one point (``pt``: the replica node
    there, the scan on dim s; ``out``: its ``rsb1_*`` values): the scan row at ``rsb1_s_reported``
    (s*, a row of the scan, or the largest Φ; slrpipe.theory.replica.rsb1.scan); NaN where not solved."""
    s = out.get("rsb1_s_reported", np.nan)
    if not np.isfinite(s) or "rsb1_scan_complexity" not in pt:
        return np.nan, np.nan
    row = pt.sel(s=s)
    se = float(row["rsb1_scan_complexity_se"]) if "rsb1_scan_complexity_se" in row else np.nan
    return float(row["rsb1_scan_complexity"]), se


def _objective_limit(by_D: xr.Dataset, sigma, lam, alpha) -> tuple[float, float]:
    """D → ∞ limit ± s.e. of ERM's objective α·J at one point of a ladder node: the ground state over
    starts where the node has it, else the informed start (slrpipe.analysis.ladder.point_ladder); NaN
    without a fit."""
    var = "train_loss_ground" if "train_loss_ground" in by_D else "train_loss"
    v = (by_D if var == "train_loss_ground" else reference(by_D))[var].sel(sigma=sigma, lam=lam, alpha=alpha)
    fit = point_ladder(v * float(alpha)).fit
    return (fit.limit, fit.limit_se) if fit is not None else (np.nan, np.nan)


def _erm_distance(by_D: xr.Dataset, sigma, lam, alpha) -> dict:
    """ERM's d₂ at one point (``erm_distance`` ± ``erm_distance_se``): the seed mean of
    :func:`slrpipe.analysis.distance.second_lowest`, extrapolated D → ∞ where the node has a ladder;
    NaN where the node has no distances or fewer than two finished starts."""
    nan = {"erm_distance": np.nan, "erm_distance_se": np.nan}
    if "dist_ground" not in by_D:
        return nan
    d2 = second_lowest(by_D).sel(sigma=sigma, lam=lam, alpha=alpha)
    if "D" in d2.dims:
        fit = point_ladder(d2).fit
        return {"erm_distance": fit.limit, "erm_distance_se": fit.limit_se} if fit is not None else nan
    mean, se, _ = point_mean_se(d2)
    return {"erm_distance": mean, "erm_distance_se": se}


#: the overlaps of the 1RSB state (m, q₁ = the self-overlap of one minimum) and ERM's ground-state
#: overlaps they are compared with: (1RSB name, ERM name)
OVERLAP_PAIRS = (("m_k", "m_k"), ("m_v", "m_v"), ("q1_k", "q_k"), ("q1_v", "q_v"))


def _erm_overlaps(by_D: xr.Dataset, full: xr.Dataset, sigma, lam, alpha) -> dict:
    """ERM's ground-state overlaps at one point (``erm_<o>`` ± ``erm_<o>_se`` for the ERM names of
    ``OVERLAP_PAIRS``, ``erm_overlaps_ref``): D → ∞ (slrpipe.analysis.ladder.point_ladder) where the
    node has a ladder and the fit succeeds, else the seed mean ± s.e. at the largest D; NaN where
    the node has no ground state."""
    out = {f"erm_{e}{x}": np.nan for _, e in OVERLAP_PAIRS for x in ("", "_se")} | {"erm_overlaps_ref": ""}
    ladder = "D" in by_D.dims
    node = by_D if ladder else full
    for _, e in OVERLAP_PAIRS:
        name = f"{e}_ground"
        if name not in node:
            continue
        v = node[name].sel(sigma=sigma, lam=lam, alpha=alpha)
        fit = point_ladder(v).fit if ladder else None
        if fit is not None:
            out[f"erm_{e}"], out[f"erm_{e}_se"], out["erm_overlaps_ref"] = fit.limit, fit.limit_se, "ground D→∞"
        else:
            mean, se, _ = point_mean_se(full[name].sel(sigma=sigma, lam=lam, alpha=alpha))
            out[f"erm_{e}"], out[f"erm_{e}_se"] = mean, se
            out["erm_overlaps_ref"] = out["erm_overlaps_ref"] or "ground"
    return out


def _n0_drift(row: dict) -> dict:
    """``rsb1_n0_drift_objective`` / ``_test``: the larger of RS's and the 1RSB state's change from N₀
    to 2N₀ outer samples, and ``rsb1_mc_converged``: 1.0 where each is at most half the 1RSB
    correction |1RSB − RS| of its quantity, 0.0 where one is not, NaN where not checked."""
    num = lambda x: float(x) if finite(x) else np.nan
    out, ok = {}, []
    for q, name in (("objective", "objective"), ("test_error", "test")):
        drift = max(
            abs(num(row.get(f"rsb1_n0x2_{q}")) - num(row.get(f"rsb1_{q}"))),
            abs(num(row.get(f"rsb1_n0x2_rs_{q}")) - num(row.get(f"rsb1_rs_{q}"))),
        )
        out[f"rsb1_n0_drift_{name}"] = drift
        ok.append(
            drift <= 0.5 * abs(num(row.get(f"rsb1_{q}")) - num(row.get(f"rsb1_rs_{q}"))) if finite(drift) else None
        )
    out["rsb1_mc_converged"] = np.nan if None in ok else float(all(ok))
    return out


def rsb1_evidence(row: dict) -> Rsb1Evidence:
    """The 1RSB state of a row for the verdict (slrpipe.analysis.verdict, rule 5): bracketed or not, its
    test error ± batch-means s.e., and the objective and overlaps ± their batch-means s.e. (the
    objective's outer s.e. where no batches were solved) against ERM's (ground state, D → ∞ where
    fitted; the objective's reference is :func:`_rsb1_gap`'s, its s.e. 0 where unknown)."""
    num = lambda x: float(x) if finite(x) else np.nan
    obj_se = num(row.get("rsb1_objective_batch_se"))
    obj_se = obj_se if finite(obj_se) else num(row.get("rsb1_objective_se"))
    erm_obj_se = num(row.get("rsb1_erm_objective_se"))  # unknown without a ladder: 0, the stricter z
    erm_obj = Measurement(num(row.get("rsb1_erm_objective")), erm_obj_se if finite(erm_obj_se) else 0.0)
    others = [Compared("objective", num(row.get("rsb1_objective")), obj_se, (erm_obj,))]
    for o, e in OVERLAP_PAIRS:
        m = Measurement(num(row.get(f"erm_{e}")), num(row.get(f"erm_{e}_se")))
        others.append(Compared(o, num(row.get(f"rsb1_{o}")), num(row.get(f"rsb1_{o}_batch_se")), (m,)))
    mc = row.get("rsb1_mc_converged")
    return Rsb1Evidence(
        row.get("rsb1_bracketed") == 1,
        num(row.get("rsb1_test_error")),
        num(row.get("rsb1_test_error_batch_se")),
        tuple(others),
        bool(mc) if finite(mc) else None,
    )


def _rsb1_gap(r: dict, objective_limit: tuple[float, float] = (np.nan, np.nan)) -> dict:
    """The ERM reference of the 1RSB columns and the fractions of the RS–ERM gap closed
    (RSB1_COLUMNS); ``objective_limit``: ERM's objective D → ∞ ± s.e. (:func:`_objective_limit`),
    used where finite, else the ground state's (or the informed start's) at the largest D, without s.e."""
    candidates = (
        (r.get("ground_limit"), r.get("ground_limit_se"), "ground D→∞"),
        (r["ground_mean"], r["ground_se"], "ground"),
        (r.get("erm_limit"), r.get("erm_limit_se"), "informed D→∞"),
        (r["erm_mean"], r["erm_se"], "informed"),
    )
    num = lambda x: float(x) if finite(x) else np.nan
    value, se, ref = next(((v, num(e), w) for v, e, w in candidates if finite(v)), (np.nan, np.nan, ""))
    objectives = (objective_limit, (r["ground_objective"], np.nan), (r["erm_objective"], np.nan))
    obj, obj_se = next(((o, num(e)) for o, e in objectives if finite(o)), (np.nan, np.nan))
    closed_obj, z_obj = gap_closed(
        num(r["rsb1_objective"]), num(r["rsb1_rs_objective"]), obj, obj_se, num(r.get("rsb1_rs_objective_se"))
    )
    closed_test, z_test = gap_closed(num(r["rsb1_test_error"]), num(r["rsb1_rs_test_error"]), value, se)
    rs_obj, rs_test = num(r["rsb1_rs_objective"]), num(r["rsb1_rs_test_error"])
    obj_x_se, test_x_se = num(r.get("rsb1_objective_batch_se")), num(r.get("rsb1_test_error_batch_se"))
    return {
        "rsb1_erm_objective": obj,
        "rsb1_erm_objective_se": obj_se,
        "rsb1_erm_test": value,
        "rsb1_erm_test_se": se,
        "rsb1_erm_ref": ref,
        "gap_closed_objective": closed_obj,
        "gap_closed_test": closed_test,
        "gap_z_objective": z_obj,
        "gap_z_test": z_test,
        "gap_closed_objective_se": gap_closed_se(closed_obj, obj_x_se, rs_obj, obj, obj_se),
        "gap_closed_test_se": gap_closed_se(closed_test, test_x_se, rs_test, value, se),
    }


def rsb1_columns(row: dict, by_D: xr.Dataset, full: xr.Dataset, sigma, lam, alpha) -> dict:
    """The 1RSB columns computed against ERM at one (σ, λ, α) point (module docstring), from a
    ``row`` that holds the core columns and :func:`rsb1_at`'s; ``by_D``: the ERM node (with its D
    dim where it has a ladder), ``full``: ERM at the largest D, every start."""
    limit = _objective_limit(by_D, sigma, lam, alpha) if "D" in by_D.dims else (np.nan, np.nan)
    return (
        _rsb1_gap(row, limit)
        | _erm_distance(by_D, sigma, lam, alpha)
        | _erm_overlaps(by_D, full, sigma, lam, alpha)
        | _n0_drift(row)
    )
