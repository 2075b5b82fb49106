"""What one workflow job runs: a typed options record per command, and its command line.

``slrpipe.workflow.plan`` produces one record per job; a Snakemake rule's command line is
:func:`argv` of that record (nothing hand-listed), and the command's options are generated from the
same record (:func:`add_arguments`) and rebuild it from its parsed arguments (:func:`from_namespace`),
so a parameter has one declaration — the record's field, with its default (from
``slrpipe.vocabulary.DEFAULTS`` where a config or a library option shares it), its parser, choices
and help — from config to result file. Field ``x_y`` is the option ``--x-y``; values are written by
:func:`text` (floats by ``repr``: an exact round trip; length laws by :func:`slrpipe.lengths.format_L`;
sequences comma-joined; ``None`` left out) and read by the field's parser (``metadata["parse"]``,
else its annotated type); a boolean is a bare flag, written where it differs from its default
(``--x-y`` for true, ``--no-x-y`` for a field true by default).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import shlex
from dataclasses import MISSING, dataclass, field

from slrpipe.lengths import format_L, length_law, parse_L
from slrpipe.vocabulary import BAYES, DEFAULTS, DTYPES, INITS, MODELS, OPTIMIZERS, REPLICA_SIGMAS, SAMPLERS, SIGMAS

#: fields a record carries but no command line does (where the result goes is the rule's ``--out``)
NOT_ARGUMENTS = ("out",)
_LAW, _ERM, _REPLICA, _RSB1 = DEFAULTS["law"], DEFAULTS["erm"], DEFAULTS["replica"], DEFAULTS["rsb1"]


# ------------------------------------------------------------------------------ text and parsers
def text(value) -> str:
    """The command-line text of one field value (see the module docstring).

    Raises:
        TypeError: a value of a type no command reads (a nested dict other than a length law).
    """
    if isinstance(value, bool):
        raise TypeError("booleans are flags, not values")
    if isinstance(value, dict):
        return format_L(value)
    if isinstance(value, (list, tuple)):
        return ",".join(text(v) for v in value)
    if isinstance(value, float):
        return "inf" if math.isinf(value) else repr(value)
    if isinstance(value, (int, str)):
        return str(value)
    raise TypeError(f"no command-line form for {type(value).__name__}: {value!r}")


def parse_nu(text: str) -> float:
    """'inf' or a float ≥ 0 (ν, the signal strength); NaN and negative values are refused.

    Raises:
        ValueError: one line naming nu.
    """
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"nu: must be a number ≥ 0 or inf, got {text!r}") from None
    if not (v >= 0):
        raise ValueError(f"nu: must be ≥ 0 or inf, got {text}")
    return v


def _comma_list(text: str, convert, name: str, expected: str) -> list:
    """The non-empty comma-separated list ``text``, each item through ``convert``.

    Raises:
        ValueError: one line naming ``name`` (an item ``convert`` refuses, or no item)."""
    try:
        vals = [convert(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{name}: a comma list of {expected} expected, got {text!r}") from None
    if not vals:
        raise ValueError(f"{name}: empty, got {text!r}")
    return vals


def parse_grid(text: str) -> list[float]:
    """A comma-separated list of numbers (a grid of α, λ or s), non-empty.

    Raises:
        ValueError: one line naming the grid.
    """
    return _comma_list(text, float, "grid", "numbers")


def parse_nu_grid(text: str) -> list[float]:
    """A non-empty comma-separated list of ν (each as :func:`parse_nu`).

    Raises:
        ValueError: one line naming nu.
    """
    return _comma_list(text, parse_nu, "nu", "numbers ≥ 0 or inf")


def parse_lengths(text: str) -> list[int]:
    """A non-empty comma-separated list of fixed lengths L ≥ 1.

    Raises:
        ValueError: one line naming L.
    """
    vals = _comma_list(text, int, "L", "integers ≥ 1")
    if min(vals) < 1:
        raise ValueError(f"L: a comma list of integers ≥ 1 expected, got {text!r}")
    return vals


def typed(parse):
    """``parse`` as an argparse ``type``: its ValueError's one-line message becomes argparse's error
    message (``slrpipe <step>: error: argument --x: <message>``, exit status 2)."""

    def convert(text):
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


# --------------------------------------------------------------------------- record <-> command line
def option(name: str) -> str:
    """The option of field ``name``: ``--x-y`` for ``x_y``."""
    return "--" + name.replace("_", "-")


def argv(record) -> list[str]:
    """``['--name', 'value', …]`` for every field of a job record (dataclass) that is set.

    A nested record (a ``members`` tuple of records) is written as one JSON argument.

    Raises:
        ValueError: a field None whose default is not (the command would read its default instead).
    """
    out = []
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if f.name in NOT_ARGUMENTS:
            continue
        if value is None:
            if f.default not in (None, MISSING):
                raise ValueError(f"{f.name}: None has no command line (the command would read {f.default!r})")
            continue
        flag = option(f.name)
        if isinstance(value, bool):
            if value != f.default:
                out.append(flag if value else "--no-" + flag[2:])
        elif f.metadata.get("json"):
            out += [flag, members_json(record)]
        else:
            out += [flag, text(value)]
    return out


def command_line(record) -> str:
    """:func:`argv` as one shell-quoted string (what a rule puts into its shell command)."""
    return shlex.join(argv(record))


#: the parser of a field whose metadata names none, by its annotated type (``X`` or ``X | None``)
_PARSERS = {"float": float, "int": int, "str": str}


def add_arguments(p, cls, *, optional=()) -> None:
    """One option per field of the job record ``cls`` (added to the subparser ``p``): ``--x-y`` with
    the field's parser (``metadata["parse"]``, else its annotated type), ``choices`` and ``help``
    from its metadata, its default, required where it has none; a boolean a flag (``--no-x-y`` where
    its default is true); a ``members`` field (``metadata["json"]``: the member record) the
    ``--members`` / ``--members-file`` pair (:func:`add_members_arguments`). ``optional``: fields
    made optional with default None (the command fills them, e.g. ``train`` from a stored set).
    :data:`NOT_ARGUMENTS` are left to the command.

    Raises:
        TypeError: a field whose metadata names no parser and whose type has none in ``_PARSERS``;
            a boolean without a default.
    """
    for f in dataclasses.fields(cls):
        if f.name in NOT_ARGUMENTS:
            continue
        meta, default = f.metadata, f.default
        if meta.get("json"):
            add_members_arguments(p, meta["json"])
            continue
        help_ = meta.get("help", "")
        if f.type == "bool":
            if default is MISSING:
                raise TypeError(f"{cls.__name__}.{f.name}: a flag needs a default (the value its absence means)")
            flag = option(f.name) if default is not True else "--no-" + option(f.name)[2:]
            p.add_argument(flag, dest=f.name, action="store_false" if default is True else "store_true", help=help_)
            continue
        parse = meta.get("parse")
        if parse is None:
            base = f.type.split("|")[0].strip()
            if base not in _PARSERS:
                raise TypeError(f"{cls.__name__}.{f.name}: no command-line parser for type {f.type!r}")
            parse = _PARSERS[base]
        kw = {"dest": f.name, "type": parse if parse in _PARSERS.values() else typed(parse), "help": help_}
        if "choices" in meta:
            kw["choices"] = meta["choices"]
        if f.name in optional:
            kw["default"] = None
        elif default is MISSING:
            kw["required"] = True
        else:
            kw["default"] = default
            if default is not None:
                kw["help"] = f"{help_} (default {text(default)})".lstrip()
        p.add_argument(option(f.name), **kw)


def from_namespace(cls, ns, **overrides):
    """The record of type ``cls`` from parsed arguments (fields missing from ``ns`` keep their default)."""
    kw = {f.name: getattr(ns, f.name) for f in dataclasses.fields(cls) if hasattr(ns, f.name)}
    kw.update(overrides)
    return cls(**kw)


def defaults(cls) -> dict:
    """{field: default} of the fields of record ``cls`` that have one."""
    return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not MISSING}


def members_json(batch) -> str:
    """The members of a batch record (:class:`TrainBatchJob`, :class:`PopulationBatchJob`) as the
    JSON text that ``--members`` carries and a batch's manifest file holds (the workflow passes
    the file, ``--members-file``: a batch's JSON can exceed what one command line should carry)."""
    return json.dumps([_jsonable(v) for v in batch.members], separators=(",", ":"))


