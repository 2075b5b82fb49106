"""Combine the per-job result files into one store, ``results/slr.zarr`` (zarr v3, one DataTree).

Layout (each node an ``xarray.Dataset``; parameters as dimensions/coordinates — read from the
result files themselves, the data law (model, nu, L, delta) as scalar coordinates — and the
experiment's config entry and provenance as attributes):

- ``/population/<exp>``: dims (sigma, nu) — optimal population risk and the optimal overlaps
  (model.md §4); sigma includes "bayes".
- ``/erm/<exp>``: dims (sigma, lam, alpha, seed, init, restart, optimizer) — with a D ladder
  (``D: [D₁, D₂, …]`` in the config) also ``D`` after alpha — ERM metrics of each run
  (model.md §5); alpha is the realised n/D of the run (within 1/(2D) of the config's value), seed the
  experiment seed, (init, restart, optimizer) the start (slrpipe.workflow.erm_runs; NaN where a start
  does not exist, e.g. restarts of the informed start); plus ``test_error_pop``, the population
  formula evaluated at the learned overlaps (computed here, so a theory edit does not rerun training;
  the training job's own ``test_error_theory`` is not kept); ``dist_informed`` and ``dist_ground``,
  the distance of each run's weights to the informed start's and to the ground state's on the same
  data (slrpipe.analysis.distance);
  trajectories ``traj_*`` on dim ``step`` with ``traj_test_error_pop`` for gd/sgd/adam runs
  (slrpipe.analysis.trajectory); and the ground state over the starts, ``*_ground`` and ``ground_init/restart/optimizer`` (slrpipe.analysis.ground).
  ``slrpipe.analysis.ground.reference`` selects the informed start (the dims (sigma, lam, alpha, seed)).
- ``/replica/<exp>``: dims (sigma, lam, alpha) — replica prediction (model.md §6), plus
  ``test_error_opt_lam`` / ``lam_opt`` (minimum over the λ grid) and ``bayes_optimal_*`` (dim alpha);
  with ``ansatz: [rs, rsb1]`` the 1RSB points as ``rsb1_*`` (their s scans ``rsb1_scan_*`` on dim s;
  slrpipe.commands.rsb1.dataset), NaN where not solved, and the batch-means errors of the state
  reported, ``rsb1_<q>_batch_se`` / ``rsb1_<q>_batch_bias`` for q in objective, test_error,
  distance and ``rsb1_batches_converged`` (slrpipe.commands.rsb1_error.dataset).

The root carries the config (JSON), package version, git commit and the CF globals (``Conventions``,
``history``, ``date_created``); every variable its CF ``units`` and ``long_name`` (slrpipe.cf).
"""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path

import numpy as np
import xarray as xr

from slrpipe.analysis.distance import to_ground, to_informed
from slrpipe.analysis.ground import add_ground_state
from slrpipe.analysis.trajectory import DYNAMICS, add_trajectory_risk
from slrpipe.data import SLRTask
from slrpipe.io import atomic_dir, write_zarr
from slrpipe.io import read_netcdf as _read_netcdf
from slrpipe.lengths import format_L, parse_L
from slrpipe.provenance import constraints_sha256, provenance
from slrpipe.setting import Setting
from slrpipe.sigmas import get as get_sigma
from slrpipe.theory.learned import OVERLAPS, risk_at_overlaps
from slrpipe.threads import map_processes, map_threads
from slrpipe.vocabulary import TEACHER_SEED_OFFSET

log = logging.getLogger(__name__)


class UnreadableResult(ValueError):
    """A result file that cannot be read (truncated, or not a netCDF file); the message is one line
    naming the file and how to regenerate it. A ``ValueError``, so the CLI prints it as one line."""


def read_netcdf(path) -> xr.Dataset:
    """:func:`slrpipe.io.read_netcdf`, with any failure to read the file raised as one line naming
    it and how to regenerate it.

    Raises:
        UnreadableResult: the file is missing, truncated or not a netCDF file.
    """
    try:
        return _read_netcdf(path)
    except Exception as exc:
        why = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise UnreadableResult(
            f"cannot read result file {path} ({type(exc).__name__}: {why}); regenerate it: "
            f"rm {path} && rerun the same snakemake command (add --rerun-incomplete after an interrupted run)"
        ) from None


def _scalars(ds: xr.Dataset) -> xr.Dataset:
    """Data variables without dimensions, coordinates dropped (the job table supplies the index)."""
    ds = ds.reset_coords(drop=True)
    return ds[[v for v in ds.data_vars if ds[v].ndim == 0]]


