"""What one workflow job runs: a typed options record per command (the table :data:`RECORDS`).

``slrpipe.workflow.plan`` produces one record per job; its command line, and the command's options,
are generated from the record (:mod:`slrpipe.job_args`), so a parameter has one declaration — the
record's field, with its default (from ``slrpipe.vocabulary.DEFAULTS`` where a config or a library
option shares it), its parser, choices and help — from config to result file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from slrpipe.job_args import arg, parse_grid, parse_lengths, parse_nu, parse_nu_grid
from slrpipe.lengths import length_law, parse_L
from slrpipe.vocabulary import BAYES, DEFAULTS, DTYPES, INITS, MODELS, OPTIMIZERS, REPLICA_SIGMAS, SAMPLERS, SIGMAS

_LAW, _ERM, _REPLICA, _RSB1 = DEFAULTS["law"], DEFAULTS["erm"], DEFAULTS["replica"], DEFAULTS["rsb1"]


def _floats(xs) -> tuple[float, ...]:
    return tuple(float(x) for x in xs)


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
    init: str = arg("start of training", _ERM["inits"][0], choices=INITS)
    restart: int = arg(
        "index of this start among the restarts of its seed (recorded as a coordinate; the workflow "
        "sets --init-seed to slrpipe.vocabulary.init_seed(seed, restart))",
        0,
    )
    init_seed: int = arg("seed of a random or small start", 0)
    optimizer: str = arg("optimiser (slrpipe.train.erm)", _ERM["optimizers"][0], choices=OPTIMIZERS)
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