def _jsonable(record) -> dict:
    return {k: (format_L(v) if k == "L" else v) for k, v in dataclasses.asdict(record).items() if v is not None}


def members_from_json(cls, text: str) -> list:
    """The ``cls`` records of a batch command's ``--members`` (the JSON :func:`argv` writes for a
    batch record), each with its ``out``.

    Raises:
        ValueError: not a JSON list of ``cls`` records with an ``out`` each.
    """
    try:
        jobs = [cls(**{**m, "L": parse_L(str(m["L"]))}) for m in json.loads(text)]
    except (json.JSONDecodeError, TypeError, KeyError) as exc:
        raise ValueError(f"members: a JSON list of {cls.__name__} records expected ({exc})") from None
    if not jobs or any(j.out is None for j in jobs):
        raise ValueError("members: every record needs its 'out' path")
    return jobs


def add_members_arguments(p, cls) -> None:
    """The mutually exclusive ``--members`` (JSON text) / ``--members-file`` (a file of that text)
    of a batch command, one of them required (added to its subparser ``p``)."""
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--members", help=f"JSON list of {cls.__name__} records (slrpipe.jobs), each with 'out'")
    g.add_argument("--members-file", help="a file holding that JSON list (the workflow's batch manifest)")


def members_of(cls, args) -> list:
    """The ``cls`` records of a batch command's parsed ``--members`` or ``--members-file``.

    Raises:
        ValueError: not a JSON list of ``cls`` records with an ``out`` each, or an unreadable file.
    """
    if args.members is not None:
        return members_from_json(cls, args.members)
    try:
        with open(args.members_file, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise ValueError(f"members-file: cannot read {args.members_file!r} ({exc.strerror})") from None
    return members_from_json(cls, text)


def _floats(xs) -> tuple[float, ...]:
    return tuple(float(x) for x in xs)


def arg(help: str, default=MISSING, **metadata):
    """A record field with its command-line metadata: ``help``, and optionally ``parse`` (text →
    value; default: the annotated type) and ``choices``."""
    return field(default=default, metadata={"help": help, **metadata})


_NU = "signal strength ν ≥ 0 (inf: max-SLR only)"
_LAW_TEXT = "length law: '3', 'uniform:1,2,3' or JSON {\"1\": 0.5, \"2\": 0.5}"
_FIXED_L = "fixed sequence length (the replica solver takes no variable L)"
_DELTA = "label-noise standard deviation Δ ≥ 0"


# ------------------------------------------------------------------------------------- records
@dataclass(frozen=True, kw_only=True)
class DataJob:
    """A training set (``slrpipe generate``; docs/model.md §2): the data law (model, ν, L as a length
    law, Δ), dimension D, n sequences, the teacher and data seeds and the sampler that draws it
    (``slrpipe.vocabulary.SAMPLERS``; docs/model.md §8)."""

    model: str = arg("SLR variant", choices=MODELS)
    nu: float = arg(_NU, parse=parse_nu)
    L: dict = arg(_LAW_TEXT, parse=parse_L)
    delta: float = arg(_DELTA, _LAW["delta"])
    D: int = arg("token dimension")
    n: int = arg("number of sequences")
    teacher_seed: int = arg("seed of the teacher")
    data_seed: int = arg("seed of the sequences")
    sampler: str = arg(
        "numpy: drawn on the host; jax: on JAX's default device (another draw of the same law)",
        _ERM["sampler"],
        choices=SAMPLERS,
    )

    def __post_init__(self):
        object.__setattr__(self, "nu", float(self.nu))
        object.__setattr__(self, "delta", float(self.delta))
        object.__setattr__(self, "L", length_law(self.L))


@dataclass(frozen=True, kw_only=True)
class TrainJob(DataJob):
    """One ERM run (``slrpipe train``; docs/model.md §5): a training set (its law and seeds, or a
    stored one at ``data``), σ, ridge λ, the start (init, restart index, init_seed), the optimiser
    with its step size (``lr``, first-order only) and budget, whether its training set's L-BFGS
    starts are trained together (``lanes``), the test set (n_test, test_seed), the precision;
    ``out`` is the result file. With ``data`` the law and seeds are checked against
    the stored set's."""

    sigma: str = arg("score function", "softmax", choices=SIGMAS)
    lam: float = arg("ridge λ on ½Σ(y−f)² + (λ/2)(|k|²+|v|²)", 0.1)
    init: str = arg("start of training", "informed", choices=INITS)
    restart: int = arg(
        "index of this start among the restarts of its seed (recorded as a coordinate; the workflow "
        "sets --init-seed to slrpipe.vocabulary.init_seed(seed, restart))",
        0,
    )
    init_seed: int = arg("seed of a random or small start", 0)
    optimizer: str = arg("optimiser (slrpipe.train.erm)", "lbfgs", choices=OPTIMIZERS)
    lr: float | None = arg("gd/sgd/adam step size (none: slrpipe.vocabulary.DEFAULTS['erm']['lr'])", None)
    max_iter: int = arg("L-BFGS iterations or optimiser steps", _ERM["max_iter"])
    record_every: int = arg("trajectory period in steps", _ERM["record_every"])
    tol: float | None = arg("stop when |∇𝓛|₂/n < tol (none: 1e-5 float32, 1e-8 float64)", None)
    lanes: bool = arg(
        "lbfgs: train the starts of each training set together (slrpipe.train.lanes; in train-batch, "
        "the members that differ only in their start)",
        False,
    )
    n_test: int = arg("test sequences", _ERM["n_test"])
    test_seed: int | None = arg("seed of the test set (none: data seed + 10000, vocabulary.default_test_seed)", None)
    dtype: str = arg("training precision", _ERM["dtype"], choices=DTYPES)
    data: str | None = arg("stored dataset (zarr); the data options, if given, must match it", None)
    out: str | None = None

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "lam", float(self.lam))