#: the data law of an experiment, kept as scalar coordinates of its node
SETTING = ("model", "nu", "L", "delta")
#: config keys of an experiment that its node holds as coordinates (the law, and the grids as dims)
ON_COORDINATES = (*SETTING, "sigmas", "lams", "alphas", "seeds", "inits", "optimizers")


def _setting(ds: xr.Dataset) -> dict:
    """The data law as recorded by a result file: model, ν, Δ, and L in its one text form
    (:func:`slrpipe.lengths.format_L`; replica files record a fixed L as an int)."""
    out = {k: ds[k].values.item() for k in SETTING if k in ds.coords and ds[k].ndim == 0}
    if "L" in out:
        out["L"] = format_L(parse_L(str(out["L"])))
    return out


def population_node(files) -> xr.Dataset:
    """Population sweeps (one file per σ, dim nu) stacked along ``sigma``, from each file's own coordinate."""
    parts = []
    for f in files:
        ds = read_netcdf(f)
        parts.append(ds.reset_coords(drop=True).expand_dims(sigma=[str(ds["sigma"].values)]))
    return xr.concat(parts, dim="sigma", combine_attrs="drop_conflicts").assign_coords(_setting(ds))


def length_node(files) -> xr.Dataset:
    """Length sweeps (one file per σ, dims L, nu; optional nu_target(L), risk_var(nu_var)) stacked
    along ``sigma``; a variable a σ's file lacks is NaN for that σ."""
    parts = []
    for f in files:
        ds = read_netcdf(f)
        parts.append(
            ds.reset_coords(["sigma", "model", "delta"], drop=True).expand_dims(sigma=[str(ds["sigma"].values)])
        )
    node = xr.merge(parts, combine_attrs="drop_conflicts", join="outer", compat="no_conflicts")
    return node.assign_coords({k: ds[k].values.item() for k in ("model", "delta")})


def _erm_index(ds: xr.Dataset, by_D: bool = False) -> dict:
    """Index of one ERM run read from its own coordinates: σ, λ, the realised α = n/D, the
    experiment seed (the teacher seed less its offset, docs/model.md §5), and D itself when
    ``by_D`` (a D ladder, where n = αD exactly so every rung shares the α coordinate)."""
    index = {
        "sigma": [str(ds["sigma"].values)],
        "lam": [float(ds["lam"])],
        "alpha": [int(ds["n"]) / int(ds["D"])],
        "seed": [int(ds["teacher_seed"]) - TEACHER_SEED_OFFSET],
        # the start (slrpipe.workflow.erm_runs); files written before restarts existed are restart 0
        "init": [str(ds["init"].values)],
        "restart": [int(ds["restart"]) if "restart" in ds.coords else 0],
        "optimizer": [str(ds["optimizer"].values)],
    }
    return index | {"D": [int(ds["D"])]} if by_D else index


def erm_node(files, by_D: bool = False) -> xr.Dataset:
    """ERM runs (one file each) on dims (sigma, lam, alpha, seed, init, restart, optimizer) — with
    ``by_D`` (an experiment with a D ladder, slrpipe.config.ladder) also ``D`` after alpha:
    (sigma, lam, alpha, D, seed, init, restart, optimizer). Scalar variables, n (and D where it is
    not a dim), the step size ``lr`` (NaN for L-BFGS), ``dist_informed`` and ``dist_ground`` (the
    distance of the run's weights to the informed start's and to the ground state's on the same
    data, slrpipe.analysis.distance) and the trajectories
    ``traj_*`` on a ``step`` dim (the union of the recorded steps; NaN where a run recorded no such
    step)."""
    parts, order, weights = [], {}, []
    for f in files:
        ds = read_netcdf(f)
        index = _erm_index(ds, by_D)
        weights.append((index, (ds["k"].values, ds["v"].values), float(ds["train_loss"])))
        for k in ("init", "optimizer"):  # keep the config's order (reference() takes the first optimiser)
            order.setdefault(k, []).extend(v for v in index[k] if v not in order.get(k, []))
        extra = {k: ds[k].astype("int64").reset_coords(drop=True) for k in (("n",) if by_D else ("D", "n"))}
        extra["lr"] = float(ds["lr"]) if "lr" in ds.coords else np.nan
        traj = ds[[v for v in ds.data_vars if v.startswith("traj_")]].reset_coords(drop=True)
        run = _scalars(ds).drop_vars("test_error_theory", errors="ignore").assign(extra)
        parts.append((run, traj, index))
    dist = zip(to_informed([(i, w) for i, w, _ in weights]), to_ground(weights), strict=True)
    parts = [
        (run.assign(dist_informed=di, dist_ground=dg), traj, index)
        for (run, traj, index), (di, dg) in zip(parts, dist, strict=True)
    ]
    # one step axis for all runs (NaN where a run recorded no such step): with differing step
    # coordinates combine_by_coords would take step for a concatenation dim
    steps = np.unique(np.concatenate([traj["step"].values for _, traj, _ in parts if "step" in traj.dims] or [[]]))
    parts = [
        xr.merge([run, traj.reindex(step=steps) if "step" in traj.dims else traj]).expand_dims(index)
        for run, traj, index in parts
    ]
    out = xr.combine_by_coords(parts, combine_attrs="drop", join="outer", data_vars="all")
    out = out.reindex(init=order["init"], optimizer=order["optimizer"])
    dims = ("sigma", "lam", "alpha", *(("D",) if by_D else ()), "seed", "init", "restart", "optimizer")
    out = out.transpose(*dims, ...)
    return out.sortby(["lam", "alpha", *(["D"] if by_D else []), "seed", "restart"]).assign_coords(_setting(ds))


