"""Zero-temperature 1RSB ground state of ridge ERM at one (σ, λ, α), beside RS on the same samples.

Reads the RS sweep file ``--rs`` (``slrpipe replica``) for its fixed point at (λ, α), solves RS
again on the 1RSB outer samples (soft then hard channel, ``rsb1.rs_on_samples``), scans the Parisi
parameter from ``--s-grid`` by the zero-temperature rule (``rsb1.rsb1_ground_state``,
slrpipe.theory.replica.rsb1.scan: s* = argmax Φ where a maximum is bracketed, extending the grid by
``--s-extend`` up to ``--s-max-rows`` solves, else a lower bound; docs/theory.md §13). Writes one
netCDF file (:func:`dataset`).
"""

from __future__ import annotations

import logging
import math

import numpy as np
import xarray as xr

from slrpipe.io import read_netcdf, write_netcdf
from slrpipe.job_args import add_arguments as add_record_arguments
from slrpipe.job_args import from_namespace, text
from slrpipe.jobs import Rsb1Job
from slrpipe.provenance import provenance

log = logging.getLogger(__name__)

#: the names changed on the way: ``sigma`` is σ's coordinate, so the complexity Σ is ``complexity``
RENAMED = {
    "sigma": "complexity",
    "sigma_se": "complexity_se",
    "energy_direct": "energy",
    "energy_direct_se": "energy_se",
}
#: RS on the same outer samples (hard channel)
RS_KEYS = ("objective", "test_error", "m_k", "q_k", "V_k", "m_v", "q_v", "V_v", "residual", "converged")


def scan_names() -> tuple[str, ...]:
    """The per-s quantities of the scan stored as ``scan_<name>`` (``rsb1.ground.STORED``).
    Imported when a job runs, not with this module: the CLI imports every command module at
    start-up, and importing the 1RSB theory (JAX, the prox) there would slow every job."""
    from slrpipe.theory.replica.rsb1.ground import STORED

    return STORED


def add_arguments(p) -> None:
    """The options of ``slrpipe rsb1`` (added to its subparser ``p``): the fields of
    :class:`~slrpipe.jobs.Rsb1Job` and ``--out``."""
    add_record_arguments(p, Rsb1Job)
    p.add_argument("--out", required=True, help="output netCDF path")


def rs_start(path, lam: float, alpha: float) -> dict:
    """The RS sweep's order parameters at (λ, α) (``solver.STATE`` keys) from its file ``path``.

    Raises:
        ValueError: (λ, α) not on the sweep's grid (one line naming the file and the grid).
    """
    from slrpipe.theory.replica.solver import STATE

    ds = read_netcdf(path)
    lams, alphas = ds["lam"].values, ds["alpha"].values
    i, j = np.flatnonzero(np.isclose(lams, lam, rtol=1e-12)), np.flatnonzero(np.isclose(alphas, alpha, rtol=1e-12))
    if not i.size or not j.size:
        raise ValueError(f"rs: (λ, α) = ({lam}, {alpha}) not on the grid of {path}: λ {list(lams)}, α {list(alphas)}")
    pt = ds.isel(lam=int(i[0]), alpha=int(j[0]))
    return {k: float(pt[k]) for k in STATE}


def unsolved(job: Rsb1Job) -> dict:
    """The rows of a point with no RS fixed point to start from (the sweep did not converge there):
    every number NaN, nothing converged, so the store and the validation read it as not solved
    instead of the job failing. Returns ``{"rs": ..., "rows": ...}`` as :func:`record` does."""
    nan = math.nan
    rows = [{**dict.fromkeys(scan_names(), nan), "s": s, "converged": False} for s in job.s_grid]
    rs = {**dict.fromkeys(RS_KEYS, nan), "converged": False, "train_loss_se": nan}
    return {"rs": rs, "rows": rows, "n_outer": job.n_outer, "n_inner": job.n_inner}


