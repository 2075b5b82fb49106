"""Config → job tables for the Snakemake workflow (no science here).

``validate`` checks a config dict against the config schema (package data ``slrpipe/resources/config.schema.yaml``,
linked from ``workflow/schemas/``) and fills its defaults — the schema's own, and those of the
parameters a command or a library option shares, from ``slrpipe.vocabulary.DEFAULTS`` (:func:`schema`)
— plus the rules JSON Schema cannot express (NaN/inf, cross-references), and raises ``ConfigError`` with one line naming the
field and the allowed range. ``plan`` turns the validated config into the jobs each rule runs,
keyed by output path; paths encode the parameters that define a job (stable float formatting), so
adding one α creates only that α's jobs. Job dicts hold the parameters' values (floats, ints,
length laws); text appears only in paths (:func:`fmt`, :func:`L_key`) and in the rules' command
lines.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

from slrpipe.figures import REGISTRY as FIGURES
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
from slrpipe.vocabulary import BAYES, DEFAULTS, FIRST_ORDER, NUMPY, RS, RSB1, init_seed, seeds

#: the config schema, package data (workflow/schemas/config.schema.yaml links to it)
SCHEMA = resources.files("slrpipe") / "resources" / "config.schema.yaml"
KINDS = ("population", "erm", "replica", "length")


class ConfigError(ValueError):
    """A config value out of its allowed range; the message is one line naming the field."""


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


def _path_str(path) -> str:
    return ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in path).replace(".[", "[")


def _describe(err: jsonschema.ValidationError) -> str:
    where = _path_str(err.absolute_path) or "<top level>"
    desc = err.schema.get("description") if isinstance(err.schema, dict) else None
    if err.validator == "oneOf" and desc:
        return f"config error: {where}: {err.instance!r} is not valid; allowed: {desc}"
    msg = err.message
    if (
        err.validator
        in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "type", "enum", "minItems", "uniqueItems")
        and desc
    ):
        msg += f" ({desc})"
    return f"config error: {where}: {msg}"


def _non_finite(node, path=()):
    """(path, value) of the first NaN anywhere, or ∞ anywhere but a ν."""
    if isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        if isinstance(node, float) and (math.isnan(node) or (math.isinf(node) and "nu" not in path)):
            return path, node
        return None
    for k, v in items:
        hit = _non_finite(v, (*path, k))
        if hit:
            return hit
    return None


def schema(schema_path=SCHEMA) -> dict:
    """The config schema (``schema_path``) with the defaults of ``slrpipe.vocabulary.DEFAULTS`` set
    on its properties: ``DEFAULTS[section]`` on ``$defs[section]`` (nested dicts on nested
    properties), ``DEFAULTS["law"]`` on every section that has the parameter.

    Raises:
        KeyError: a default for a property the schema does not have.
    """
    schema_path = Path(schema_path) if isinstance(schema_path, str) else schema_path
    out = yaml.safe_load(schema_path.read_text())
    defs = out["$defs"]
    for section, values in DEFAULTS.items():
        if section == "law":
            for name, value in values.items():
                for sub in defs.values():
                    if name in sub.get("properties", {}):
                        _set_defaults(sub, {name: value})
        else:
            _set_defaults(defs[section], values)
    return out


def _set_defaults(sub: dict, values: dict) -> None:
    for name, value in values.items():
        if name not in sub.get("properties", {}):
            raise KeyError(f"slrpipe.vocabulary.DEFAULTS: the config schema has no property {name!r} there")
        if isinstance(value, dict):
            _set_defaults(sub["properties"][name], value)
        else:
            sub["properties"][name]["default"] = value


def _fill_defaults(config: dict, schema: dict) -> None:
    """Set every default of ``schema`` that ``config`` (valid) leaves out, in place, down every
    property (what ``snakemake.utils.validate(set_default=True)`` does, on the schema of
    :func:`schema`); each default is a copy, so no two experiments share one."""
    base = jsonschema.Draft202012Validator
    properties = base.VALIDATORS["properties"]

    def set_defaults(validator, props, instance, sub):
        if validator.is_type(instance, "object"):
            for name, prop in props.items():
                if "default" in prop:
                    instance.setdefault(name, copy.deepcopy(prop["default"]))
        yield from properties(validator, props, instance, sub)

    jsonschema.validators.extend(base, {"properties": set_defaults})(schema).validate(config)


def validate(config: dict, schema_path=SCHEMA) -> dict:
    """Validate ``config`` in place and fill its defaults (:func:`schema`); returns it.

    Raises:
        ConfigError: the first violation, as one line ``config error: <field path>: <what is allowed>``.
    """
    hit = _non_finite(config)
    if hit:  # JSON Schema's range keywords let NaN and ∞ through
        where, v = hit
        raise ConfigError(
            f"config error: {_path_str(where)}: {v} is not allowed; allowed: a finite number "
            "(∞ only for a ν of model max)"
        )
    full = schema(schema_path)
    errors = list(jsonschema.Draft202012Validator(full).iter_errors(config))
    if errors:
        raise ConfigError(_describe(jsonschema.exceptions.best_match(errors)))
    # a ladder sizes every α by its own D: a sqrt_nD beside it is a contradiction — except the
    # schema's default, which validation fills in (a config is validated again by each command)
    default = full["$defs"]["erm"]["properties"]["sqrt_nD"]["default"]
    for name, exp in (config.get("erm") or {}).items():
        if isinstance(exp.get("D"), list) and exp.get("sqrt_nD", default) != default:
            raise ConfigError(
                f"config error: erm.{name}.sqrt_nD: not allowed with a D ladder (D = {exp['D']}); "
                "allowed: either D or sqrt_nD"
            )
    _fill_defaults(config, full)
    _cross_checks(config)
    return config


def _cross_checks(config: dict) -> None:
    for kind in KINDS:
        for name, exp in config[kind].items():
            nus = exp["nu"] if isinstance(exp["nu"], list) else [exp["nu"]]
            if exp["model"] == "spiked" and any(math.isinf(v) for v in nus):
                raise ConfigError(
                    f"config error: {kind}.{name}.nu: ν = inf is allowed for model max only; spiked needs finite ν ≥ 0"
                )
            if not name.replace("_", "").replace("-", "").isalnum():
                raise ConfigError(
                    f"config error: {kind}.{name}: experiment names may use letters, digits, '_' and '-' only"
                )
    for name, exp in config["erm"].items():
        for D in ladder(exp) or []:
            off = [a for a in exp["alphas"] if abs(a * D - round(a * D)) > 1e-9 * max(1.0, a * D)]
            if off:  # n = αD exactly, so the realised α of every D is the config's α (one alpha coordinate)
                raise ConfigError(
                    f"config error: erm.{name}.alphas: α·D must be an integer at every D of the ladder; "
                    f"α = {off} at D = {D} is not"
                )
    for fig, names in config["figures"].items():
        if fig not in FIGURES:
            raise ConfigError(f"config error: figures.{fig}: unknown figure; allowed: {sorted(FIGURES)}")
        kind = FIGURES[fig]
        for name in names:
            if name not in config[kind]:
                raise ConfigError(
                    f"config error: figures.{fig}: {name!r} is not a {kind} experiment; allowed: {sorted(config[kind])}"
                )
    for name, exp in config["length"].items():
        extra = sorted((set(exp["target_sigmas"]) | set(exp["var_sigmas"])) - set(exp["sigmas"]))
        if extra:
            raise ConfigError(
                f"config error: length.{name}.target_sigmas/var_sigmas: {extra} not in sigmas; allowed: {exp['sigmas']}"
            )
        if exp["target_sigmas"] and exp["target_risk"] is None:
            raise ConfigError(
                f"config error: length.{name}.target_risk: needed by target_sigmas; allowed: a number in (0, 1)"
            )
        if exp["var_sigmas"] and (exp["var_L_max"] is None or not exp["var_nu"]):
            raise ConfigError(f"config error: length.{name}.var_sigmas: needs var_L_max and a non-empty var_nu")
        if exp["model"] == "spiked" and any(math.isinf(v) for v in exp["var_nu"]):
            raise ConfigError(f"config error: length.{name}.var_nu: ν = inf is allowed for model max only")
    for name, exp in config["replica"].items():
        if exp["erm"] and exp["erm"] not in config["erm"]:
            raise ConfigError(
                f"config error: replica.{name}.erm: {exp['erm']!r} is not an erm experiment; allowed: {sorted(config['erm'])}"
            )
        if exp["bayes_optimal"] and exp["model"] == "max" and not (exp["nu"] == 0 or math.isinf(exp["nu"])):
            raise ConfigError(
                f"config error: replica.{name}.bayes_optimal: for model max needs nu = 0 or inf (got {exp['nu']}); "
                "set bayes_optimal: false"
            )
        if RSB1 in exp["ansatz"]:
            _check_rsb1(name, exp)


def _check_rsb1(name: str, exp: dict) -> None:
    """The 1RSB options of replica experiment ``name``: each job starts from the RS sweep at its
    (σ, λ, α), so rs is solved too and rsb1.alphas lie on the RS grid; the batches of the outer
    samples are whole antithetic pairs."""
    if RS not in exp["ansatz"]:
        raise ConfigError(
            f"config error: replica.{name}.ansatz: rsb1 starts from the RS sweep; allowed: [rs] or [rs, rsb1]"
        )
    opts = exp["rsb1"]
    off = [a for a in opts["alphas"] or () if not any(math.isclose(a, b, rel_tol=1e-12) for b in exp["alphas"])]
    if off:
        raise ConfigError(
            f"config error: replica.{name}.rsb1.alphas: {off} not on the RS grid; allowed: values of alphas {exp['alphas']}"
        )
    grid = opts["s_grid"]
    if any(b <= a for a, b in zip(grid, grid[1:])):
        raise ConfigError(f"config error: replica.{name}.rsb1.s_grid: {grid} must be strictly ascending")
    if opts["s_max_rows"] < len(grid):
        raise ConfigError(
            f"config error: replica.{name}.rsb1.s_max_rows: {opts['s_max_rows']} is fewer than the {len(grid)} values of s_grid"
        )
    if opts["n_outer"] % (2 * opts["batches"]):
        raise ConfigError(
            f"config error: replica.{name}.rsb1.batches: {opts['batches']} does not divide n_outer/2 = "
            f"{opts['n_outer'] / 2:g}; allowed: a divisor of it, at least 2"
        )


# --------------------------------------------------------------------------------------------
# Job tables


def ladder(exp: dict) -> list[int] | None:
    """The D ladder of an ERM experiment (``D`` given as a list; sorted ascending), else None."""
    return sorted(exp["D"]) if isinstance(exp.get("D"), list) else None


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
    (:mod:`slrpipe.jobs`) whose :func:`~slrpipe.jobs.argv` is the job's command line.

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


#: resource law of one train-batch job (measured by benchmarks/bench_erm.py batch; docs/cluster.md):
#: peak memory = MEM_BASE_MB + MEM_PER_SET × (one training set X in its dtype) + the test chunks, the
#: host memory of a CPU run (the sample, its JAX copy and the transposed copy XT: 3.2 sets measured at
#: the paper's largest batch); a GPU run holds XT on the device and needs about half of it on the host;
#: the jax sampler keeps no host copy (CPU peak one set lower: the law is 1.61× it, docs/cluster.md)
MEM_BASE_MB, MEM_PER_SET, TEST_CHUNK_MB = 1200.0, 4.0, 512.0
#: runtime = START_S + Σ_runs iterations × SEC_PER_GB_ITER × |X| in GB (+ sampling), ×SAFETY
START_S, SEC_PER_GB_ITER, SAMPLE_SEC_PER_GB, SAFETY = 120.0, 0.2, 60.0, 2.0


def batch_resources(batch: TrainBatchJob) -> dict[str, int]:
    """Slurm request of one training batch from the measured law above: ``mem_mb`` (MiB) and
    ``runtime`` (minutes) of the first attempt; the rules scale both with Snakemake's ``attempt``.
    The runtime is the CPU law (a GPU runs an iteration ~100× faster, so it is an upper bound)."""
    m = batch.members[0]
    itemsize = 8 if any(j.dtype == "float64" for j in batch.members) else 4
    x_gb = m.n * max(m.L) * m.D * itemsize / 2**30
    mem = MEM_BASE_MB + MEM_PER_SET * x_gb * 1024 + TEST_CHUNK_MB
    n_sets = len({(j.teacher_seed, j.data_seed) for j in batch.members})
    tests = {(j.teacher_seed, j.test_seed, j.n_test) for j in batch.members}  # one pass over each
    test_gb = sum(n_test for *_, n_test in tests) * max(m.L) * m.D * 4 / 2**30
    sec = (
        START_S
        + sum(j.max_iter for j in batch.members) * SEC_PER_GB_ITER * x_gb
        + SAMPLE_SEC_PER_GB * (n_sets * x_gb + test_gb)
    )
    return {"mem_mb": int(math.ceil(mem)), "runtime": int(math.ceil(SAFETY * sec / 60))}


#: replica law (``slrpipe replica``; docs/cluster.md): its channel averages over N Monte Carlo
#: samples of L tokens at each α of its grid, for each λ and Monte Carlo draw (mc_seeds), fold
#: searches included: runtime = REPLICA_START_S + REPLICA_SEC_PER_POINT × N·L·draws / 2¹⁶ × |α|·|λ|,
#: ×SAFETY; peak memory = JAX_BASE_MB + REPLICA_MB_PER_SAMPLE × N·L·draws / 2¹⁶
JAX_BASE_MB = 1000.0
REPLICA_START_S, REPLICA_SEC_PER_POINT, REPLICA_MB_PER_SAMPLE = 60.0, 100.0, 64.0
#: 1RSB law (``slrpipe rsb1``; docs/cluster.md): a fixed point at each s of the grid, each channel
#: pass N₀·N₁ prox solves: runtime = RSB1_START_S + RSB1_SEC_PER_S × N₀·N₁ / 2¹⁵ × |s|, ×SAFETY (a
#: point that needs more comes back with the attempt); peak memory = JAX_BASE_MB + RSB1_MB × N₀·N₁ / 2¹⁵
RSB1_START_S, RSB1_SEC_PER_S, RSB1_MB = 60.0, 60.0, 64.0
#: the shortest runtime requested (min): a small job's wall time is dominated by start-up and by
#: what shares its node, which no law of its size sees
MIN_RUNTIME_MIN = 10
#: first-attempt requests of the rules whose job size is not modelled (mem_mb in MiB, runtime in min)
CONSTANT_RESOURCES = {
    "generate_data": {"mem_mb": 16000, "runtime": 30},
    "population": {"mem_mb": 4000, "runtime": 30},
    "length": {"mem_mb": 4000, "runtime": 30},
}


def _request(mem_mb: float, seconds: float) -> dict[str, int]:
    return {"mem_mb": int(math.ceil(mem_mb)), "runtime": int(math.ceil(SAFETY * seconds / 60))}


def replica_resources(job: ReplicaJob) -> dict[str, int]:
    """Slurm request of one replica sweep from the law above: ``mem_mb`` (MiB) and ``runtime``
    (minutes) of the first attempt."""
    size = job.n_samples * max(job.L) * (job.mc_seeds or 1) / 2**16
    points = len(job.alpha_grid) * len(job.lam_grid or (None,))
    return _request(JAX_BASE_MB + REPLICA_MB_PER_SAMPLE * size, REPLICA_START_S + REPLICA_SEC_PER_POINT * size * points)


def rsb1_resources(job: Rsb1Job, *, s_points: int | None = None) -> dict[str, int]:
    """Slurm request of one 1RSB point from the law above (``s_points``: the number of s solved;
    default the most a scan may solve, ``s_max_rows`` rows of the extended grid plus the solves that
    refine s*, ScanOptions.refine_max, and with ``n0_check`` two more at 2N₀): ``mem_mb`` (MiB) and
    ``runtime`` (minutes) of the first attempt."""
    from slrpipe.theory.replica.rsb1.scan import ScanOptions

    size = job.n_outer * job.n_inner / 2**15
    n_s = max(len(job.s_grid), job.s_max_rows) + ScanOptions.refine_max if s_points is None else s_points
    if job.n0_check and s_points is None:
        n_s += 2 * 2  # RS and the reported state again, each at twice the samples
    return _request(JAX_BASE_MB + RSB1_MB * size, RSB1_START_S + RSB1_SEC_PER_S * size * n_s)


#: rule family -> its first-attempt law (the record of one job -> {mem_mb, runtime});
#: rsb1_error gets its 1RSB point's record: K batches of N₀/K samples at the one reported s
LAWS = {
    "train_erm": batch_resources,
    "replica": replica_resources,
    "rsb1": rsb1_resources,
    "rsb1_error": lambda job: rsb1_resources(job, s_points=1),
    **{rule: (lambda job, _r=req: dict(_r)) for rule, req in CONSTANT_RESOURCES.items()},
}


def first_attempt(family: str, record) -> dict[str, int]:
    """The Slurm request of a job of rule ``family`` (a key of :data:`LAWS`) on its first attempt:
    ``mem_mb`` (MiB) and ``runtime`` (minutes, at least :data:`MIN_RUNTIME_MIN`); the rules multiply
    both by Snakemake's attempt.

    Raises:
        KeyError: ``family`` is not a compute rule of the workflow (one line naming the allowed)."""
    if family not in LAWS:
        raise KeyError(f"no resource law for rule {family!r}; allowed: {sorted(LAWS)}")
    req = LAWS[family](record)
    return {**req, "runtime": max(req["runtime"], MIN_RUNTIME_MIN)}


#: GPU nodes (``batch_gpu_resources``): the host holds the interpreter, JAX and the test chunks
#: (MEM_BASE_MB + TEST_CHUNK_MB; measured 1372 MB at the paper's largest batch, sampler jax), plus
#: with the numpy sampler HOST_SETS_NUMPY training sets drawn on the host (measured 2661 MB). The card
#: holds one training set X in its dtype (no transposed copy off the CPU), GPU_CHUNK_MB of chunks in
#: flight (a set being drawn, a test chunk with its predictions), the lanes (``lanes_device_mb``) and
#: GPU_BASE_MB: the CUDA context, XLA's workspace and the allocator's pool, set so that the one
#: measurement of the card's memory (docs/cluster.md: 8.9 GB at 1.12 GB of X) is covered 1.1×
HOST_SETS_NUMPY, GPU_CHUNK_MB, GPU_BASE_MB = 1.5, 512.0, 8192.0


def lanes_device_mb(S: int, n: int, L: int, D: int, itemsize: int = 4, memory_size: int = 10) -> float:
    """Device memory (MiB) of S models trained together as lanes (``slrpipe.train.lanes``) on a
    training set of n sequences of L tokens of dimension D, beside X: each lane's L-BFGS state and
    line search (2·memory_size + 12 vectors of (k, v), 2D numbers each) and the evaluation's
    temporaries (8 arrays of the product's n·L·2S numbers)."""
    return (S * 2 * D * (2 * memory_size + 12) + 8 * n * L * 2 * S) * itemsize / 2**20


def batch_gpu_resources(batch: TrainBatchJob) -> dict[str, int]:
    """Request of one training batch on a GPU node (constants above): ``mem_mb`` (MiB of host
    memory) and ``gpu_mem_mb`` (MiB of the card: one training set at a time, its models as lanes),
    so that batches whose ``gpu_mem_mb`` sum to at most the card's memory can share it. The
    runtime is ``batch_resources``'s (the CPU law, an upper bound)."""
    m = batch.members[0]
    itemsize = 8 if any(j.dtype == "float64" for j in batch.members) else 4
    x_mb = m.n * max(m.L) * m.D * itemsize / 2**20
    per_set: dict = {}
    for j in batch.members:
        per_set[(j.teacher_seed, j.data_seed)] = per_set.get((j.teacher_seed, j.data_seed), 0) + 1
    S = max(per_set.values())
    host = (
        MEM_BASE_MB + TEST_CHUNK_MB + (HOST_SETS_NUMPY * x_mb if any(j.sampler != "jax" for j in batch.members) else 0)
    )
    gpu = GPU_BASE_MB + x_mb + GPU_CHUNK_MB + lanes_device_mb(S, m.n, max(m.L), m.D, itemsize)
    return {"mem_mb": int(math.ceil(host)), "gpu_mem_mb": int(math.ceil(gpu))}


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
