"""Combine the per-job result files into one store, ``results/slr.zarr`` (zarr v3, one DataTree).

Layout (each node an ``xarray.Dataset``; parameters as dimensions/coordinates, experiment settings
and provenance as attributes):

- ``/population/<exp>``: dims (sigma, nu) — optimal population risk and the optimal overlaps
  (model.md §4); sigma includes "bayes".
- ``/erm/<exp>``: dims (sigma, lam, alpha, seed) — ERM metrics of each run (model.md §5), plus
  ``test_error_pop``, the population formula evaluated at the learned overlaps (computed here, so a
  theory edit does not rerun training).
- ``/replica/<exp>``: dims (sigma, lam, alpha) — replica prediction (model.md §6), plus
  ``test_error_opt_lam`` / ``lam_opt`` (minimum over the λ grid) and ``bayes_optimal_*`` (dim alpha).

The root carries the config (JSON), package version, git commit and creation time.
"""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path

import numpy as np
import xarray as xr

from slrpipe.io import write_zarr
from slrpipe.provenance import provenance

log = logging.getLogger(__name__)


def _open(path) -> xr.Dataset:
    with xr.open_dataset(path, engine="h5netcdf") as ds:
        return ds.load()


def _scalars(ds: xr.Dataset) -> xr.Dataset:
    """Data variables without dimensions, coordinates dropped (the job table supplies the index)."""
    ds = ds.reset_coords(drop=True)
    return ds[[v for v in ds.data_vars if ds[v].ndim == 0]]


def population_node(files) -> xr.Dataset:
    parts = []
    for f in files:
        ds = _open(f)
        sigma = str(ds["sigma"].values) if "sigma" in ds.coords else Path(f).stem
        ds = ds.reset_coords(drop=True).expand_dims(sigma=[sigma])
        parts.append(ds)
    out = xr.concat(parts, dim="sigma", combine_attrs="drop_conflicts")
    return out


def erm_node(files, jobs: dict) -> xr.Dataset:
    parts = []
    for f in files:
        j = jobs[f]
        ds = _scalars(_open(f))
        ds = ds.assign(D=j["D"], n=j["n"])
        for k in ("D", "n"):
            ds[k] = ds[k].astype("int64")
        parts.append(ds.expand_dims(sigma=[j["sigma"]], lam=[float(j["lam"])],
                                    alpha=[float(j["alpha"])], seed=[int(j["init_seed"])]))
    out = xr.combine_by_coords(parts, combine_attrs="drop")
    return out.sortby(["lam", "alpha", "seed"])


def add_population_prediction(node: xr.Dataset, exp: dict) -> xr.Dataset:
    """``test_error_pop``: R(σ; learned Gram) from model.md §4 at each ERM run's learned overlaps."""
    from slrpipe.commands._common import parse_L
    from slrpipe.data import SLRTask
    from slrpipe.train.metrics import (
        population_risk,  # the same quasi-Monte Carlo rule as training
    )
    from slrpipe.workflow import L_arg

    need = ["m_k", "q_k", "m_v", "q_v", "k_vstar", "v_kstar", "k_v"]
    if any(v not in node for v in need):
        log.warning("ERM results lack %s: no population prediction at the learned overlaps", need)
        return node
    task = SLRTask(exp["model"], float(exp["nu"]), parse_L(L_arg(exp["L"])), float(exp["delta"]), 2)
    pred = np.full(node["m_k"].shape, np.nan)
    for idx in np.ndindex(pred.shape):
        sel = {v: float(node[v].values[idx]) for v in need}
        if not np.isfinite(list(sel.values())).all():
            continue
        # Gram of (k*, v*, k, v)/D with the teacher orthonormal (k*·v* = 0, |k*|² = |v*|² = D)
        gram = np.array([
            [1.0, 0.0, sel["m_k"], sel["v_kstar"]],
            [0.0, 1.0, sel["k_vstar"], sel["m_v"]],
            [sel["m_k"], sel["k_vstar"], sel["q_k"], sel["k_v"]],
            [sel["v_kstar"], sel["m_v"], sel["k_v"], sel["q_v"]],
        ])
        sigma = str(node["sigma"].values[idx[0]])
        c = float(node["c"].values[idx]) if "c" in node and sigma == "erf" else 0.0
        pred[idx] = population_risk(sigma, task, gram, c)
    node["test_error_pop"] = (node["m_k"].dims, pred)
    node["test_error_pop"].attrs["description"] = "population risk R(σ; Gram) at the learned overlaps (model.md §4)"
    return node


def replica_node(files, jobs: dict) -> xr.Dataset:
    parts, bo = [], None
    for f in files:
        j = jobs[f]
        ds = _open(f).reset_coords(drop=True)
        if j["sigma"] == "bayes_optimal":
            bo = ds.rename({v: f"bayes_optimal_{v}" for v in ds.data_vars})
            continue
        ds = ds[[v for v in ds.data_vars if "alpha" in ds[v].dims and "lam" in ds[v].dims]]
        parts.append(ds.expand_dims(sigma=[j["sigma"]]))
    out = xr.combine_by_coords(parts, combine_attrs="drop") if parts else xr.Dataset()
    if "test_error" in out:
        # the error at the best λ of the grid; NaN (non-converged) points are not candidates
        err = out["test_error"].where(out.get("converged", True))
        out["test_error_opt_lam"] = err.min("lam")
        out["lam_opt"] = err.fillna(np.inf).idxmin("lam").where(np.isfinite(out["test_error_opt_lam"]))
    if bo is not None:
        out = out.merge(bo, compat="override", join="outer")
    return out


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True, timeout=10).stdout.strip()
    except Exception:  # not a git checkout, or git missing
        return "unknown"


def build_store(plan, config: dict, out, log=None) -> Path:
    """Aggregate every job of ``plan`` (a :class:`slrpipe.workflow.Plan`) into the zarr store ``out``."""
    handler = logging.FileHandler(log) if log else logging.StreamHandler()
    logger = logging.getLogger("slrpipe")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        return _build_store(plan, config, out)
    finally:
        logger.removeHandler(handler)


def _build_store(plan, config: dict, out) -> Path:
    nodes = {}
    experiments = {**{f"population/{k}": v for k, v in config["population"].items()},
                   **{f"erm/{k}": v for k, v in config["erm"].items()},
                   **{f"replica/{k}": v for k, v in (config.get("replica") or {}).items()}}
    for (kind, name), files in plan.members.items():
        log.info("aggregating %s/%s from %d files", kind, name, len(files))
        if kind == "population":
            node = population_node(files)
        elif kind == "erm":
            node = add_population_prediction(erm_node(files, plan.erm), config["erm"][name])
        else:
            node = replica_node(files, plan.replica)
        exp = experiments.get(f"{kind}/{name}", {})
        node.attrs.update({k: json.dumps(v) for k, v in exp.items()})
        node.attrs["experiment"] = name
        nodes[f"/{kind}/{name}"] = node
    root = xr.Dataset(attrs=provenance(config=config, git_commit=git_commit()))
    tree = xr.DataTree.from_dict({"/": root, **nodes})
    return write_zarr(tree, out)


def open_store(path) -> xr.DataTree:
    """Open ``results/slr.zarr`` as an ``xarray.DataTree`` (loaded into memory)."""
    import warnings

    with warnings.catch_warnings():  # Snakemake's .snakemake_timestamp marker inside directory outputs
        warnings.filterwarnings("ignore", message=".*not recognized as a component of a Zarr hierarchy")
        return xr.open_datatree(path, engine="zarr", consolidated=False).load()
