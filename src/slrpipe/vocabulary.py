"""The domain vocabulary of slrpipe, defined once: model, σ, init and optimiser names, seed offsets,
the Bayes key scale c_ν, the range checks of (model, ν, Δ, L) and the key/value field projection.

Everything else imports these names from here. The σ names and their classes are read from the σ
registry (:mod:`slrpipe.sigmas`, the only part of slrpipe this module imports): a new score
function is a new module there (docs/extending.md). Source: docs/model.md §1–§3 and §5.
"""

from __future__ import annotations

import math

import numpy as np

from slrpipe import sigmas as _sigmas

#: SLR variants (docs/model.md §2): spiked-SLR and max-SLR.
MODELS = ("spiked", "max")
#: score functions σ of the attention estimators (docs/model.md §3): the registry's, in its order.
SIGMAS = _sigmas.names()
#: the σ the replica theory of ERM handles (``Sigma.replica``; each σ's ``replica_note`` says why).
REPLICA_SIGMAS = tuple(s for s in SIGMAS if _sigmas.get(s).replica)
#: the population oracle's name next to the σ names (softmax at k = c_ν k*, v = v*).
BAYES = "bayes"
#: ERM initialisations (docs/model.md §5): k = c_ν k*, v = v* / N(0, I_D) / N(0, 10⁻⁴ I_D).
INITS = ("informed", "random", "small")
#: ERM optimisers (slrpipe.train.erm).
OPTIMIZERS = ("lbfgs", "gd", "adam", "sgd")
#: the first-order optimisers: a step size lr, a step budget, trajectories that are dynamics in time.
FIRST_ORDER = ("gd", "sgd", "adam")
#: the σ whose scores are normalised over the sequence (a probability vector over tokens).
NORMALISED_SIGMAS = tuple(s for s in SIGMAS if _sigmas.get(s).normalised)
#: the odd σ: σ − 1 odd in χ (``Sigma.odd``); ERM's minima are compared with mirror images (−k, −v) too
ODD_SIGMAS = tuple(s for s in SIGMAS if _sigmas.get(s).odd)
#: the starts drawn at random (seeded by init_seed); the informed start is deterministic.
RANDOM_INITS = ("random", "small")
#: replica ansätze of the finite-α theory: replica-symmetric (docs/theory.md §2–§9) and zero-temperature
#: one-step replica-symmetry breaking (docs/theory.md §13).
RS, RSB1 = "rs", "rsb1"
ANSATZE = (RS, RSB1)
#: floating-point precisions of training.
DTYPES = ("float32", "float64")
#: where a data set's random numbers are drawn (docs/model.md §8): numpy on the host, or jax on the
#: device that trains (threefry keys). Two samplers give two different data sets of the same law.
NUMPY, JAX = "numpy", "jax"
SAMPLERS = (NUMPY, JAX)

#: seed offsets (docs/model.md §5): one experiment seed s gives the teacher seed s, the training-data
#: seed 10000 + s and the test-set seed 20000 + s, so the three streams never coincide.
TEACHER_SEED_OFFSET, DATA_SEED_OFFSET, TEST_SEED_OFFSET = 0, 10_000, 20_000


def seeds(seed: int) -> dict[str, int]:
    """The three seeds of experiment seed ``seed``: {"teacher_seed", "data_seed", "test_seed"}."""
    s = int(seed)
    return {
        "teacher_seed": TEACHER_SEED_OFFSET + s,
        "data_seed": DATA_SEED_OFFSET + s,
        "test_seed": TEST_SEED_OFFSET + s,
    }


#: the stream tag of random starts: ``init_seed(seed, restart)`` hashes (INIT_STREAM, seed, restart).
INIT_STREAM = 30_000


def init_seed(seed: int, restart: int) -> int:
    """Seed of random start ``restart`` (0, 1, …) of experiment seed ``seed`` (docs/model.md §5).

    A 31-bit hash of (``INIT_STREAM``, seed, restart) through ``numpy.random.SeedSequence``, so that
    the starts of different (seed, restart) pairs are independent streams and adding a restart never
    changes the seed of an existing one. The informed start uses no randomness; its jobs record the
    restart-0 value all the same.

    Raises:
        ValueError: seed or restart negative.
    """
    if int(seed) < 0 or int(restart) < 0:
        raise ValueError(f"seed, restart: must be ≥ 0, got {seed}, {restart}")
    state = np.random.SeedSequence([INIT_STREAM, int(seed), int(restart)]).generate_state(1, np.uint32)[0]
    return int(state) >> 1


def default_test_seed(data_seed: int) -> int:
    """Test-set seed paired with a training-data seed (the same offset as :func:`seeds`)."""
    return int(data_seed) + TEST_SEED_OFFSET - DATA_SEED_OFFSET


# ------------------------------------------------------------------------------------ range checks
def check_choice(field: str, value, allowed) -> str:
    """``value`` if it is one of ``allowed``.

    Raises:
        ValueError: one line naming ``field`` and the allowed values.
    """
    if value not in allowed:
        raise ValueError(f"{field}: must be one of {', '.join(allowed)}, got {value!r}")
    return value