@dataclass(frozen=True, kw_only=True)
class TrainBatchJob:
    """Several ERM runs trained in one process (``slrpipe train-batch``): every member a
    :class:`TrainJob` with its ``out``; runs that share a training set reuse it, and runs of one
    shape reuse one compiled program."""

    members: tuple = field(metadata={"json": TrainJob})

    def __post_init__(self):
        object.__setattr__(self, "members", tuple(self.members))


@dataclass(frozen=True, kw_only=True)
class PopulationJob:
    """The optimal population risk over a ν grid for one σ or the Bayes oracle (``slrpipe
    population``; docs/model.md §4); ``out`` is the result file."""

    sigma: str = arg("score function or the Bayes oracle", choices=(*SIGMAS, BAYES))
    model: str = arg("SLR variant", choices=MODELS)
    L: dict = arg(_LAW_TEXT, parse=parse_L)
    delta: float = arg(_DELTA, _LAW["delta"])
    nu_grid: tuple = arg("comma list of ν ≥ 0 ('inf' for max-SLR)", parse=parse_nu_grid)
    out: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "delta", float(self.delta))
        object.__setattr__(self, "L", length_law(self.L))
        object.__setattr__(self, "nu_grid", _floats(self.nu_grid))


@dataclass(frozen=True, kw_only=True)
class PopulationBatchJob:
    """Several population sweeps in one process (``slrpipe population-batch``): every member a
    :class:`PopulationJob` with its ``out`` (the workflow batches the σ of one experiment)."""

    members: tuple = field(metadata={"json": PopulationJob})

    def __post_init__(self):
        object.__setattr__(self, "members", tuple(self.members))


