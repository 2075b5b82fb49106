"""ERM vs replica theory: one row per (experiment, σ, λ, α) and a verdict.

For each replica experiment that names an ERM experiment, every ERM point is compared with the
replica prediction at the same (σ, λ, α) — linearly interpolated in log α off the replica grid
(slrpipe.analysis.replica). :func:`compare` returns typed rows (slrpipe.analysis.rows.Row);
:func:`validate_store` writes them (``results/validation.json``) and their text table
(slrpipe.analysis.render, ``results/validation.txt``) and fails on enforced disagreement.

ERM value: the mean over seeds of ``test_error_pop``, the population risk at the learned (k, v)
(model.md §4 at the learned Gram, evaluated at aggregation) — the quantity the theory predicts,
without the noise of a finite test set (s.d. ≈ 0.007 per seed at 20000 test sequences, shared by
every α and σ of a seed, so it does not average out along a curve). The finite-test-set mean is
reported next to it (``erm_test``) and used when ``test_error_pop`` is missing. Its standard error
is the seed-to-seed spread / √(seeds).

Theory value: the mean over the Monte Carlo draws of the channel (``test_error_seed_mean`` of the
replica sweep when ``mc_seeds`` > 1, else the single draw), with Monte Carlo error
``theory_mc_se`` = ``test_error_mc_sd`` / √(mc_seeds) (NaN when not measured).

z = (ERM − theory) / √(se² + theory_mc_se²). A point *disagrees* when |z| > ``max_abs_z`` **and**
|ERM − theory| > ``rel_tol`` · theory (the second clause allows the O(1/√D) finite-size bias the
seed spread does not measure).

Reported but not enforced: α < ``min_alpha`` or λ < ``min_lam`` (where the paper reports that
theory and simulation may part: low SNR with low regularisation); replica points that did not
converge; ill-conditioned points, where the Monte Carlo s.d. of one draw (``test_error_mc_sd``)
exceeds ``max_theory_rel_sd`` × theory — near a fold of the RS equations the fixed point's
sensitivity to any perturbation diverges, to channel noise and to finite-D corrections alike
(docs/validation.md §1 (ii)); and points where the RS equations have two fixed points (``n_branches = 2``;
which one ERM reaches is then not predicted; ``theory_alt`` gives the other). For a point that did
not converge, ``reached_down``/``reached_up`` say how far the continuation from above/below
followed its branch (the folds around a window without a fixed point). ``erm_objective``
(α · J at the ERM minimum, J = 𝓛/n) against ``theory_objective`` (min 𝓛/D of the fixed point)
says whether ERM reached the RS ground state.

Ground state (slrpipe.analysis.ground): where the ERM experiment has several starts (inits, restarts,
optimisers), ``ground_mean`` ± ``ground_se`` is the same quantity at each seed's lowest-objective
run, ``ground_objective`` its α·J, and ``ground_starts`` how many seeds' ground states are not the
informed start — the replica theory predicts the global minimum, so this is its proper comparison;
the verdict stays on the informed start (the ground state equals it where there is one start).

Stopping: ``erm_converged`` and ``ground_converged`` are the fractions of the seeds whose informed
run and whose ground-state run (at the row's D) ended by the gradient test |∇J|₂ < tol rather than
at ``max_iter`` or on a stalled line search (NaN where the store has no ``converged``); the text
table notes a point where either is below 1 — its ERM values are then those of runs stopped short
of a minimum (docs/theory.md §13, "ERM's end points at α = 2") — and where both are below ½ a gap
gets the verdict "ERM not at a minimum" (slrpipe.analysis.verdict, rule 4).

D ladder (an ERM experiment with ``D: [D₁, D₂, …]``, a ``D`` dim in the store): the row's ERM and
ground-state values are those of the largest D; beside them each quantity's per-D seed means
(``ladder_D``, ``ladder_erm``/``_se``, ``ladder_ground_D``, ``ladder_ground``/``_se``; s.e. t-corrected) and its
extrapolation D → ∞ (slrpipe.analysis.ladder.point_ladder, rule of slrpipe.analysis.extrapolate):
``erm_limit`` ± ``erm_limit_se`` with its law, χ²/dof, p-value and ``z_limit`` against the theory
(the same for ``ground_limit``). The per-point verdict (slrpipe.analysis.verdict) then sees both
limits; the enforced check (``agrees``) stays on the largest D. :func:`slrpipe.analysis.render.format_table` adds a
second section with one line per ladder row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import xarray as xr

from slrpipe.analysis.distance import second_lowest
from slrpipe.analysis.ground import reference
from slrpipe.analysis.ladder import largest_D, point_ladder
from slrpipe.analysis.render import finite, format_table
from slrpipe.analysis.replica import ALPHA_RTOL, alpha_weights
from slrpipe.analysis.rows import RSB1_COLUMNS, Row, to_json
from slrpipe.analysis.rsb1 import gap_closed, gap_closed_se
from slrpipe.analysis.seeds import point_mean_se
from slrpipe.analysis.verdict import Compared, Measurement, Rsb1Evidence, Rule
from slrpipe.analysis.verdict import verdict as point_verdict
from slrpipe.io import write_text

#: the 1RSB columns of a row whose replica experiment solved 1RSB there (ansatz [rs, rsb1]; docs/theory.md §13):
#: s* (NaN unless a maximum of Φ(s) is bracketed, ``rsb1_bracketed``; slrpipe.theory.replica.rsb1.scan),
#: the s of the state reported and whether its Φ is only a lower bound of the ground-state energy
#: (no maximum bracketed), the checks of s* (``rsb1_checked``: Σ(s*) ≈ 0 by the closed form and by
#: s²Φ′, ``rsb1_star_sigma*``, and de/ds < 0, ``rsb1_star_de_ds``); at that state the objective
#: Φ ± s.e., test error of a typical minimum, 2 tr δQ (the predicted (1/D)|W_a − W_b|²) and the
#: overlaps m_k, m_v, q₁_k, q₁_v; RS on the same samples; the batch-means s.e. of the state's Φ,
#: test error, 2 tr δQ and overlaps and the finite-N₀ bias of the first two (K batches of the outer
#: samples, K − 1 degrees of freedom; ``rsb1_batches_converged`` of K; slrpipe.commands.rsb1_error);
#: RS and the state at 2N₀ (``rsb1_n0x2_*``, rsb1.n0_check);
#: the complexity Σ ± s.e. of the state reported (its scan row); the ERM reference (``rsb1_erm_ref``
#: says which for the test error: the ground state over starts, D → ∞ where there is a ladder, else
#: the informed start; the objective likewise, α·J, D → ∞ where there is a ladder; each ± s.e.), the
#: fraction of the RS–ERM gap that 1RSB closes, (1RSB − RS)/(ERM − RS), for both, NaN where the gap
#: itself is under 2 s.e. (``gap_z_*``: the gap in s.e., ERM's and, for the objective, RS's outer one
#: combined; slrpipe.analysis.rsb1.gap_closed) with its s.e. (``gap_closed_*_se``: 1RSB's batch-means
#: s.e. and ERM's, slrpipe.analysis.rsb1.gap_closed_se), and ERM's d₂ ± s.e., the
#: distance between the two lowest minima found on the same data (slrpipe.analysis.distance.second_lowest;
#: seed mean, D → ∞ where there is a ladder) — RS predicts 0, 1RSB 2 tr δQ (a diagnostic, not in the
#: verdict); ERM's ground-state overlaps ``erm_<o>`` ± ``erm_<o>_se`` (o in m_k, m_v, q_k, q_v; D → ∞
#: where fitted, ``erm_overlaps_ref``) beside 1RSB's; the N₀ drift (``rsb1_n0_drift_*``,
#: ``rsb1_mc_converged``; slrpipe.analysis.verdict)
#: (the fields of slrpipe.analysis.rows.Row, group rsb1: RSB1_COLUMNS)
#: RSB1_COLUMNS read from the replica node as they are (its ``rsb1_*`` variables, slrpipe.analysis.aggregate)
_RSB1 = RSB1_COLUMNS[: RSB1_COLUMNS.index("rsb1_batches_converged") + 1]
_THEORY = {
    "theory": "test_error",
    "theory_seed_mean": "test_error_seed_mean",
    "theory_mc_sd": "test_error_mc_sd",
    "theory_objective": "objective",
    "theory_alt": "test_error_alt",
    "reached_down": "alpha_reached_down",
    "reached_up": "alpha_reached_up",
    "replicon": "replicon",
    "rs_stable": "rs_stable",
    "prox_tie_fraction": "prox_tie_fraction",
}
#: default ``validation.max_theory_rel_sd``: MC s.d. of one draw above this fraction of the value
#: marks an ill-conditioned theory point (near a fold; docs/validation.md §1 (ii))
MAX_THEORY_REL_SD = 0.03


def max_theory_rel_sd(config: dict) -> float:
    """The ill-conditioning threshold in force: ``validation.max_theory_rel_sd`` of the config, else
    ``MAX_THEORY_REL_SD`` (shared with Fig. 3, which marks the same points)."""
    return (config.get("validation") or {}).get("max_theory_rel_sd", MAX_THEORY_REL_SD)


#: not interpolated: how far each continuation pass got towards a grid point (docs/theory.md §9)
_AT_GRID_ONLY = (
    "reached_down",
    "reached_up",
    "replicon",
    "rs_stable",  # + RS stability: per fixed point
    "prox_tie_fraction",
)


def _theory_at(rep: xr.Dataset, sigma, lam, alpha) -> dict:
    """Replica values at (σ, λ, α): floats interpolated in log α (slrpipe.analysis.replica); converged (both ends) and
    n_branches (max of both ends). NaN / False where the point is not covered."""
    out = {k: np.nan for k in _THEORY} | {"theory_converged": False, "n_branches": -1}
    uncovered = {k: v for k, v in out.items() if k not in ("prox_tie_fraction", "theory_seed_mean")}
    # the row's theory columns where the sweep has no value (σ, λ or α outside its grid)
    uncovered |= {"theory_n_samples": int(rep.attrs.get("n_samples", 0)), "prox_ties": np.nan, "theory_mc_se": np.nan}
    if sigma not in rep["sigma"].values or not np.isclose(rep["lam"].values, lam).any():
        return uncovered
    lam_sel = rep["lam"].values[np.isclose(rep["lam"].values, lam)][0]
    at = alpha_weights(rep["alpha"].values, alpha)
    if at is None:
        return uncovered
    idx, w = at
    pt = rep.sel(sigma=sigma, lam=lam_sel).isel(alpha=idx)
    for col, var in _THEORY.items():
        if var in pt:
            v = pt[var].values.astype(float)
            out[col] = float((1 - w) * v[0] + w * v[1])
    for col in _AT_GRID_ONLY:
        out[col] = out[col] if w == 0.0 else np.nan
    out["theory_converged"] = bool(pt["converged"].values.all()) if "converged" in pt else True
    out["n_branches"] = int(pt["n_branches"].values.max()) if "n_branches" in pt else 1
    # prox ties as a count among the theory's N samples (a Poisson count: none seen bounds the
    # tie rate below 3/N at 95 %; docs/theory.md §11)
    n = int(rep.attrs.get("n_samples", 0))
    tie = out.pop("prox_tie_fraction")
    out["theory_n_samples"], out["prox_ties"] = n, float(np.round(tie * n)) if np.isfinite(tie) and n else np.nan
    seed_mean = out.pop("theory_seed_mean")
    k = int(rep.attrs.get("mc_seeds", 1)) if np.isfinite(seed_mean) else 1
    if k > 1:
        out["theory"] = seed_mean
    out["theory_mc_se"] = out["theory_mc_sd"] / np.sqrt(k) if k > 1 else np.nan
    return out


def _rsb1_at(rep: xr.Dataset, sigma, lam, alpha) -> dict:
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


def _erm_overlaps(link, sigma, lam, alpha) -> dict:
    """ERM's ground-state overlaps at one point (``erm_<o>`` ± ``erm_<o>_se`` for the ERM names of
    ``OVERLAP_PAIRS``, ``erm_overlaps_ref``): D → ∞ (slrpipe.store.ladder.point_ladder) where the
    node has a ladder and the fit succeeds, else the seed mean ± s.e. at the largest D; NaN where
    the node has no ground state."""
    out = {f"erm_{e}{x}": np.nan for _, e in OVERLAP_PAIRS for x in ("", "_se")} | {"erm_overlaps_ref": ""}
    ladder = "D" in link.by_D.dims
    node = link.by_D if ladder else link.full
    for _, e in OVERLAP_PAIRS:
        name = f"{e}_ground"
        if name not in node:
            continue
        v = node[name].sel(sigma=sigma, lam=lam, alpha=alpha)
        fit = point_ladder(v).fit if ladder else None
        if fit is not None:
            out[f"erm_{e}"], out[f"erm_{e}_se"], out["erm_overlaps_ref"] = fit.limit, fit.limit_se, "ground D→∞"
        else:
            mean, se, _ = point_mean_se(link.full[name].sel(sigma=sigma, lam=lam, alpha=alpha))
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


def _rsb1_evidence(row: dict) -> Rsb1Evidence:
    """The 1RSB state of a row for the verdict (slrpipe.store.verdict, rule 5): bracketed or not, its
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


