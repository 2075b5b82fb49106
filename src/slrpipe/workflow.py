"""Config → job tables for the Snakemake workflow (no science here).

``plan`` turns a validated config (:func:`slrpipe.config.validate`) into the jobs each rule runs,
keyed by output path; paths encode the parameters that define a job (stable float formatting), so
adding one α creates only that α's jobs. Job dicts hold the parameters' values (floats, ints,
length laws); text appears only in paths (:func:`fmt`, :func:`L_key`) and in the rules' command
lines. What each job asks of a cluster is :mod:`slrpipe.resource_laws`'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from slrpipe.config import ConfigError, ladder
from slrpipe.jobs import (
    DataJob,
    LengthJob,
    PopulationBatchJob,
    PopulationJob,
    ReplicaJob,
    Rsb1ErrorJob,
    Rsb1Job,
    TrainBatchJob,
    TrainJob,
)
from slrpipe.lengths import length_law
from slrpipe.vocabulary import BAYES, FIRST_ORDER, NUMPY, RSB1, init_seed, seeds


def fmt(x) -> str:
    """Stable, filename-safe number formatting for paths: 6 significant digits, 'inf' for ∞."""
    if isinstance(x, bool):
        raise TypeError("bool is not a number here")
    if isinstance(x, int):
        return str(x)
    x = float(x)
    if math.isinf(x):
        return "inf"
    return f"{x:.6g}"


def L_key(L) -> str:
    """Path form of a length law: '3' for a fixed length, 'u1-2-3' for L ~ Uniform{1,2,3}."""
    law = length_law(L)
    return str(next(iter(law))) if len(law) == 1 else "u" + "-".join(str(v) for v in law)


def _law(L) -> dict[int, float]:
    """The config's length (an int or {uniform: [...]}) as a length law (slrpipe.lengths)."""
    if isinstance(L, dict):
        vals = sorted(L["uniform"])
        return {v: 1.0 / len(vals) for v in vals}
    return length_law(L)


def size(exp: dict, alpha: float) -> tuple[int, int]:
    """(D, n) of an ERM point: fixed D, or the paper's rule √(nD) = const (D = √(nD)/√α, n = αD).

    Raises: ValueError: ``exp`` has a D ladder (use :func:`sizes`)."""
    if ladder(exp):
        raise ValueError(f"D = {exp['D']} is a ladder: use sizes()")
    D = exp["D"] if exp.get("D") else max(2, round(exp["sqrt_nD"] / math.sqrt(alpha)))
    return D, max(1, round(alpha * D))


def sizes(exp: dict, alpha: float) -> list[tuple[int, int]]:
    """Every (D, n) of an ERM point: one per rung of a D ladder (n = αD, an integer by the config
    check), else the one of :func:`size`."""
    return [(D, round(alpha * D)) for D in ladder(exp)] if ladder(exp) else [size(exp, alpha)]


def setting_dir(exp: dict) -> str:
    """model/L/ν/Δ part of a path: the teacher setting shared by all σ, λ, α."""
    return f"{exp['model']}/L{L_key(_law(exp['L']))}/nu{fmt(exp['nu'])}/delta{fmt(exp['delta'])}"


def erm_runs(exp: dict, seed: int) -> list[tuple[str, dict]]:
    """The training runs of one ERM point: (path key, run parameters) for each init × restart ×
    optimizer of the experiment. The informed start is deterministic, so it is one run (restart 0);
    random and small starts have ``restarts`` runs, start r seeded by ``init_seed(seed, r)``. The key
    spells out what defines the run: ``{init}-r{restart}_{optimizer}``, with ``-lr{lr}`` for a
    first-order optimiser (its step size); budgets (``max_iter``, ``steps``) are job parameters."""
    runs = []
    for init in exp["inits"]:
        for restart in range(1 if init == "informed" else exp["restarts"]):
            for opt in exp["optimizers"]:
                lr = exp["lr"][opt] if opt in FIRST_ORDER else None
                budget = exp["steps"] if opt in FIRST_ORDER and exp["steps"] else exp["max_iter"]
                key = f"{init}-r{restart}_{opt}" + (f"-lr{fmt(lr)}" if lr is not None else "")
                runs.append(
                    (
                        key,
                        {
                            "init": init,
                            "restart": restart,
                            "init_seed": init_seed(seed, restart),
                            "optimizer": opt,
                            "lr": lr,
                            "max_iter": budget,
                            "record_every": exp["record_every"],
                            "lanes": exp["lanes"] and opt == "lbfgs",
                        },
                    )
                )
    return runs