#: the point variables at the state reported: (name, scan summary name)
REPORTED = (
    ("objective", "phi"),
    ("objective_se", "phi_se"),
    ("test_error", "test_error"),
    ("dq_k", "dq_k"),
    ("dq_v", "dq_v"),
    ("m_k", "m_k"),
    ("m_v", "m_v"),
    ("q1_k", "q1_k"),
    ("q1_v", "q1_v"),
)
#: RS and the state reported solved again at 2N₀ outer samples (``--n0-check``), stored as ``n0x2_<name>``
N0X2 = ("rs_objective", "rs_test_error", "objective", "test_error", "converged")
#: the checks of s* (slrpipe.theory.replica.rsb1.scan.StarCheck), stored as ``star_<name>``
CHECKS = ("sigma", "sigma_se", "sigma_fd", "sigma_fd_se", "de_ds")


def record(ground) -> dict:
    """The plain record of a ``rsb1.GroundState`` that :func:`dataset` writes: rs, rows (:func:`scan_names`
    + s and the rule's ``FLAGS``), the scalars of the rule (bracketed, lower_bound, branch_lost,
    s_star, s_reported, refine, stop, n_dropped, the ``CHECKS`` and checked) and the reported
    state's row, de/ds and on_curve per row."""
    from slrpipe.theory.replica.rsb1.scan import de_ds, on_curve

    res = ground.scan
    rows = ground.rows
    rep = res.reported
    out = {"rs": ground.rs, "rows": rows, "n_outer": ground.n_outer, "n_inner": ground.n_inner}
    out.update(
        bracketed=res.bracketed,
        lower_bound=res.lower_bound,
        s_star=res.s_star,
        s_reported=rep["s"] if rep is not None else math.nan,
        refine=res.refine,
        stop=res.stop,
        n_dropped=len(res.dropped),
        branch_lost=any(r.get("off_branch", False) for r in res.rows),
        reported=rep,
        checked=res.bracketed and res.check.ok,
        de_ds=de_ds(res.rows),
        on_curve=on_curve(res.rows),
        **_legendre(res.legendre),
        **{f"star_{k}": getattr(res.check, k) for k in CHECKS},
    )
    return out


#: the two estimators of Σ compared (slrpipe.theory.replica.rsb1.estimators.Legendre): per row
#: (``scan_<name>``) and per point
LEGENDRE = ("sigma_chord", "sigma_chord_se", "sigma_chord_z", "sigma_chi2", "sigma_dof", "sigma_scale")


def _legendre(leg) -> dict:
    """:data:`LEGENDRE` of a ``Legendre``, as the record holds them."""
    return dict(zip(LEGENDRE, (leg.sigma_chord, leg.sigma_chord_se, leg.z, leg.chi2, leg.dof, leg.scale)))