def _ground_at(full: xr.Dataset, sigma, lam, alpha, quantity: str) -> dict:
    """The ground state over the starts (slrpipe.analysis.ground) at one point: ``quantity`` mean ± s.e.
    over seeds, its objective α·J and how many of the seeds' ground states are not the informed start."""
    name = f"{quantity}_ground"
    if name not in full:
        return {"ground_mean": np.nan, "ground_se": np.nan, "ground_objective": np.nan, "ground_starts": ""}
    pt = full.sel(sigma=sigma, lam=lam, alpha=alpha)
    mean, se, _ = point_mean_se(pt[name])
    starts = [
        f"{i}-r{r}/{o}"
        for i, r, o in zip(pt["ground_init"].values, pt["ground_restart"].values, pt["ground_optimizer"].values)
        if i
    ]
    other = sum(not s.startswith("informed-") for s in starts)
    return {
        "ground_mean": mean,
        "ground_se": se,
        "ground_objective": float(alpha) * point_mean_se(pt["train_loss_ground"])[0],
        "ground_starts": f"{other}/{len(starts)} not informed",
    }


def _ladder_at(by_D: xr.Dataset, sigma, lam, alpha, quantity: str, theory: float, theory_se: float) -> dict:
    """The ``LADDER_COLUMNS`` of one (σ, λ, α) point of a node with a D dim: per-D seed means of
    the informed start's ``quantity`` and of the ground state's, and their D → ∞ limits."""
    tse = theory_se if np.isfinite(theory_se) else 0.0
    out = {}
    sources = {"erm": reference(by_D)[quantity]}
    if f"{quantity}_ground" in by_D:
        sources["ground"] = by_D[f"{quantity}_ground"]
    for who in ("erm", "ground"):
        pl = point_ladder(sources[who].sel(sigma=sigma, lam=lam, alpha=alpha)) if who in sources else None
        out["ladder_D" if who == "erm" else "ladder_ground_D"] = [int(d) for d in pl.D] if pl is not None else []
        out[f"ladder_{who}"] = [float(x) for x in pl.mean] if pl is not None else []
        out[f"ladder_{who}_se"] = [float(x) for x in pl.se] if pl is not None else []
        fit = pl.fit if pl is not None else None
        out.update(
            {
                f"{who}_limit": fit.limit if fit else np.nan,
                f"{who}_limit_se": fit.limit_se if fit else np.nan,
                f"{who}_law": fit.law if fit else "",
                f"{who}_chi2_dof": fit.chi2_dof if fit else np.nan,
                f"{who}_fit_p": fit.p_value if fit else np.nan,
                f"{who}_fit_ok": bool(fit.fit_ok) if fit else False,
            }
        )
        key = "z_limit" if who == "erm" else "z_ground_limit"
        out[key] = fit.z(theory, tse) if fit and np.isfinite(theory) else np.nan
    return out