@dataclass(frozen=True, kw_only=True)
class LengthJob:
    """The population optimum against L for one σ (``slrpipe length``; docs/theory.md §12)."""

    sigma: str = arg("score function or the Bayes oracle", choices=(*SIGMAS, BAYES))
    model: str = arg("SLR variant", choices=MODELS)
    L_grid: tuple = arg("comma list of fixed lengths L ≥ 1", parse=parse_lengths)
    nu_grid: tuple = arg("comma list of ν ≥ 0", parse=parse_nu_grid)
    delta: float = arg(_DELTA, _LAW["delta"])
    target_risk: float | None = arg("also find, per L, the ν reaching this excess risk", None)
    var_L_max: int | None = arg("also the optimum for L ~ Uniform{1..N} (with --var-nu-grid)", None)
    var_nu_grid: tuple | None = arg("ν grid of the variable-length optimum", None, parse=parse_nu_grid)

    def __post_init__(self):
        object.__setattr__(self, "L_grid", tuple(int(v) for v in self.L_grid))
        object.__setattr__(self, "nu_grid", _floats(self.nu_grid))
        if self.var_nu_grid is not None:
            object.__setattr__(self, "var_nu_grid", _floats(self.var_nu_grid))


@dataclass(frozen=True, kw_only=True)
class ReplicaJob:
    """A replica sweep over α (``slrpipe replica``; docs/theory.md): σ and the λ grid, or the
    Bayes-optimal state evolution (``bayes_optimal``, no σ or λ); the channel's Monte Carlo size,
    seed, points (``qmc``: scrambled Sobol', else iid Gaussian) and number of independent draws;
    ``one_way``: the down pass only (docs/theory.md §9)."""

    model: str = arg("SLR variant", choices=MODELS)
    nu: float = arg(_NU, parse=parse_nu)
    L: dict = arg(_FIXED_L, parse=parse_L)
    delta: float = arg(_DELTA, _LAW["delta"])
    alpha_grid: tuple = arg("comma-separated α = n/D", parse=parse_grid)
    n_samples: int = arg("Monte Carlo samples of the channel", _REPLICA["n_samples"])
    seed: int = arg("seed of the common random numbers", _REPLICA["seed"])
    sigma: str | None = arg("score function (none: softmax)", None, choices=REPLICA_SIGMAS)
    lam_grid: tuple | None = arg("comma-separated ridge strengths λ (none: 0.1)", None, parse=parse_grid)
    mc_seeds: int | None = arg("re-solve each converged point with this many scrambles in all (test_error_mc_sd)", None)
    qmc: bool = arg("scrambled Sobol' fields (--no-qmc: iid Gaussian)", True)
    one_way: bool = arg("continuation from large α only (no up pass, no second-branch detection)", False)
    bayes_optimal: bool = arg("Bayes-optimal state evolution instead (no σ, no λ)", False)

    def __post_init__(self):
        object.__setattr__(self, "nu", float(self.nu))
        object.__setattr__(self, "L", length_law(self.L))
        object.__setattr__(self, "alpha_grid", _floats(self.alpha_grid))
        if self.lam_grid is not None:
            object.__setattr__(self, "lam_grid", _floats(self.lam_grid))


