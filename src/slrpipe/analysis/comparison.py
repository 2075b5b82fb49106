"""ERM vs replica theory: one row per (experiment, σ, λ, α) and a verdict.

For each replica experiment that names an ERM experiment, every ERM point is compared with the
replica prediction at the same (σ, λ, α) — linearly interpolated in log α off the replica grid
(slrpipe.analysis.replica). :func:`compare` returns typed rows (slrpipe.analysis.rows.Row);
:func:`slrpipe.analysis.validation.validate_store` writes them (``results/validation.json``) and
their text table (slrpipe.analysis.render, ``results/validation.txt``) and fails on enforced
disagreement. The 1RSB columns of a row are :mod:`slrpipe.analysis.rsb1_columns`'.

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

from slrpipe.analysis.ground import reference
from slrpipe.analysis.ladder import largest_D, point_ladder
from slrpipe.analysis.replica import alpha_weights
from slrpipe.analysis.rows import Row
from slrpipe.analysis.rsb1_columns import rsb1_at, rsb1_columns, rsb1_evidence
from slrpipe.analysis.seeds import point_mean_se
from slrpipe.analysis.verdict import Measurement, Rule
from slrpipe.analysis.verdict import verdict as point_verdict

#: the theory columns of a row and the replica node's variables they are read from
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
    rsb1 = rsb1_at(link.rep, str(sigma), float(lam), float(alpha)) if "rsb1_objective" in link.rep else {}
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
        row.update(rsb1_columns(row, link.by_D, link.full, sigma, lam, alpha))
    evidence = rsb1_evidence(row) if rsb1 else None
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