@dataclass(frozen=True)
class _Criteria:
    """The config's ``validation`` settings that decide a row (module docstring): the agreement
    rule (``max_abs_z``, ``rel_tol``) and what is enforced (``min_alpha``, ``min_lam``,
    ``max_theory_rel_sd``)."""

    max_abs_z: float
    rel_tol: float
    min_alpha: float
    min_lam: float
    max_theory_rel_sd: float

    @classmethod
    def of(cls, config: dict) -> _Criteria:
        v = config.get("validation", {})
        return cls(
            v.get("max_abs_z", 4.0),
            v.get("rel_tol", 0.05),
            v.get("min_alpha", 0.0),
            v.get("min_lam", 0.0),
            max_theory_rel_sd(config),
        )


class _Linked(NamedTuple):
    """A replica experiment and the ERM experiment it names, as read from the store."""

    name: str  # the replica experiment's
    rep: xr.Dataset  # replica node
    by_D: xr.Dataset  # ERM node, with its D dim where it has a ladder
    full: xr.Dataset  # ERM at the largest D, every start
    erm: xr.Dataset  # ERM at the largest D, informed start


def compare(tree: xr.DataTree, config: dict) -> list[Row]:
    """Rows of the comparison table (see module doc) for every replica experiment with an ERM link."""
    crit = _Criteria.of(config)
    rows = []
    for name, exp in (config.get("replica") or {}).items():
        if not exp.get("erm") or exp["erm"] not in tree.get("erm", {}):
            continue
        by_D = tree[f"erm/{exp['erm']}"].to_dataset()
        full = largest_D(by_D)  # a D ladder: the row's values at its largest D, the ladder beside them
        # the informed start; the ground state over all starts beside it
        link = _Linked(name, tree[f"replica/{name}"].to_dataset(), by_D, full, reference(full))
        for sigma in link.erm["sigma"].values:
            for lam in link.erm["lam"].values:
                for alpha in link.erm["alpha"].values:
                    row = _compare_point(link, sigma, lam, alpha, crit)
                    if row is not None:
                        rows.append(row)
    return rows