@dataclass(frozen=True, kw_only=True)
class Rsb1Job:
    """The zero-temperature 1RSB ground state at one point (``slrpipe rsb1``; docs/theory.md §13):
    the data law, σ, λ, α; the outer samples (n_outer N₀, the RS fields of ``seed``) and inner
    samples (n_inner N₁ per outer sample, ``inner_seed``); the Parisi parameters scanned (s_grid,
    ascending; extended by the factor s_extend up to s_max_rows solves in all where no maximum of Φ
    is bracketed, slrpipe.theory.replica.rsb1.scan; ``n0_check``: RS and the state reported solved
    again at 2N₀, the convergence in N₀), the start δq = frac·(q − m²), the fixed-point tolerance and budget per s; ``rs``:
    the RS sweep file whose fixed point at (λ, α) starts the RS solve on these samples."""

    model: str = arg("SLR variant", choices=MODELS)
    nu: float = arg(_NU, parse=parse_nu)
    L: dict = arg(_FIXED_L, parse=parse_L)
    delta: float = arg(_DELTA, _LAW["delta"])
    sigma: str = arg("score function", choices=REPLICA_SIGMAS)
    lam: float = arg("ridge λ > 0")
    alpha: float = arg("α = n/D > 0 (a point of the RS sweep's grid)")
    n_outer: int = arg("outer samples N₀ (the RS fields)", _RSB1["n_outer"])
    n_inner: int = arg("inner samples N₁ per outer sample (a multiple of 4)", _RSB1["n_inner"])
    seed: int = arg("seed of the outer samples", _REPLICA["seed"])
    inner_seed: int = arg("seed of the inner samples", _RSB1["inner_seed"])
    s_grid: tuple = arg("comma-separated Parisi parameters s, ascending", parse=parse_grid)
    s_extend: float = arg("factor by which the s grid is extended (> 1)", _RSB1["s_extend"])
    s_max_rows: int = arg("most s solved in all (grid and extensions)", _RSB1["s_max_rows"])
    frac: float = arg("start δq = frac·(q − m²) from the RS state", _RSB1["frac"])
    tol: float = arg("fixed-point tolerance", _RSB1["tol"])
    max_iter: int = arg("channel evaluations per s", _RSB1["max_iter"])
    rs: str = arg("the RS sweep file (slrpipe replica) whose fixed point starts RS")
    n0_check: bool = arg("also solve RS and the state reported at 2N₀", False)

    def __post_init__(self):
        for name in ("nu", "delta", "lam", "alpha", "frac", "s_extend", "tol"):
            object.__setattr__(self, name, float(getattr(self, name)))
        object.__setattr__(self, "L", length_law(self.L))
        object.__setattr__(self, "s_grid", _floats(self.s_grid))


