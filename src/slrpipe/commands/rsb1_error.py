"""The batch-means Monte Carlo error of one 1RSB point's reported state (docs/theory.md §13).

Reads a ``slrpipe rsb1`` result (``--rsb1``), takes the state it reports (s* where a maximum of Φ
is bracketed, else the row of largest Φ, a lower bound; slrpipe.theory.replica.rsb1.scan), draws the same outer and inner
samples, cuts the outer samples into ``--batches`` K antithetic-closed batches and solves the 1RSB
saddle on each at the reported s from the reported state
(slrpipe.theory.replica.batch_means). Writes one netCDF file (:func:`dataset`): the per-batch values
and the standard error sd/√K and finite-N₀ bias of the objective Φ, the test error, 2 tr δQ and the overlaps m_k, m_v, q₁_k, q₁_v.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import xarray as xr

from slrpipe.io import read_netcdf, write_netcdf
from slrpipe.job_args import add_arguments as add_record_arguments
from slrpipe.job_args import from_namespace
from slrpipe.jobs import Rsb1ErrorJob
from slrpipe.provenance import provenance

log = logging.getLogger(__name__)

#: quantities of the reported state whose error is measured: (name in the rsb1 file, solve_rsb1 key)
QUANTITIES = (
    ("objective", "phi"),
    ("test_error", "test_error"),
    ("distance", "distance"),
    ("m_k", "m_k"),
    ("m_v", "m_v"),
    ("q1_k", "q1_k"),
    ("q1_v", "q1_v"),
)
#: the two columns of the 1RSB state, in slrpipe.theory.replica.rsb1.STATE1 order (m, q₀, δq, V each)
_COLUMNS = ("k", "v")
#: the coordinates of a point, copied from its rsb1 file
COORDS = ("sigma", "model", "nu", "L", "delta", "lam", "alpha")


def add_arguments(p) -> None:
    """The options of ``slrpipe rsb1-error`` (added to its subparser ``p``): the fields of
    :class:`~slrpipe.jobs.Rsb1ErrorJob` and ``--out``."""
    add_record_arguments(p, Rsb1ErrorJob)
    p.add_argument("--out", required=True, help="output netCDF path")


def start_state(ds: xr.Dataset, s: float) -> np.ndarray:
    """(8,) state (``rsb1.STATE1`` order) of the converged scan row nearest s in ``ds`` (a
    ``slrpipe rsb1`` result): the reported row itself (s* is a row of the scan).

    Raises:
        ValueError: no converged row.
    """
    ok = ds["scan_converged"].values.astype(bool)
    if not ok.any():
        raise ValueError("rsb1: no converged row of the s scan to start from")
    rows = np.flatnonzero(ok)
    i = int(rows[np.argmin(np.abs(ds["s"].values[rows] - s))])
    x = []
    for c in _COLUMNS:
        m, q1, dq, V = (float(ds[f"scan_{k}_{c}"].values[i]) for k in ("m", "q1", "dq", "V"))
        x += [m, q1 - dq, dq, V]
    return np.array(x)


def dataset(src: xr.Dataset, job: Rsb1ErrorJob, s: float, values: dict, full: dict) -> xr.Dataset:
    """The errors of one point as an ``xarray.Dataset``.

    Dims: batch (K). Variables: ``batch_<q>`` (K,) the values solved on each batch and
    ``batch_converged``, and for q in objective (Φ), test_error, distance (2 tr δQ), m_k, m_v, q1_k, q1_v: ``<q>_batch_se``
    (sd/√K: the s.e. of the full-sample value, K − 1 degrees of freedom) and ``<q>_batch_bias``
    ((mean − full)/(K − 1): its finite-N₀ bias where that scales as 1/N₀); ``batches_converged``.
    Coordinates: the point's (σ, the data law, λ, α); attributes: s, K, the solver options, the rsb1
    file. All NaN (and 0 converged) where the point reports no state.
    """
    from slrpipe.theory.replica.batch_means import summary

    k = job.batches
    data = {}
    for name, _ in QUANTITIES:
        v = values.get(name, np.full(k, math.nan))
        st = summary(v, full.get(name, math.nan))
        data[f"batch_{name}"] = ("batch", v)
        data[f"{name}_batch_se"] = ((), st["se"])
        data[f"{name}_batch_bias"] = ((), st["bias"])
    conv = values.get("converged", np.zeros(k))
    data["batch_converged"] = ("batch", conv.astype(bool))
    data["batches_converged"] = ((), int(conv.sum()))
    coords = {c: src[c].values.item() for c in COORDS}
    attrs = dict(
        theory="batch-means Monte Carlo error of the 1RSB state reported (docs/theory.md §13)",
        s=s,
        batches=k,
        tol=job.tol,
        max_iter=job.max_iter,
        rsb1=job.rsb1,
        n_outer=int(src.attrs["n_outer"]),
        n_inner=int(src.attrs["n_inner"]),
        seed=int(src.attrs["seed"]),
        inner_seed=int(src.attrs["inner_seed"]),
    )
    return xr.Dataset(data, coords={**coords, "batch": np.arange(k)}, attrs=attrs)


def run(args) -> int:
    """Run ``slrpipe rsb1-error`` on parsed arguments; returns the exit status (0 on success).

    Raises:
        ValueError: K < 2 or not dividing N₀/2 (the CLI prints it as one line and exits with 2)."""
    from slrpipe.setting import Setting
    from slrpipe.theory.replica import ReplicaTask, rsb1
    from slrpipe.theory.replica.batch_means import antithetic_batches, batch_values, subset

    job = from_namespace(Rsb1ErrorJob, args)
    src = read_netcdf(job.rsb1)
    n_outer = int(src.attrs["n_outer"])
    antithetic_batches(n_outer, job.batches)  # the sizes, before any solve
    rep = src
    s = float(rep["s_reported"])
    if not math.isfinite(s):
        log.warning("%s reports no 1RSB state: no error to measure (NaN)", job.rsb1)
        ds = dataset(src, job, s, {}, {})
        ds.attrs.update(provenance(command="rsb1-error", unsolved="no 1RSB state reported"))
        write_netcdf(ds, args.out)
        return 0
    c = {k: src[k].values.item() for k in COORDS}
    setting = Setting(str(c["model"]), float(c["nu"]), int(c["L"]), float(c["delta"]))
    task = ReplicaTask(str(c["sigma"]), setting)
    draw = rsb1.Rsb1Draw(n_outer, int(src.attrs["n_inner"]), int(src.attrs["seed"]), int(src.attrs["inner_seed"]))
    fields, inner = draw.samples(task)
    x0 = start_state(src, s)
    options = rsb1.Rsb1Options(tol=job.tol, max_iter=job.max_iter)
    log.info("%s: %d batches of %d outer samples at s = %g", job.rsb1, job.batches, n_outer // job.batches, s)

    def solve(idx):
        out = rsb1.solve_rsb1(
            task, c["lam"], c["alpha"], s, samples=(subset(fields, idx), subset(inner, idx)), init=x0, options=options
        )
        return {**out, "distance": 2.0 * (out["dq_k"] + out["dq_v"])}

    keys = [key for _, key in QUANTITIES]
    raw = batch_values(solve, n_outer, job.batches, (*keys, "converged"))
    values = {name: raw[key] for name, key in QUANTITIES} | {"converged": raw["converged"]}
    full = {name: float(rep[name]) for name, _ in QUANTITIES}
    ds = dataset(src, job, s, values, full)
    for name, _ in QUANTITIES:
        log.info(
            "%s: full %.5f, batches %s, s.e. %.5f, bias %.5f",
            name,
            full[name],
            np.array2string(values[name], precision=5),
            float(ds[f"{name}_batch_se"]),
            float(ds[f"{name}_batch_bias"]),
        )
    ds.attrs.update(provenance(command="rsb1-error"))
    write_netcdf(ds, args.out)
    return 0