def check_sigma(sigma: str) -> str:
    """``sigma`` if it names a registered score function (:func:`slrpipe.sigmas.names`, which
    includes a σ registered for a block by :func:`slrpipe.sigmas.registered`); else ValueError."""
    return check_choice("sigma", sigma, _sigmas.names())


def check_model_nu(model: str, nu: float) -> float:
    """ν as a float, checked against the model: ν ≥ 0, ν = inf for max-SLR only, never NaN.

    Raises:
        ValueError: unknown model, NaN or negative ν, or spiked-SLR with ν = inf.
    """
    check_choice("model", model, MODELS)
    nu = float(nu)
    if not (nu >= 0):  # also NaN
        raise ValueError(f"nu: must be ≥ 0 (inf allowed for model 'max' only), got {nu}")
    if math.isinf(nu) and model != "max":
        raise ValueError(f"nu: inf is allowed for model 'max' only; spiked needs a finite ν ≥ 0, got {nu}")
    return nu


def check_delta(delta: float) -> float:
    """Δ as a float; ValueError unless finite and ≥ 0."""
    delta = float(delta)
    if not (delta >= 0 and math.isfinite(delta)):
        raise ValueError(f"delta: must be a finite number ≥ 0, got {delta}")
    return delta


def check_length(L) -> int:
    """A fixed sequence length as an int; ValueError unless an integer ≥ 1."""
    if isinstance(L, bool) or int(L) != L or L < 1:
        raise ValueError(f"L: must be an integer ≥ 1, got {L!r}")
    return int(L)


def c_nu(model: str, nu: float) -> float:
    """Bayes key scale c_ν: √ν for spiked-SLR, ν for max-SLR (inf at ν = inf); docs/model.md §3.

    Raises:
        ValueError: as :func:`check_model_nu`.
    """
    nu = check_model_nu(model, nu)
    return math.sqrt(nu) if model == "spiked" else nu


# -------------------------------------------------------------------------------- field projection
def project(X, k, v, mask=None, xp=np):
    """Key and value fields χ = X k/√D, z = X v/√D (docs/model.md §3), each of shape (..., L).

    X: (..., L, D); k, v: (D,); mask: bool (..., L) or None. One pass over X (both directions
    multiplied together); padded tokens are zeroed after the product, so whatever they hold never
    reaches a score or an output. ``xp``: ``numpy`` or ``jax.numpy``; the result has X's dtype.
    """
    D = X.shape[-1]
    W = xp.stack([xp.asarray(k), xp.asarray(v)], axis=1).astype(X.dtype) / math.sqrt(D)
    P = X @ W
    chi, z = P[..., 0], P[..., 1]
    if mask is not None:
        chi = xp.where(mask, chi, 0.0)
        z = xp.where(mask, z, 0.0)
    return chi, z


# ------------------------------------------------------------------------------------- defaults
#: The default of each parameter that more than one place takes, declared once: config section
#: (``$defs`` name in the config schema) -> {parameter: default}; ``law``: the data law's, in every
#: section that has the parameter; sections in :data:`UNCONFIGURED`: parameters no config sets.
#: Read by the job records (and so the command lines generated from them, slrpipe.jobs), the config
#: loader (filled into the schema's properties, slrpipe.config.load_schema), the commands and the
#: library options of the same parameter (slrpipe.train.options, the replica solvers). A config's
#: default list (``inits``, ``optimizers``) has one entry: the default of one run's parameter
#: (``init``, ``optimizer``). A default that only one place has stays there (the schema's or the
#: options class's).
DEFAULTS = {
    "law": {"delta": 0.0},
    "erm": {
        "inits": ["informed"],
        "optimizers": ["lbfgs"],
        "sampler": NUMPY,
        "max_iter": 1000,
        "record_every": 10,
        "n_test": 100_000,
        "dtype": "float32",
        # step sizes of the first-order optimisers (slrpipe.train.erm); gd 0.5 diverges for linear σ at L = 3
        "lr": {"gd": 0.05, "sgd": 0.2, "adam": 0.01},
    },
    "replica": {"n_samples": 20000, "seed": 0, "bayes_optimal_samples": 50000},
    "rsb1": {
        "n_outer": 1024,
        "n_inner": 32,
        "inner_seed": 1,
        "s_grid": [0.5, 1.0, 2.0, 4.0, 8.0],
        "s_extend": 2.0,
        "s_max_rows": 10,
        "frac": 0.05,
        "tol": 2e-4,
        "max_iter": 80,
        "batches": 4,
    },
    # how a training run is executed, beside what it is (slrpipe train's execution options and
    # slrpipe.train.options.SolverOptions): the sgd minibatch stream's seed, the progress log period
    "execution": {"sgd_seed": 0, "log_every": 100},
}
#: the sections of DEFAULTS that no config has: not set on the config schema (slrpipe.config.load_schema)
UNCONFIGURED = ("execution",)
