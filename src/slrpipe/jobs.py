"""What one workflow job runs: a typed options record per command, and its command line.

``slrpipe.workflow.plan`` produces one record per job; a Snakemake rule's command line is
:func:`argv` of that record (nothing hand-listed), and the command rebuilds the same record from
its parsed arguments (:func:`from_namespace`), so a parameter has one form — the record's field —
from config to result file. Field ``x_y`` is the option ``--x-y``; values are written by
:func:`text` (floats by ``repr``: an exact round trip; length laws by :func:`slrpipe.lengths.format_L`;
sequences comma-joined; booleans as a bare flag when true; ``None`` left out).
"""

from __future__ import annotations

import dataclasses
import json
import math
import shlex
from dataclasses import dataclass, field

from slrpipe.lengths import format_L, length_law

#: fields a record carries but no command line does (where the result goes is the rule's ``--out``)
NOT_ARGUMENTS = ("out",)


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


def argv(record) -> list[str]:
    """``['--name', 'value', …]`` for every field of a job record (dataclass) that is set.

    A nested record (a ``members`` tuple of records) is written as one JSON argument."""
    out = []
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if f.name in NOT_ARGUMENTS or value is None or value is False:
            continue
        flag = "--" + f.name.replace("_", "-")
        if value is True:
            out.append(flag)
        elif f.metadata.get("json"):
            out += [flag, json.dumps([_jsonable(v) for v in value], separators=(",", ":"))]
        else:
            out += [flag, text(value)]
    return out


def command_line(record) -> str:
    """:func:`argv` as one shell-quoted string (what a rule puts into its shell command)."""
    return shlex.join(argv(record))


def _jsonable(record) -> dict:
    return {k: (format_L(v) if k == "L" else v) for k, v in dataclasses.asdict(record).items() if v is not None}


def from_namespace(cls, ns, **overrides):
    """The record of type ``cls`` from parsed arguments (fields missing from ``ns`` keep their default)."""
    kw = {f.name: getattr(ns, f.name) for f in dataclasses.fields(cls) if hasattr(ns, f.name)}
    kw.update(overrides)
    return cls(**kw)


def members_from_json(cls, text: str) -> list:
    """The ``cls`` records of a batch command's ``--members`` (the JSON :func:`argv` writes for a
    batch record), each with its ``out``.

    Raises:
        ValueError: not a JSON list of ``cls`` records with an ``out`` each.
    """
    from slrpipe.lengths import parse_L

    try:
        jobs = [cls(**{**m, "L": parse_L(str(m["L"]))}) for m in json.loads(text)]
    except (json.JSONDecodeError, TypeError, KeyError) as exc:
        raise ValueError(f"members: a JSON list of {cls.__name__} records expected ({exc})") from None
    if not jobs or any(j.out is None for j in jobs):
        raise ValueError("members: every record needs its 'out' path")
    return jobs


def _floats(xs) -> tuple[float, ...]:
    return tuple(float(x) for x in xs)


# ------------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class DataJob:
    """A training set (``slrpipe generate``; docs/model.md §2): the data law (model, ν, L as a length
    law, Δ), dimension D, n sequences, the teacher and data seeds and the sampler that draws it
    (``slrpipe.vocabulary.SAMPLERS``; docs/model.md §8)."""

    model: str
    nu: float
    L: dict
    delta: float
    D: int
    n: int
    teacher_seed: int
    data_seed: int
    sampler: str = "numpy"

    def __post_init__(self):
        object.__setattr__(self, "nu", float(self.nu))
        object.__setattr__(self, "delta", float(self.delta))
        object.__setattr__(self, "L", length_law(self.L))


@dataclass(frozen=True)
class TrainJob(DataJob):
    """One ERM run (``slrpipe train``; docs/model.md §5): a training set (its law and seeds, or a
    stored one at ``data``), σ, ridge λ, the start (init, restart index, init_seed), the optimiser
    with its step size (``lr``, first-order only) and budget, whether its training set's L-BFGS
    starts are trained together (``lanes``), the test set (n_test, test_seed), the precision;
    ``out`` is the result file. With ``data`` the law and seeds are checked against
    the stored set's."""

    sigma: str = "softmax"
    lam: float = 0.1
    init: str = "informed"
    restart: int = 0
    init_seed: int = 0
    optimizer: str = "lbfgs"
    lr: float | None = None
    max_iter: int = 1000
    record_every: int = 10
    tol: float | None = None
    lanes: bool = False
    n_test: int = 100_000
    test_seed: int | None = None
    dtype: str = "float32"
    data: str | None = None
    out: str | None = None

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "lam", float(self.lam))


@dataclass(frozen=True)
class TrainBatchJob:
    """Several ERM runs trained in one process (``slrpipe train-batch``): every member a
    :class:`TrainJob` with its ``out``; runs that share a training set reuse it, and runs of one
    shape reuse one compiled program."""

    members: tuple = field(metadata={"json": True})

    def __post_init__(self):
        object.__setattr__(self, "members", tuple(self.members))


