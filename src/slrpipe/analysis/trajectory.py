"""The population risk along a training trajectory, from the overlaps recorded at each step.

A training job records, every ``record_every`` steps, the overlaps of (k, v) with the teacher
(``traj_m_k``, ``traj_q_k``, …; slrpipe.train.erm). The Gram matrix of (k*, v*, k, v)/D they
define gives the population risk R(σ; Gram) of docs/model.md §4 at that step — the test error of
the estimator at that step with an infinite test set. It is evaluated here, at aggregation, so that
an edit of the theory never reruns training.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from slrpipe.data import SLRTask
from slrpipe.sigmas import get as get_sigma
from slrpipe.theory.learned import OVERLAPS, risk_at_overlaps
from slrpipe.threads import map_threads
from slrpipe.vocabulary import FIRST_ORDER

#: optimisers whose trajectories are dynamics worth a risk curve (L-BFGS records its iterations too,
#: but its steps are line-searched quasi-Newton steps, not a time)
DYNAMICS = FIRST_ORDER


def risk_along(sigma: str, task: SLRTask, traj: dict) -> np.ndarray:
    """R(σ; Gram_t) at every recorded step t (docs/model.md §4), shape (steps,); NaN where a step's
    overlaps are missing (steps another run recorded, in a combined store) or not finite.

    ``traj``: {overlap name: (steps,) array} for every name of ``OVERLAPS``. A learned offset c
    (``Sigma.offset``: erf) is not recorded along a trajectory, so such a σ is refused.

    Raises:
        ValueError: σ not registered or with an offset, or an overlap missing from ``traj``.
    """
    if get_sigma(sigma).offset:
        raise ValueError(f"sigma: {sigma} needs its offset c at each step, which the trajectory does not record")
    missing = [k for k in OVERLAPS if k not in traj]
    if missing:
        raise ValueError(f"traj: missing overlaps {missing}")
    cols = np.stack([np.asarray(traj[k], np.float64) for k in OVERLAPS], axis=-1)
    out = np.full(cols.shape[0], np.nan)
    for t, row in enumerate(cols):
        if np.isfinite(row).all():
            out[t] = risk_at_overlaps(sigma, task.setting, dict(zip(OVERLAPS, row)))
    return out


def add_trajectory_risk(node: xr.Dataset, task: SLRTask, workers: int = 1) -> xr.Dataset:
    """``traj_test_error_pop`` (dims of the runs + ``step``): :func:`risk_along` for every run of a
    first-order optimiser (``DYNAMICS``) of an ERM node (slrpipe.analysis.aggregate); NaN elsewhere.
    ``workers``: threads evaluating runs side by side (:func:`map_threads`)."""
    need = [f"traj_{k}" for k in OVERLAPS]
    if "step" not in node.dims or any(v not in node for v in need) or "optimizer" not in node.dims:
        return node
    stacked = node[need].transpose(..., "step")
    run_dims = [d for d in stacked[need[0]].dims if d != "step"]
    out = xr.full_like(stacked[need[0]], np.nan, dtype=np.float64)
    runs = []
    for idx in np.ndindex(*(node.sizes[d] for d in run_dims)):
        sel = dict(zip(run_dims, idx))
        if str(node["optimizer"].values[sel["optimizer"]]) not in DYNAMICS:
            continue
        sigma = str(node["sigma"].values[sel["sigma"]])
        if get_sigma(sigma).offset:  # no offset recorded along the trajectory
            continue
        traj = {k: stacked[f"traj_{k}"].isel(sel).values for k in OVERLAPS}
        if np.isfinite(traj["m_k"]).any():
            runs.append((idx, sigma, traj))
    for (idx, *_), risk in zip(runs, map_threads(lambda r: risk_along(r[1], task, r[2]), runs, workers), strict=True):
        out[tuple(idx)] = risk
    node["traj_test_error_pop"] = out
    return node