def add_population_prediction(node: xr.Dataset, task: SLRTask, workers: int = 1) -> xr.Dataset:
    """``test_error_pop``: R(σ; learned Gram) (docs/model.md §4) at each ERM run's learned overlaps.

    ``task``: the experiment's data law (D unused); ``workers``: threads evaluating runs side by side
    (the same numbers for any count). Computed here rather than in the training job, so that an edit
    of the theory never reruns training."""
    if any(v not in node for v in OVERLAPS):
        log.warning("ERM results lack %s: no population prediction at the learned overlaps", OVERLAPS)
        return node
    shape = node["m_k"].shape

    def risk(idx):
        ov = {v: float(node[v].values[idx]) for v in OVERLAPS}
        sigma = str(node["sigma"].values[idx[0]])
        c = float(node["c"].values[idx]) if "c" in node and get_sigma(sigma).offset else 0.0
        return risk_at_overlaps(sigma, task.setting, ov, c)  # NaN if not finite

    pred = np.array(map_threads(risk, list(np.ndindex(shape)), workers), dtype=float).reshape(shape)
    node["test_error_pop"] = (node["m_k"].dims, pred)
    return node


def _erm_task(files) -> SLRTask:
    """The data law shared by an experiment's ERM files, from the first file's coordinates."""
    ds = read_netcdf(files[0])
    law = json.loads(ds.attrs["L_law"])
    return SLRTask(Setting(str(ds["model"].values), float(ds["nu"]), law, float(ds["delta"])), 2)


def _rsb1_part(ds: xr.Dataset) -> xr.Dataset:
    """One 1RSB point's file (``slrpipe rsb1``) as ``rsb1_*`` variables on (sigma, lam, alpha),
    the scan on (sigma, lam, alpha, s), the point variables at the state the file reports (s*, else
    a lower bound; slrpipe.commands.rsb1.dataset); flags as floats (1/0, NaN where a point was not
    solved)."""
    key = {d: [ds[d].values.item()] for d in ("sigma", "lam", "alpha")}
    ds = ds.reset_coords(drop=True)
    ds = ds.assign({v: ds[v].astype(float) for v in ds.data_vars if ds[v].dtype == bool})
    return ds.rename({v: f"rsb1_{v}" for v in ds.data_vars}).expand_dims(key)


def _rsb1_error_part(ds: xr.Dataset) -> xr.Dataset:
    """One 1RSB point's batch-means errors (``slrpipe rsb1-error``) as ``rsb1_*`` scalars on
    (sigma, lam, alpha); the per-batch values (dim batch) stay in the file."""
    key = {d: [ds[d].values.item()] for d in ("sigma", "lam", "alpha")}
    ds = ds[[v for v in ds.data_vars if "batch" not in ds[v].dims]].reset_coords(drop=True)
    ds = ds.assign({v: ds[v].astype(float) for v in ds.data_vars})
    return ds.rename({v: f"rsb1_{v}" for v in ds.data_vars}).expand_dims(key)