def dataset(job: Rsb1Job, res: dict) -> xr.Dataset:
    """The result of one point as an ``xarray.Dataset`` (``res``: :func:`record` or :func:`unsolved`).

    Dims: s (the s solved: the grid, its extensions and the solves that refine s*, ascending).
    Variables: ``scan_*`` on s (:func:`scan_names`: Φ(s) ± s.e., the complexity Σ(s) ± s.e. (closed
    form), the typical-state energy e(s) ± s.e. and test error, δq, m, q₁, V per column, the median
    inner ESS, residual, converged, N₁ biases; ``scan_refined``: a solve refining s*;
    ``scan_off_branch``: a row off the dominant branch, unused by the rule; ``scan_unphysical``: a
    converged row on the branch with de/ds > 0 (Σ(e) convex there), unused by the rule;
    ``scan_de_ds``: de/ds by finite differences over converged rows; ``scan_on_curve``: drawn on the complexity
    curve Σ(e), converged with de/ds < 0 and Σ ≥ 0; ``scan_sigma_chord`` ± ``scan_sigma_chord_se``:
    Σ from the difference of Φ over the interval to the next row the rule uses, and
    ``scan_sigma_chord_z``: the closed form's disagreement with it there in s.e.,
    slrpipe.theory.replica.rsb1.estimators); ``sigma_chi2`` over ``sigma_dof`` intervals and
    ``sigma_scale``, the factor on every s.e. of Σ the rule reads; ``rs_*`` scalars
    (:data:`RS_KEYS`, RS on the same samples, hard channel; ``rs_objective_se`` its outer Monte
    Carlo s.e.); the rule's scalars
    (slrpipe.theory.replica.rsb1.scan): ``bracketed`` (a maximum of Φ bracketed: s* found),
    ``lower_bound`` (not bracketed: the objective is only a lower bound of e_gs), ``branch_lost``
    (the continuation left the dominant branch: rows set off it), ``s_star`` (NaN
    where not bracketed), ``s_reported``, ``checked`` (Σ(s*) ≈ 0 by both estimators and de/ds < 0)
    and ``star_*`` (:data:`CHECKS`); at the state reported (s*, else the row of largest Φ; NaN where
    no row converged): ``objective`` (Φ = e_gs, or its lower bound) ± ``objective_se``,
    ``test_error`` (a typical minimum), ``dq_k``, ``dq_v``, ``distance`` = 2(δq_k + δq_v) (the
    predicted (1/D)|W_a − W_b|² between two minima), ``m_k``, ``m_v``, ``q1_k``, ``q1_v``,
    ``converged``. Coordinates: σ, the data law, λ, α; attributes: the samples, solver and scan
    options, ``refine`` (how s* was placed), ``stop`` (why the scan ended), ``n_dropped`` (saddles
    solved at an s that holds one of smaller Φ); ``n0x2_*`` (:data:`N0X2`): RS and the state reported
    (at s_reported, from that state) on 2N₀ outer samples (:func:`doubled`), NaN unless
    ``n0_check``.
    """
    rows = res["rows"]
    nan = math.nan
    data = {f"scan_{RENAMED.get(k, k)}": ("s", np.array([r[k] for r in rows], float)) for k in scan_names()}
    data["scan_converged"] = ("s", np.array([bool(r["converged"]) for r in rows]))
    data["scan_refined"] = ("s", np.array([bool(r.get("refined", False)) for r in rows]))
    data["scan_off_branch"] = ("s", np.array([bool(r.get("off_branch", False)) for r in rows]))
    data["scan_unphysical"] = ("s", np.array([bool(r.get("unphysical", False)) for r in rows]))
    data["scan_de_ds"] = ("s", np.asarray(res.get("de_ds", np.full(len(rows), nan)), float))
    data["scan_on_curve"] = ("s", np.asarray(res.get("on_curve", np.zeros(len(rows), bool)), bool))
    for k in LEGENDRE[:3]:
        data[f"scan_{k}"] = ("s", np.asarray(res.get(k, np.full(len(rows), nan)), float))
    data.update({f"rs_{k}": ((), res["rs"][k]) for k in RS_KEYS})
    data["rs_objective_se"] = ((), job.alpha * res["rs"]["train_loss_se"])  # the train loss's outer MC s.e.
    rep = res.get("reported")
    data.update({name: ((), float(rep[key]) if rep else nan) for name, key in REPORTED})
    data["distance"] = ((), 2.0 * (float(rep["dq_k"]) + float(rep["dq_v"])) if rep else nan)
    data["converged"] = ((), bool(rep["converged"]) if rep else False)
    data.update(
        bracketed=((), bool(res.get("bracketed", False))),
        lower_bound=((), bool(res.get("lower_bound", False))),
        branch_lost=((), bool(res.get("branch_lost", False))),
        checked=((), bool(res.get("checked", False))),
        s_star=((), float(res.get("s_star", nan))),
        sigma_chi2=((), float(res.get("sigma_chi2", nan))),
        sigma_dof=((), int(res.get("sigma_dof", 0))),
        sigma_scale=((), float(res.get("sigma_scale", nan))),
        s_reported=((), float(res.get("s_reported", nan))),
        **{f"star_{k}": ((), float(res.get(f"star_{k}", nan))) for k in CHECKS},
        **{f"n0x2_{k}": ((), float(res.get("n0x2", {}).get(k, nan))) for k in N0X2},
    )
    L = next(iter(job.L))
    s = np.array([r["s"] for r in rows], float)
    coords = dict(s=s, sigma=job.sigma, model=job.model, nu=job.nu, L=L, delta=job.delta, lam=job.lam, alpha=job.alpha)
    attrs = dict(
        theory="one-step replica-symmetry breaking, zero temperature (docs/theory.md §13)",
        rule="e_gs = max_s Φ(s) = Φ(s*), Σ(s*) = 0 (slrpipe.theory.replica.rsb1.scan)",
        refine=res.get("refine", ""),
        stop=res.get("stop", "not solved"),
        n_dropped=int(res.get("n_dropped", 0)),
        n_outer=res["n_outer"],
        n_inner=res["n_inner"],
        seed=job.seed,
        inner_seed=job.inner_seed,
        s_grid=list(job.s_grid),
        s_extend=job.s_extend,
        s_max_rows=job.s_max_rows,
        frac=job.frac,
        tol=job.tol,
        max_iter=job.max_iter,
        rs_start=job.rs,
    )
    return xr.Dataset(data, coords=coords, attrs=attrs)