@dataclass
class Plan:
    """Every job of a validated config, keyed by its output path: each value is the typed record
    (:mod:`slrpipe.jobs`) whose :func:`~slrpipe.job_args.argv` is the job's command line.

    ``population``, ``length``, ``data``, ``erm`` (one :class:`~slrpipe.jobs.TrainJob` per trained
    model), ``replica`` (RS sweeps, Bayes-optimal state evolution), ``rsb1`` (1RSB points), ``rsb1_error`` (their batch-means errors): path → record. ``train_batches``: batch name → :class:`TrainBatchJob`, the
    ERM runs trained in one process (:func:`batch_key`); ``population_batches``: batch name →
    :class:`PopulationBatchJob`, the σ of one population experiment (one directory) swept in one
    process. ``members``: (kind, experiment) → the result paths the store reads for that
    experiment, in plan order."""

    population: dict = field(default_factory=dict)
    length: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)
    erm: dict = field(default_factory=dict)
    replica: dict = field(default_factory=dict)
    rsb1: dict = field(default_factory=dict)
    rsb1_error: dict = field(default_factory=dict)
    train_batches: dict = field(default_factory=dict)
    population_batches: dict = field(default_factory=dict)
    members: dict = field(default_factory=dict)


def _add(table: dict, path: str, job) -> None:
    if path in table and table[path] != job:
        raise ConfigError(
            f"config error: two experiments define the job {path} with different parameters: {table[path]} vs {job}"
        )
    table[path] = job


def _rule_name(text: str) -> str:
    """``text`` usable in rule and file names: letters, digits and '_'."""
    return "".join(c if c.isalnum() else "_" for c in text)


def batch_key(job: TrainJob) -> str:
    """The training batch of an ERM run: one per (setting, α, D) — its σ, seeds, λ and starts are
    trained in one process, every σ on the same training sets (drawn once per seed) — as a name
    usable in rule and file names (letters, digits, '_')."""
    return _rule_name(f"{job.model}_L{L_key(job.L)}_nu{fmt(job.nu)}_delta{fmt(job.delta)}_D{job.D}_n{job.n}")


def population_batches(population: dict, root: str) -> dict[str, PopulationBatchJob]:
    """The population sweeps batched by result directory (one experiment, or one ERM setting's
    ``at/…`` directory shared by its experiments): batch name (the directory below ``root``, as
    letters, digits and '_') → its :class:`PopulationBatchJob`, members in path order (as a
    training batch's: reordering the config's experiments or σ reruns nothing)."""
    groups: dict[str, list] = {}
    for path, job in population.items():
        groups.setdefault(path.rsplit("/", 1)[0], []).append(job)
    return {
        _rule_name(d.removeprefix(root)): PopulationBatchJob(members=tuple(sorted(v, key=lambda j: j.out)))
        for d, v in groups.items()
    }