@dataclass(frozen=True)
class PopulationJob:
    """The optimal population risk over a ν grid for one σ or the Bayes oracle (``slrpipe
    population``; docs/model.md §4); ``out`` is the result file."""

    sigma: str
    model: str
    L: dict
    delta: float
    nu_grid: tuple
    out: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "delta", float(self.delta))
        object.__setattr__(self, "L", length_law(self.L))
        object.__setattr__(self, "nu_grid", _floats(self.nu_grid))


@dataclass(frozen=True)
class PopulationBatchJob:
    """Several population sweeps in one process (``slrpipe population-batch``): every member a
    :class:`PopulationJob` with its ``out`` (the workflow batches the σ of one experiment)."""

    members: tuple = field(metadata={"json": True})

    def __post_init__(self):
        object.__setattr__(self, "members", tuple(self.members))


@dataclass(frozen=True)
class LengthJob:
    """The population optimum against L for one σ (``slrpipe length``; docs/theory.md §12)."""

    sigma: str
    model: str
    L_grid: tuple
    nu_grid: tuple
    delta: float
    target_risk: float | None = None
    var_L_max: int | None = None
    var_nu_grid: tuple | None = None

    def __post_init__(self):
        object.__setattr__(self, "L_grid", tuple(int(v) for v in self.L_grid))
        object.__setattr__(self, "nu_grid", _floats(self.nu_grid))
        if self.var_nu_grid is not None:
            object.__setattr__(self, "var_nu_grid", _floats(self.var_nu_grid))


@dataclass(frozen=True)
class ReplicaJob:
    """A replica sweep over α (``slrpipe replica``; docs/theory.md): σ and the λ grid, or the
    Bayes-optimal state evolution (``bayes_optimal``, no σ or λ); the channel's Monte Carlo size,
    seed and number of independent draws; ``one_way``: the down pass only (docs/theory.md §9)."""

    model: str
    nu: float
    L: dict
    delta: float
    alpha_grid: tuple
    n_samples: int
    seed: int
    sigma: str | None = None
    lam_grid: tuple | None = None
    mc_seeds: int | None = None
    one_way: bool = False
    bayes_optimal: bool = False

    def __post_init__(self):
        object.__setattr__(self, "nu", float(self.nu))
        object.__setattr__(self, "L", length_law(self.L))
        object.__setattr__(self, "alpha_grid", _floats(self.alpha_grid))
        if self.lam_grid is not None:
            object.__setattr__(self, "lam_grid", _floats(self.lam_grid))


@dataclass(frozen=True)
class Rsb1Job:
    """The zero-temperature 1RSB ground state at one point (``slrpipe rsb1``; docs/theory.md §13):
    the data law, σ, λ, α; the outer samples (n_outer N₀, the RS fields of ``seed``) and inner
    samples (n_inner N₁ per outer sample, ``inner_seed``); the Parisi parameters scanned (s_grid,
    ascending; extended by the factor s_extend up to s_max_rows solves in all where no maximum of Φ
    is bracketed, slrpipe.theory.replica.rsb1.scan; ``n0_check``: RS and the state reported solved
    again at 2N₀, the convergence in N₀), the start δq = frac·(q − m²), the fixed-point tolerance and budget per s; ``rs``:
    the RS sweep file whose fixed point at (λ, α) starts the RS solve on these samples."""

    model: str
    nu: float
    L: dict
    delta: float
    sigma: str
    lam: float
    alpha: float
    n_outer: int
    n_inner: int
    seed: int
    inner_seed: int
    s_grid: tuple
    s_extend: float
    s_max_rows: int
    frac: float
    tol: float | None
    max_iter: int | None
    rs: str
    n0_check: bool = False

    def __post_init__(self):
        for name in ("nu", "delta", "lam", "alpha", "frac", "s_extend"):
            object.__setattr__(self, name, float(getattr(self, name)))
        if self.tol is not None:  # None: the solver's default (commands.rsb1.resolved)
            object.__setattr__(self, "tol", float(self.tol))
        object.__setattr__(self, "L", length_law(self.L))
        object.__setattr__(self, "s_grid", _floats(self.s_grid))


@dataclass(frozen=True)
class Rsb1ErrorJob:
    """The batch-means Monte Carlo error of one 1RSB point's reported state (``slrpipe rsb1-error``;
    docs/theory.md §13): ``rsb1``, the point's result file (``slrpipe rsb1``); ``batches``, K
    antithetic-closed batches of its outer samples, each solved at the reported s from the reported
    state with tolerance ``tol`` and at most ``max_iter`` channel passes."""

    rsb1: str
    batches: int
    tol: float | None
    max_iter: int | None

    def __post_init__(self):
        if self.tol is not None:  # None: the solver's default (commands.rsb1.resolved)
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