def replica_node(files) -> xr.Dataset:
    """Replica sweeps (one file per σ, dims lam × alpha) stacked along ``sigma``; the Bayes-optimal
    state evolution (no σ coordinate) as ``bayes_optimal_*`` variables on alpha; 1RSB points (one
    file each, dim s) as ``rsb1_*`` variables (:func:`_rsb1_part`) with their batch-means errors
    (:func:`_rsb1_error_part`), NaN at the points not solved."""
    parts, rsb1, bo, setting = [], [], None, {}
    for f in files:
        ds = read_netcdf(f)
        setting = _setting(ds)
        if ds.attrs.get("command") == "rsb1":
            rsb1.append(_rsb1_part(ds))
            continue
        if ds.attrs.get("command") == "rsb1-error":
            rsb1.append(_rsb1_error_part(ds))
            continue
        if "sigma" not in ds.coords:  # the Bayes-optimal sweep
            ds = ds.reset_coords(drop=True)
            bo = ds.rename({v: f"bayes_optimal_{v}" for v in ds.data_vars})
            continue
        sigma = str(ds["sigma"].values)
        ds = ds.reset_coords(drop=True)
        ds = ds[[v for v in ds.data_vars if "alpha" in ds[v].dims and "lam" in ds[v].dims]]
        parts.append(ds.expand_dims(sigma=[sigma]))
    out = xr.combine_by_coords(parts, combine_attrs="drop") if parts else xr.Dataset()
    if "test_error" in out:
        # the error at the best λ of the grid; NaN (non-converged) points are not candidates
        err = out["test_error"].where(out.get("converged", True))
        out["test_error_opt_lam"] = err.min("lam")
        out["lam_opt"] = err.fillna(np.inf).idxmin("lam").where(np.isfinite(out["test_error_opt_lam"]))
    if bo is not None:
        out = out.merge(bo, compat="override", join="outer")
    if rsb1:
        out = out.merge(
            xr.merge(rsb1, join="outer", combine_attrs="drop"), join="outer", combine_attrs="drop_conflicts"
        )
    return out.assign_coords(setting)