def plan(config: dict, results: str = "results") -> Plan:
    """All jobs of a validated config. Population sweeps are one record per (experiment, σ) over the
    ν grid, swept in one job per experiment (:func:`population_batches`); ERM one record per
    (setting, σ, λ, α, D, seed) and run of :func:`erm_runs` (init × restart × optimizer; one D per
    α, or each rung of a D ladder), trained in batches of :func:`batch_key` (setting, α, D);
    replica one job per (setting, σ, λ) over the α grid (warm-started along α) plus one
    Bayes-optimal job per setting, and with ``ansatz: [rs, rsb1]`` one 1RSB job per (σ, λ, α) of
    ``rsb1.alphas`` (``Plan.rsb1``; its file is a member of the replica experiment)."""
    p = Plan()
    pops = dict(config["population"])
    for name, exp in config["erm"].items():  # population optimum at each ERM setting, for its panel
        auto = f"at_{name}"
        if auto in pops:
            raise ConfigError(f"config error: population.{auto}: name is reserved for the erm experiment {name!r}")
        pops[auto] = {
            "model": exp["model"],
            "L": exp["L"],
            "delta": exp["delta"],
            "nu": [exp["nu"]],
            "sigmas": [BAYES, *exp["sigmas"]],
        }
    # the population point of an ERM experiment is keyed by its setting, not its name, so that
    # experiments of one setting (random starts beside an informed sweep) share its jobs
    auto_dir = {f"at_{name}": f"{results}/population/at/{setting_dir(exp)}" for name, exp in config["erm"].items()}
    for name, exp in pops.items():
        for sigma in exp["sigmas"]:
            path = f"{auto_dir[name]}/{sigma}.nc" if name in auto_dir else f"{results}/population/{name}/{sigma}.nc"
            law = _law(exp["L"])
            _add(
                p.population,
                path,
                PopulationJob(sigma=sigma, model=exp["model"], L=law, delta=exp["delta"], nu_grid=exp["nu"], out=path),
            )
            p.members.setdefault(("population", name), []).append(path)
    p.population_batches = population_batches(p.population, f"{results}/population/")
    _plan_erm(config, p, results)
    _plan_replica(config, p, results)
    _plan_length(config, p, results)
    return p


def _plan_erm(config: dict, p: Plan, results: str) -> None:
    """One TrainJob per ERM run (and one DataJob per stored set), grouped into training batches."""
    for name, exp in config["erm"].items():
        for alpha, (D, n) in ((a, dn) for a in exp["alphas"] for dn in sizes(exp, a)):
            for seed in exp["seeds"]:
                s = seeds(seed)
                key = f"D{D}_n{n}_seed{seed}" + ("" if exp["sampler"] == NUMPY else f"_{exp['sampler']}")
                dpath = f"{results}/data/{setting_dir(exp)}/{key}.zarr"
                data = DataJob(
                    model=exp["model"],
                    nu=exp["nu"],
                    L=_law(exp["L"]),
                    delta=exp["delta"],
                    D=D,
                    n=n,
                    teacher_seed=s["teacher_seed"],
                    data_seed=s["data_seed"],
                    sampler=exp["sampler"],
                )
                if exp["store_data"]:
                    _add(p.data, dpath, data)
                for sigma in exp["sigmas"]:
                    for lam in exp["lams"]:
                        stem = f"{results}/erm/{setting_dir(exp)}/{sigma}/lam{fmt(lam)}/alpha{fmt(alpha)}/{key}"
                        for start, run in erm_runs(exp, seed):
                            path = f"{stem}_{start}.nc"
                            job = TrainJob(
                                **vars(data),
                                sigma=sigma,
                                lam=lam,
                                test_seed=s["test_seed"],
                                **run,
                                tol=exp["tol"],
                                n_test=exp["n_test"],
                                dtype=exp["dtype"],
                                data=dpath if exp["store_data"] else None,
                                out=path,
                            )
                            _add(p.erm, path, job)
                            p.members.setdefault(("erm", name), []).append(path)
    batches: dict[str, list] = {}
    for job in p.erm.values():
        batches.setdefault(batch_key(job), []).append(job)
    # members in path order: a batch's command line (its params) must not depend on the order in
    # which the config lists its experiments, or reordering them would rerun every batch
    p.train_batches = {k: TrainBatchJob(members=sorted(v, key=lambda j: j.out)) for k, v in batches.items()}