@dataclass(frozen=True, kw_only=True)
class Rsb1ErrorJob:
    """The batch-means Monte Carlo error of one 1RSB point's reported state (``slrpipe rsb1-error``;
    docs/theory.md §13): ``rsb1``, the point's result file (``slrpipe rsb1``); ``batches``, K
    antithetic-closed batches of its outer samples, each solved at the reported s from the reported
    state with tolerance ``tol`` and at most ``max_iter`` channel passes."""

    rsb1: str = arg("the point's result file (slrpipe rsb1)")
    batches: int = arg("K batches of the outer samples (N₀/2 a multiple of K)", _RSB1["batches"])
    tol: float = arg("fixed-point tolerance of each batch solve", _RSB1["tol"])
    max_iter: int = arg("channel evaluations per batch solve", _RSB1["max_iter"])

    def __post_init__(self):
        object.__setattr__(self, "tol", float(self.tol))


#: the record each command consumes
RECORDS = {
    "generate": DataJob,
    "train": TrainJob,
    "train-batch": TrainBatchJob,
    "population": PopulationJob,
    "population-batch": PopulationBatchJob,
    "length": LengthJob,
    "replica": ReplicaJob,
    "rsb1": Rsb1Job,
    "rsb1-error": Rsb1ErrorJob,
}