def _compare_point(link: _Linked, sigma, lam, alpha, crit: _Criteria) -> Row | None:
    """The row (``COLUMNS``, plus ``LADDER_COLUMNS`` for a ladder and ``RSB1_COLUMNS`` where the
    replica experiment solved 1RSB) of one (σ, λ, α) point; None where ERM has no value there."""
    pt = link.erm.sel(sigma=sigma, lam=lam, alpha=alpha)
    test, _, k_test = point_mean_se(pt["test_error"])
    quantity = "test_error_pop" if "test_error_pop" in pt and int(pt["test_error_pop"].count()) else "test_error"
    mean, se, k = point_mean_se(pt[quantity])
    if k == 0 and k_test == 0:
        return None
    obj = float(alpha) * point_mean_se(pt["train_loss"])[0] if "train_loss" in pt else np.nan
    th = _theory_at(link.rep, str(sigma), float(lam), float(alpha))
    ground = _ground_at(link.full, sigma, lam, alpha, quantity)
    converged = point_mean_se(pt["converged"])[0] if "converged" in pt else np.nan
    at = link.full.sel(sigma=sigma, lam=lam, alpha=alpha)
    ground_converged = point_mean_se(at["converged_ground"])[0] if "converged_ground" in at else np.nan
    theory, sd = th["theory"], th["theory_mc_se"]
    err = np.sqrt(se**2 + (sd if np.isfinite(sd) else 0.0) ** 2)
    z = (mean - theory) / err if err > 0 else np.nan
    rel = (mean - theory) / theory if theory else np.nan
    th["ill_conditioned"] = bool(th["theory_mc_sd"] > crit.max_theory_rel_sd * abs(theory))  # NaN: False
    enforced = bool(
        np.isfinite(theory)
        and th["theory_converged"]
        and th["n_branches"] <= 1
        and not th["ill_conditioned"]
        and alpha >= crit.min_alpha
        and lam >= crit.min_lam
        and k > 1
    )
    ok = bool(abs(z) <= crit.max_abs_z or abs(rel) <= crit.rel_tol) if np.isfinite(theory) else False
    lad = _ladder_at(link.by_D, sigma, lam, alpha, quantity, theory, sd) if "D" in link.by_D.dims else {}
    rsb1 = _rsb1_at(link.rep, str(sigma), float(lam), float(alpha)) if "rsb1_objective" in link.rep else {}
    th["verdict"] = ""  # below, once the 1RSB columns are known
    row = dict(
        experiment=link.name,
        sigma=str(sigma),
        lam=float(lam),
        alpha=float(alpha),
        D=int(pt["D"].max()) if "D" in pt else -1,
        n_seeds=k,
        erm_quantity=quantity,
        erm_mean=mean,
        erm_se=se,
        erm_test=test,
        erm_objective=obj,
        **ground,
        erm_converged=converged,
        ground_converged=ground_converged,
        **th,
        z=z,
        rel_diff=rel,
        enforced=enforced,
        agrees=ok,
        **lad,
    )
    if rsb1:
        row.update(rsb1)
        limit = _objective_limit(link.by_D, sigma, lam, alpha) if "D" in link.by_D.dims else (np.nan, np.nan)
        row.update(_rsb1_gap(row, limit))
        row.update(_erm_distance(link.by_D, sigma, lam, alpha))
        row.update(_erm_overlaps(link, sigma, lam, alpha))
        row.update(_n0_drift(row))
    evidence = _rsb1_evidence(row) if rsb1 else None
    row["verdict"] = _verdict_at(th, mean, se, ground, lad, crit, evidence, (converged, ground_converged))
    return Row(**row)


