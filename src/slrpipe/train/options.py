"""Options of one ERM run, built once (by the CLI or a caller) and checked at construction.

``SolverOptions``: how J is minimised (``slrpipe.train.erm.minimize``); ``ERMOptions``: what is
trained and how it is measured (``slrpipe.train.experiment.run_erm``). Source: docs/model.md §5.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from slrpipe.vocabulary import DEFAULTS, DTYPES, INITS, OPTIMIZERS, check_choice, check_sigma

#: step sizes of the first-order optimisers when none is given (slrpipe.train.erm docstring).
DEFAULT_LR = DEFAULTS["erm"]["lr"]
#: tolerance on |∇J|₂ per dtype when none is given.
DEFAULT_TOL = {"float32": 1e-5, "float64": 1e-8}
#: key scale of the informed initialisation at ν = inf (max-SLR): softmax(10 χ*) puts weight
#: ≈ e^{−10·gap} on a runner-up token whose χ* trails the argmax by ``gap``.
C_INF = 10.0


@dataclass(frozen=True)
class SolverOptions:
    """How J (slrpipe.train.erm) is minimised.

    optimizer: one of ``OPTIMIZERS``; max_iter ≥ 1: L-BFGS iterations or optimiser steps; tol > 0 on
    |∇J|₂ (None: ``DEFAULT_TOL`` of the dtype, filled by ``resolved``); lr > 0 for gd/sgd/adam (None:
    ``DEFAULT_LR``); batch_size: sgd minibatch in [1, n] (None: min(n, 256)); sgd_seed: minibatch
    stream; memory_size: L-BFGS history; record_every ≥ 1: trajectory and stopping-check period in
    steps; log_every: progress log period; transpose: keep a transposed copy of X for the gradient
    (None: on CPU only, see ``slrpipe.train.erm.transposed_product``); lanes: train the L-BFGS starts of one
    training set together (``slrpipe.train.lanes``, its own line search) instead of one after the
    other with ``optax.lbfgs`` (lbfgs only).

    Raises:
        ValueError: one line naming the field out of range.
    """

    optimizer: str = DEFAULTS["erm"]["optimizers"][0]
    max_iter: int = DEFAULTS["erm"]["max_iter"]
    tol: float | None = None
    lr: float | None = None
    batch_size: int | None = None
    sgd_seed: int = DEFAULTS["execution"]["sgd_seed"]
    memory_size: int = 10
    record_every: int = DEFAULTS["erm"]["record_every"]
    log_every: int = DEFAULTS["execution"]["log_every"]
    transpose: bool | None = None
    lanes: bool = False

    def __post_init__(self):
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        if self.lanes and self.optimizer != "lbfgs":
            raise ValueError(f"lanes: only with optimizer lbfgs, got {self.optimizer}")
        for name in ("max_iter", "record_every", "log_every", "memory_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name}: must be ≥ 1, got {getattr(self, name)}")
        if self.tol is not None and not self.tol > 0:
            raise ValueError(f"tol: must be > 0, got {self.tol}")
        if self.lr is not None and not self.lr > 0:
            raise ValueError(f"lr: must be > 0, got {self.lr}")

    def resolved(self, n: int, dtype: str = "float32") -> SolverOptions:
        """The options with every default filled for n training sequences in ``dtype``.

        Raises:
            ValueError: batch_size outside [1, n] for sgd; unknown dtype.
        """
        check_choice("dtype", dtype, DTYPES)
        tol = DEFAULT_TOL[dtype] if self.tol is None else float(self.tol)
        lr = DEFAULT_LR.get(self.optimizer) if self.lr is None else float(self.lr)
        batch_size = None
        if self.optimizer == "sgd":
            batch_size = min(n, 256) if self.batch_size is None else int(self.batch_size)
            if not 1 <= batch_size <= n:
                raise ValueError(f"batch_size: must be in [1, n={n}], got {batch_size}")
        return replace(self, tol=tol, lr=lr, batch_size=batch_size)


@dataclass(frozen=True)
class ERMOptions:
    """One ERM experiment on a given training set (docs/model.md §5).

    sigma: score function; lam ≥ 0: ridge λ on 𝓛; init: one of ``INITS`` with init_seed (random /
    small) and init_scale (the s.d. of "small"); c_inf: informed key scale at ν = inf; test_seed:
    the fresh test set's seed (None: ``slrpipe.vocabulary.default_test_seed``); n_test ≥ 1 test
    sequences; dtype: training precision; bayes: also measure the Bayes oracle on the test set;
    theory: also evaluate the population risk at the learned Gram matrix (the workflow does this at
    aggregation instead); solver: ``SolverOptions``.

    Raises:
        ValueError: one line naming the field out of range; TypeError: solver not a SolverOptions.
    """

    sigma: str
    lam: float
    init: str = DEFAULTS["erm"]["inits"][0]
    init_seed: int = 0
    init_scale: float = 1e-2
    c_inf: float = C_INF
    test_seed: int | None = None
    n_test: int = DEFAULTS["erm"]["n_test"]
    dtype: str = DEFAULTS["erm"]["dtype"]
    bayes: bool = True
    theory: bool = True
    solver: SolverOptions = field(default_factory=SolverOptions)

    def __post_init__(self):
        check_sigma(self.sigma)
        check_choice("init", self.init, INITS)
        check_choice("dtype", self.dtype, DTYPES)
        if not self.lam >= 0:
            raise ValueError(f"lam: must be ≥ 0, got {self.lam}")
        if int(self.n_test) < 1:
            raise ValueError(f"n_test: must be ≥ 1, got {self.n_test}")
        if not isinstance(self.solver, SolverOptions):
            raise TypeError(f"solver: must be a SolverOptions, got {type(self.solver).__name__}")

    @classmethod
    def of(cls, sigma: str, lam: float, **kwargs) -> ERMOptions:
        """Options from flat keywords: ``SolverOptions`` fields go to ``solver``, the rest here."""
        names = SolverOptions.__dataclass_fields__
        solver = SolverOptions(**{k: kwargs.pop(k) for k in list(kwargs) if k in names})
        return cls(sigma, lam, solver=solver, **kwargs)
