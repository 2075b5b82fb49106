"""Distance between the ERM minima that different starts reach on the same data (docs/theory.md
§13): d = (1/D)(|k_a − k_b|² + |v_a − v_b|²) between a run and the informed start of the same
(σ, λ, α, D, seed, optimiser) (``dist_informed``), and between a run and the ground state found on
the same data, the run of lowest final objective over every start and optimiser
(``dist_ground``; slrpipe.analysis.ground). It needs no theory: where the training objective has one minimum
(replica symmetry) d → 0 as D → ∞; between two states of a one-step RSB phase it tends to
2 tr(Q₁ − Q₀). For odd σ (``Sigma.odd``: σ − 1 odd in χ) the distance is to the nearer of
(k_b, v_b) and its mirror image (−k_b, −v_b).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from slrpipe.analysis.ground import RUN_DIMS
from slrpipe.sigmas import get as get_sigma

#: the run coordinates that distinguish two starts on the same data
START_KEYS = ("init", "restart")


def weight_distance(sigma: str, a, b) -> float:
    """(1/D)(|k_a − k_b|² + |v_a − v_b|²) for a = (k_a, v_a) and b = (k_b, v_b), arrays of shape
    (D,); for odd σ the smaller of that and the distance to (−k_b, −v_b).

    Raises:
        ValueError: σ not registered, or the four arrays do not share one shape (D,).
    """
    (ka, va), (kb, vb) = ((np.asarray(x, float) for x in w) for w in (a, b))
    if not (ka.ndim == 1 and ka.shape == va.shape == kb.shape == vb.shape):
        raise ValueError(f"weights: need four arrays of one shape (D,), got {ka.shape, va.shape, kb.shape, vb.shape}")
    d = (np.sum((ka - kb) ** 2) + np.sum((va - vb) ** 2)) / ka.size
    if get_sigma(sigma).odd:
        d = min(d, (np.sum((ka + kb) ** 2) + np.sum((va + vb) ** 2)) / ka.size)
    return float(d)


def to_informed(runs) -> list[float]:
    """``dist_informed`` of each run: runs = [(index, (k, v))] with index the run's coordinates
    (``slrpipe.analysis.aggregate._erm_index``: one-element lists); the distance to the informed start
    (restart 0) with the same other coordinates — 0 for that run itself, NaN where there is none."""
    key = lambda index: _data_key(index, START_KEYS)
    informed = {key(i): w for i, w in runs if i["init"] == ["informed"] and i["restart"] == [0]}
    return _distances(runs, lambda index: informed.get(key(index)))


def to_ground(runs) -> list[float]:
    """``dist_ground`` of each run: runs = [(index, (k, v), J)] with J the run's final training
    objective (``train_loss``); the distance to the run of lowest finite J among those with the
    same coordinates but (init, restart, optimizer) — the ground state of
    ``slrpipe.analysis.ground.add_ground_state`` (on an exact tie of J, the first such run here) —
    0 for that run itself, NaN where no run of the group has a finite J."""
    best: dict = {}
    for index, w, loss in runs:
        k = _data_key(index, RUN_DIMS)
        if np.isfinite(loss) and (k not in best or loss < best[k][0]):
            best[k] = (loss, w)
    return _distances(
        [(index, w) for index, w, _ in runs], lambda index: best.get(_data_key(index, RUN_DIMS), (None, None))[1]
    )


def _data_key(index: dict, run_keys) -> tuple:
    """The coordinates of a run that name its data and setting: all but ``run_keys``."""
    return tuple((k, v[0]) for k, v in sorted(index.items()) if k not in run_keys)


def _distances(runs, partner) -> list[float]:
    out = []
    for index, w in runs:
        ref = partner(index)
        out.append(np.nan if ref is None else weight_distance(index["sigma"][0], w, ref))
    return out


def second_lowest(node: xr.Dataset) -> xr.DataArray:
    """d₂: per (σ, λ, α[, D], seed) the ``dist_ground`` of the run of second-lowest final objective
    ``train_loss`` over every start and optimiser (``RUN_DIMS``) — the distance between the two
    lowest minima found on the same data (0 where both are one minimum); NaN where fewer than two
    runs finished. ``node``: an ERM store node with ``train_loss`` and ``dist_ground``.

    Raises:
        KeyError: the node lacks either variable.
    """
    runs = node[["train_loss", "dist_ground"]].stack(run=RUN_DIMS)
    loss, dist = (runs[v].transpose(..., "run") for v in ("train_loss", "dist_ground"))
    finite = np.isfinite(loss.values)
    if loss.sizes["run"] < 2:  # one start: no second minimum
        second = np.full(finite.shape[:-1], np.nan)
    else:
        order = np.argsort(np.where(finite, loss.values, np.inf), axis=-1, kind="stable")
        second = np.take_along_axis(dist.values, order[..., 1:2], axis=-1)[..., 0]
        second = np.where(finite.sum(-1) >= 2, second, np.nan)
    return loss.isel(run=0, drop=True).copy(data=second).rename("dist_second")
