"""The ground state of the training objective over the starts of an ERM experiment, and the
reference (informed) start.

An ERM node (slrpipe.analysis.aggregate) has one run per (σ, λ, α, seed, init, restart, optimizer).
For each (σ, λ, α, seed), the *ground state* is the run with the lowest final training objective
J = 𝓛/n over every init, restart and optimiser — the best minimum training found, which is what
the replica theory (the global minimum of the objective, docs/theory.md §1) predicts. The
*reference* run is the informed start with the experiment's first optimiser: the run the figures
and the validation table have always drawn.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

RUN_DIMS = ("init", "restart", "optimizer")
#: variables reported at the ground state as ``<name>_ground`` (those present in the node)
GROUND_VARS = (
    "train_loss",
    "test_error",
    "test_error_se",
    "test_error_pop",
    "m_k",
    "q_k",
    "m_v",
    "q_v",
    "converged",
    "iterations",
    "dist_informed",
)


def reference(node: xr.Dataset) -> xr.Dataset:
    """The reference run of each (σ, λ, α, seed): init "informed" (else the first init), restart 0,
    the first optimiser of the node's ``optimizer`` coordinate (the experiment's list order). The
    run dims are dropped; a node without them is returned as it is."""
    if not all(d in node.dims for d in RUN_DIMS):
        return node
    inits = list(node["init"].values)
    init = "informed" if "informed" in inits else inits[0]
    return node.sel(init=init, restart=0).isel(optimizer=0).drop_vars(list(RUN_DIMS), errors="ignore")


def add_ground_state(node: xr.Dataset) -> xr.Dataset:
    """``<var>_ground`` for each of ``GROUND_VARS`` (dims sigma, lam, alpha, seed) at the run of the
    lowest finite ``train_loss`` over (init, restart, optimizer), and which run it is:
    ``ground_init``, ``ground_restart``, ``ground_optimizer`` ("" / -1 where no run finished).
    Runs that do not exist (restarts of the informed start) are NaN and never chosen."""
    if not all(d in node.dims for d in RUN_DIMS) or "train_loss" not in node:
        return node
    runs = node.stack(run=RUN_DIMS)
    loss = runs["train_loss"].where(np.isfinite(runs["train_loss"]))
    has = loss.notnull().any("run")
    best = loss.fillna(np.inf).argmin("run")
    picked = runs.isel(run=best)
    out = {}
    for v in GROUND_VARS:
        if v in runs:
            da = picked[v].drop_vars(["run", *RUN_DIMS], errors="ignore")
            out[f"{v}_ground"] = da.where(has) if da.dtype.kind == "f" else da
    out["ground_init"] = xr.where(has, picked["init"].drop_vars(["run", *RUN_DIMS], errors="ignore"), "")
    out["ground_restart"] = xr.where(has, picked["restart"].drop_vars(["run", *RUN_DIMS], errors="ignore"), -1)
    out["ground_optimizer"] = xr.where(has, picked["optimizer"].drop_vars(["run", *RUN_DIMS], errors="ignore"), "")
    return node.assign(out)


def reached(node: xr.Dataset, rtol: float) -> xr.DataArray:
    """Whether each run's final objective is within ``rtol`` (relative) of the reference run's
    (:func:`reference`) at the same (σ, λ, α, seed) — "reached the informed minimum"; NaN-valued runs
    are False. Dims: those of ``train_loss``."""
    ref = reference(node)["train_loss"]
    loss = node["train_loss"]
    return (loss <= ref * (1.0 + rtol)) & loss.notnull() & ref.notnull()