def git_commit() -> str:
    """The commit the working directory is at (``git rev-parse HEAD``), or "unknown" outside a git
    checkout or without git (provenance of the store's root attributes)."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
    except Exception:  # not a git checkout, or git missing
        return "unknown"


def build_store(members: dict, config: dict, out, log=None, workers: int = 1) -> Path:
    """Aggregate result files into the zarr store ``out`` (written atomically).

    members: {(kind, experiment): [result files]} with kind in population, erm, replica, length (the
    workflow's ``plan.members``); every coordinate is read from the files themselves. ``config``:
    the validated workflow config, kept in the root attributes (each node also carries its
    experiment's settings). ``log``: a log file path (default: the caller's logging set-up).
    ``workers``: processes building the experiments' nodes side by side
    (:func:`slrpipe.threads.map_processes`: reading the files holds the GIL, so threads would not
    help there); the store is the same for any count.

    Raises:
        UnreadableResult: a result file cannot be read (one line naming it; the previous store is kept).
    """
    if log is None:
        return _build_store(members, config, out, workers)
    handler = logging.FileHandler(log)
    logger = logging.getLogger("slrpipe")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        return _build_store(members, config, out, workers)
    finally:
        logger.removeHandler(handler)
        handler.close()


def _node(job) -> tuple[str, xr.Dataset]:
    """(store path, node) of one experiment; ``job`` = (kind, name, its result files, its config
    entry)."""
    kind, name, files, exp = job
    log.info("aggregating %s/%s from %d files", kind, name, len(files))
    if kind == "population":
        node = population_node(files)
    elif kind == "length":
        node = length_node(files)
    elif kind == "erm":
        task = _erm_task(files)
        by_D = isinstance(exp.get("D"), list)  # a D ladder
        node = add_ground_state(add_trajectory_risk(add_population_prediction(erm_node(files, by_D), task), task))
    else:
        node = replica_node(files)
    # when and by which command its files were written is theirs, not the node's (the store's own are
    # at its root); kept by the merges only where every file agreed, e.g. files written in one second
    node.attrs = {k: v for k, v in node.attrs.items() if k not in ("date_created", "history")}
    # the parameters the node holds as coordinates are not repeated as attributes: one form each
    node.attrs.update({k: json.dumps(v) for k, v in exp.items() if k not in ON_COORDINATES})
    node.attrs["experiment"] = name
    return f"/{kind}/{name}", node


def _build_store(members: dict, config: dict, out, workers: int) -> Path:
    # the nodes are built side by side in processes (reading hundreds of files holds the GIL),
    # the slowest first: ERM nodes with risk curves along trajectories (DYNAMICS), then by file
    # count; the store keeps the members' order
    jobs = [(kind, name, files, (config.get(kind) or {}).get(name, {})) for (kind, name), files in members.items()]

    def cost(i):
        kind, _, files, exp = jobs[i]
        return (kind != "erm", not set(exp.get("optimizers") or ()) & set(DYNAMICS), -len(files), i)

    order = sorted(range(len(jobs)), key=cost)
    built = map_processes(_node, [jobs[i] for i in order], workers)
    nodes = dict(sorted(zip(order, built, strict=True)))
    root = xr.Dataset(attrs=provenance(config=config, git_commit=git_commit(), constraints_sha256=constraints_sha256()))
    tree = xr.DataTree.from_dict({"/": root, **dict(nodes.values())})
    return write_store(tree, out)


def write_store(tree: xr.DataTree, out) -> Path:
    """Write ``tree`` to the zarr v3 store ``out`` with consolidated metadata, atomically.

    :func:`slrpipe.io.write_zarr` writes the tree into a temporary sibling directory, the metadata
    of every node is then consolidated into its root ``zarr.json`` (so that
    ``xarray.open_datatree(out, engine="zarr")`` opens it without listing the directory and without
    a warning), and only then is the directory renamed over ``out``: a failed aggregation leaves the
    previous store in place. zarr-python's warning that consolidated metadata is not yet part of
    the zarr v3 specification is silenced (xarray and zarr-python read it).
    """
    import warnings

    import zarr

    with atomic_dir(out) as tmp:
        write_zarr(tree, tmp)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Consolidated metadata is currently not part")
            zarr.consolidate_metadata(str(tmp))
    return Path(out)


def _fixed_strings(ds: xr.Dataset) -> xr.Dataset:
    """Variable-length strings (zarr's "string" type, read as numpy StringDType) back to numpy
    unicode, the form the result files and the figures use."""
    strs = [k for k, v in ds.variables.items() if v.dtype.kind == "T"]
    conv = {k: (ds[k].dims, np.array(ds[k].values.tolist(), dtype=str)) for k in strs}
    return ds.assign_coords({k: v for k, v in conv.items() if k in ds.coords}).assign(
        {k: v for k, v in conv.items() if k in ds.data_vars}
    )


def open_store(path, nodes=None) -> xr.DataTree:
    """Open ``results/slr.zarr`` as an ``xarray.DataTree`` (loaded into memory; string variables as
    numpy unicode arrays, as written). ``nodes``: paths of the nodes to load (e.g.
    ``["population/spiked_L2"]``, their subtrees included; paths not in the store are skipped); the
    others stay lazy, read from disk where used (a figure drawing a few nodes reads those only).

    Stores of this version carry consolidated metadata (:func:`slrpipe.io.write_zarr`); a store
    written by an earlier version (no consolidated metadata, Snakemake's ``.snakemake_timestamp``
    inside) is still opened, without xarray's fallback warning.

    Raises:
        FileNotFoundError: no store at ``path``.
    """
    import warnings

    if not Path(path).exists():
        raise FileNotFoundError(f"no store at {path}: run the workflow (snakemake) or `slrpipe aggregate` first")
    with warnings.catch_warnings():  # stores of earlier versions only
        warnings.filterwarnings("ignore", message=".*not recognized as a component of a Zarr hierarchy")
        warnings.filterwarnings("ignore", message="Failed to open Zarr store with consolidated metadata")
        tree = xr.open_datatree(path, engine="zarr")
        if nodes is None:
            tree.load()
        for n in nodes or ():
            try:
                tree[n].load()
            except KeyError:  # not in the store (a figure's own check reports it)
                pass
    return tree.map_over_datasets(_fixed_strings)


def experiment_node(tree: xr.DataTree, kind: str, name: str) -> xr.Dataset:
    """The node of experiment ``name`` of ``kind`` (a config section: ``erm``, ``replica``,
    ``population``, ``length``) in a store opened by :func:`open_store`, as a Dataset.

    Raises:
        KeyError: the store has no such experiment (one line naming those it has).
    """
    if kind not in tree.children or name not in tree[kind].children:
        have = sorted(tree[kind].children) if kind in tree.children else []
        raise KeyError(f"{kind}.{name}: not in the store; allowed: {have}")
    return tree[f"{kind}/{name}"].to_dataset()