def _verdict_at(
    th: dict, mean: float, se: float, ground: dict, lad: dict, crit: _Criteria, rsb1=None, converged=(None, None)
) -> str:
    """The per-point verdict (slrpipe.analysis.verdict) from the row's theory columns ``th``, the
    informed start's ``mean`` ± ``se`` at the largest D, the ``ground`` state columns, where
    the experiment has a D ladder the D → ∞ limits of both (``lad``; else None: not measured), the
    1RSB state ``rsb1`` (:class:`~slrpipe.analysis.verdict.Rsb1Evidence`; None: not solved) and the fractions
    ``converged`` = (erm_converged, ground_converged) of the row."""
    return point_verdict(
        th["theory"],
        th["theory_mc_se"],
        Measurement(mean, se, lad.get("erm_limit"), lad.get("erm_limit_se")),
        Measurement(ground["ground_mean"], ground["ground_se"], lad.get("ground_limit"), lad.get("ground_limit_se")),
        rs_stable=th["rs_stable"],
        rsb1=rsb1,
        converged=converged,
        rule=Rule(crit.max_abs_z, crit.rel_tol),
    )


def failures(rows: list[Row]) -> list[Row]:
    """The rows of :func:`compare` that are enforced and disagree (the ones that fail the check)."""
    return [r for r in rows if r.enforced and not r.agrees]