def doubled(task, job: Rsb1Job, init: dict, reported: dict | None, options) -> dict:
    """RS and the 1RSB state reported solved again on 2N₀ outer samples (a draw of 2N₀ with the
    point's seeds), at the reported s from the reported state: ``N0X2`` (the state's NaN
    where none is reported), for the convergence in N₀ (slrpipe.analysis.verdict)."""
    from slrpipe.theory.replica import rsb1

    draw = rsb1.Rsb1Draw(2 * job.n_outer, job.n_inner, job.seed, job.inner_seed)
    fields, inner = draw.samples(task)
    _, hard = rsb1.rs_on_samples(task, job.lam, job.alpha, fields, init)
    out = {"rs_objective": hard["objective"], "rs_test_error": hard["test_error"]}
    out |= {"objective": math.nan, "test_error": math.nan, "converged": False}
    if reported is not None:
        x = np.array([reported[k] for k in rsb1.STATE1])
        r = rsb1.solve_rsb1(task, job.lam, job.alpha, reported["s"], samples=(fields, inner), init=x, options=options)
        out |= {"objective": r["phi"], "test_error": r["test_error"], "converged": bool(r["converged"])}
    log.info("at 2N₀ = %d: %s", 2 * job.n_outer, out)
    return out


def run(args) -> int:
    """Run ``slrpipe rsb1`` on parsed arguments; returns the exit status (0 on success).

    Raises:
        ValueError: a bad parameter, or (λ, α) not on the RS sweep's grid (the CLI prints it as one
        line and exits with 2)."""
    from slrpipe.setting import Setting
    from slrpipe.theory.replica import ReplicaTask, rsb1

    job = from_namespace(Rsb1Job, args)
    if len(job.L) != 1:
        raise ValueError(f"L: the replica solver needs a fixed length, got {text(job.L)}")
    task = ReplicaTask(job.sigma, Setting(job.model, job.nu, job.L, job.delta))
    draw = rsb1.Rsb1Draw(job.n_outer, job.n_inner, job.seed, job.inner_seed)
    options = rsb1.Rsb1Options(tol=job.tol, max_iter=job.max_iter)
    init = rs_start(job.rs, job.lam, job.alpha)
    if not all(math.isfinite(v) for v in init.values()):
        log.warning("no RS fixed point at (λ, α) = (%g, %g) in %s: 1RSB not solved (NaN)", job.lam, job.alpha, job.rs)
        ds = dataset(job, unsolved(job))
        ds.attrs.update(provenance(command="rsb1", nu_text=text(job.nu), unsolved="no RS fixed point to start from"))
        write_netcdf(ds, args.out)
        return 0
    fields, _ = draw.samples(task)
    _, hard = rsb1.rs_on_samples(task, job.lam, job.alpha, fields, init)
    log.info(
        "RS on the 1RSB samples (hard channel): objective %.6f test error %.5f converged %s",
        hard["objective"],
        hard["test_error"],
        hard["converged"],
    )
    scan = rsb1.ScanOptions(extend=job.s_extend, max_rows=job.s_max_rows)
    res = rsb1.rsb1_ground_state(
        task, job.lam, job.alpha, draw=draw, s_grid=job.s_grid, frac=job.frac, rs=hard, options=options, scan=scan
    )
    rec = record(res)
    if job.n0_check:
        rec["n0x2"] = doubled(task, job, init, rec["reported"], options)
    ds = dataset(job, rec)
    ds.attrs.update(provenance(command="rsb1", nu_text=text(job.nu)))
    write_netcdf(ds, args.out)
    return 0