def _plan_replica(config: dict, p: Plan, results: str) -> None:
    """One ReplicaJob per (setting, σ, λ) over the α grid, plus one Bayes-optimal job per setting."""
    for name, exp in config["replica"].items():
        base = {
            "model": exp["model"],
            "nu": exp["nu"],
            "L": _law(exp["L"]),
            "delta": exp["delta"],
            "alpha_grid": exp["alphas"],
            "seed": exp["seed"],
        }
        stem = f"{results}/replica/{setting_dir(exp)}"
        for sigma in exp["sigmas"]:
            for lam in exp["lams"]:
                mc = f"_mc{exp['mc_seeds']}" if exp["mc_seeds"] > 1 else ""
                mc += "_oneway" if exp["one_way"] else ""
                path = f"{stem}/{sigma}/lam{fmt(lam)}_n{exp['n_samples']}_seed{exp['seed']}{mc}.nc"
                _add(
                    p.replica,
                    path,
                    ReplicaJob(
                        **base,
                        n_samples=exp["n_samples"],
                        sigma=sigma,
                        lam_grid=(lam,),
                        mc_seeds=exp["mc_seeds"],
                        one_way=exp["one_way"],
                    ),
                )
                p.members.setdefault(("replica", name), []).append(path)
                if RSB1 in exp["ansatz"]:
                    law = {k: base[k] for k in ("model", "nu", "L", "delta")}
                    _plan_rsb1(exp, p, f"{stem}/{sigma}/rsb1", ("replica", name), law, sigma=sigma, lam=lam, rs=path)
        if exp["bayes_optimal"]:
            path = f"{stem}/bayes_optimal_n{exp['bayes_optimal_samples']}_seed{exp['seed']}.nc"
            _add(p.replica, path, ReplicaJob(**base, n_samples=exp["bayes_optimal_samples"], bayes_optimal=True))
            p.members.setdefault(("replica", name), []).append(path)


def _plan_rsb1(exp: dict, p: Plan, stem: str, members: tuple, law: dict, *, sigma: str, lam: float, rs: str) -> None:
    """One Rsb1Job per α of ``rsb1.alphas`` (all of the grid if null) at (σ, λ) of the data law
    ``law`` (model, nu, L, delta), started from the RS sweep file ``rs``; the path keys the samples
    (N₀, N₁ and their seeds), the solver options are its command line's. Beside each, one
    Rsb1ErrorJob (its batch-means error; ``rsb1_error/``, keyed by the batch count K)."""
    o = exp["rsb1"]
    for alpha in o["alphas"] or exp["alphas"]:
        path = f"{stem}/lam{fmt(lam)}_alpha{fmt(alpha)}_n{o['n_outer']}x{o['n_inner']}_seed{exp['seed']}_{o['inner_seed']}.nc"
        job = Rsb1Job(
            **law,
            sigma=sigma,
            lam=lam,
            alpha=alpha,
            n_outer=o["n_outer"],
            n_inner=o["n_inner"],
            seed=exp["seed"],
            inner_seed=o["inner_seed"],
            s_grid=o["s_grid"],
            s_extend=o["s_extend"],
            s_max_rows=o["s_max_rows"],
            n0_check=o["n0_check"],
            frac=o["frac"],
            tol=o["tol"],
            max_iter=o["max_iter"],
            rs=rs,
        )
        _add(p.rsb1, path, job)
        p.members.setdefault(members, []).append(path)
        error = path.replace("/rsb1/", "/rsb1_error/").removesuffix(".nc") + f"_k{o['batches']}.nc"
        _add(p.rsb1_error, error, Rsb1ErrorJob(rsb1=path, batches=o["batches"], tol=o["tol"], max_iter=o["max_iter"]))
        p.members[members].append(error)


def _plan_length(config: dict, p: Plan, results: str) -> None:
    """One job per (length experiment, σ): the (L, ν) grid, the target ν, the variable-length grid."""
    for name, exp in config["length"].items():
        for sigma in exp["sigmas"]:
            path = f"{results}/length/{name}/{sigma}.nc"
            var = exp["var_L_max"] is not None and sigma in exp["var_sigmas"]
            _add(
                p.length,
                path,
                LengthJob(
                    sigma=sigma,
                    model=exp["model"],
                    L_grid=exp["lengths"],
                    nu_grid=exp["nu"],
                    delta=exp["delta"],
                    target_risk=exp["target_risk"] if sigma in exp["target_sigmas"] else None,
                    var_L_max=exp["var_L_max"] if var else None,
                    var_nu_grid=exp["var_nu"] if var else None,
                ),
            )
            p.members.setdefault(("length", name), []).append(path)