class ValidationFailed(RuntimeError):
    """ERM disagrees with the replica theory where the theory is expected to hold."""


def validate_store(store, config: dict, out) -> list[Row]:
    """Compare, write ``out`` (text table) and ``out``.json (rows); raise on enforced disagreement.

    The table is written in both cases (a failed check leaves ``<out>.failed.txt`` instead of
    ``out``, so Snakemake sees no output and reruns the check next time).

    Raises:
        ValidationFailed: one line listing the disagreeing points, when ``validation.fail`` is true.
    """
    from pathlib import Path

    from slrpipe.analysis.aggregate import open_store

    rows = compare(open_store(store), config)
    table = format_table(rows)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text(to_json(rows), out.with_suffix(".json"))
    v = config.get("validation", {})
    bad = failures(rows)
    if bad and v.get("fail", True):
        write_text(table + "\n", out.with_suffix(".failed.txt"))
        raise ValidationFailed(
            f"{len(bad)} of {sum(r.enforced for r in rows)} enforced ERM points disagree with the replica theory "
            f"(|z| > {v.get('max_abs_z', 4.0)} and relative difference > {v.get('rel_tol', 0.05)}); table in "
            f"{out.with_suffix('.failed.txt')}: "
            + "; ".join(
                f"{r.experiment} {r.sigma} λ={r.lam:g} α={r.alpha:g} "
                f"(ERM {r.erm_mean:.4f} ± {r.erm_se:.4f} vs theory {r.theory:.4f})"
                for r in bad
            )
        )
    out.with_suffix(".failed.txt").unlink(missing_ok=True)  # a failure of an earlier run
    write_text(table + "\n", out)
    return rows
