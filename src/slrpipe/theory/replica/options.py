"""The task of the replica solver and its options, grouped by what they control (built once, e.g.
by the CLI).

``ReplicaTask``: σ and the data setting (model, ν, fixed L, Δ) that every replica solve takes
first (docs/theory.md §2–3).
``ChannelOptions``: how one channel pass is estimated (docs/theory.md §4–5, §9).
``IterateOptions``: the fixed-point iteration and when it gives up (docs/theory.md §9).
``PolishOptions``: the root-finding finish of a near miss (docs/theory.md §9, "Polish").
``SolverOptions``: the three together; ``SolverOptions.build(**flat)`` takes the flat names
(``tol=1e-7, polish=False, …``) and puts each in its group.
``SweepOptions``: how :func:`slrpipe.theory.replica.replica_sweep` continues along α.
All raise ValueError (one line naming the field) for a value outside its range.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from slrpipe.setting import Setting

METHODS = ("anderson", "damped")
VHAT_ESTIMATORS = ("stein", "jacobian")
MHAT_ESTIMATORS = ("rb", "general")


def _pos_int(name, v, low=1):
    if int(v) != v or v < low:
        raise ValueError(f"{name}: must be an integer ≥ {low}, got {v}")


@dataclass(frozen=True)
class ReplicaTask:
    """The task of a replica computation, everything but (λ, α) (docs/theory.md §2–3): a score
    function σ and a fixed-length data setting. The first argument of
    :func:`~slrpipe.theory.replica.solve_replica`, :func:`~slrpipe.theory.replica.replica_sweep`,
    :func:`~slrpipe.theory.replica.rsb1.solve_rsb1` and
    :func:`~slrpipe.theory.replica.rsb1.rsb1_ground_state`.

    sigma: str, a σ of the replica theory (the solvers check it: ``vocabulary.REPLICA_SIGMAS``).
    setting: :class:`slrpipe.setting.Setting` with one fixed length L. Its fields read through:
    ``model``, ``nu`` (float), ``L`` (int, the length), ``delta`` (float).

    Raises:
        TypeError: ``setting`` not a :class:`~slrpipe.setting.Setting`.
        ValueError: the setting's length law has more than one length.
    """

    sigma: str
    setting: Setting

    def __post_init__(self):
        if not isinstance(self.setting, Setting):
            raise TypeError(f"setting: must be a Setting, got {type(self.setting).__name__}")
        self.setting.length  # noqa: B018  (raises ValueError for a variable length)

    model = property(lambda self: self.setting.model, doc="'spiked' | 'max'.")
    nu = property(lambda self: self.setting.nu, doc="ν (float).")
    L = property(lambda self: self.setting.length, doc="The fixed sequence length (int).")
    delta = property(lambda self: self.setting.delta, doc="Δ (float).")


def replica_task(task) -> ReplicaTask:
    """``task`` if it is a :class:`ReplicaTask`.

    Raises:
        TypeError: anything else (one line naming the argument).
    """
    if not isinstance(task, ReplicaTask):
        raise TypeError(f"task: must be a ReplicaTask(sigma, Setting), got {type(task).__name__}")
    return task


@dataclass(frozen=True)
class ChannelOptions:
    """vhat: 'stein' (exact for a jumping prox) or 'jacobian' (pointwise, diagnostic).
    mhat: 'rb' (Rao–Blackwellised) or 'general'.  softmin: β of the soft-min over local minima
    (None = hard global minimum; docs/theory.md §4).  n_steps: Newton steps per prox start."""

    vhat: str = "stein"
    mhat: str = "rb"
    softmin: float | None = 100.0
    n_steps: int = 25

    def __post_init__(self):
        if self.vhat not in VHAT_ESTIMATORS:
            raise ValueError(f"vhat: must be one of {VHAT_ESTIMATORS}, got {self.vhat!r}")
        if self.mhat not in MHAT_ESTIMATORS:
            raise ValueError(f"mhat: must be one of {MHAT_ESTIMATORS}, got {self.mhat!r}")
        if self.softmin is not None and not self.softmin > 0:
            raise ValueError(f"softmin: must be None or > 0, got {self.softmin}")
        _pos_int("n_steps", self.n_steps)

    def kwargs(self) -> dict:
        """Keyword arguments of :func:`slrpipe.theory.replica.channel.channel`."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class IterateOptions:
    """method: 'anderson' or 'damped'.  damping: d ∈ (0, 1] of the damped steps.  memory: Anderson
    memory (≥ 1).  tol: on max_i |F(x)_i − x_i| / (1 + |x_i|).  max_iter: cap on channel
    evaluations.  patience: evaluations without a new best residual that end the solve.
    far_patience: while the best residual is ≥ ``far_below`` (10⁻²: far from any fixed point),
    evaluations allowed without halving it before the solve gives up (None: no such cap;
    docs/theory.md §9); far_below = 0 applies the cap at every residual.
    full_every: passes between full multi-start prox searches.  cheap_finish: near the root the
    passes stay cheap (centre + warm starts) and convergence is that of the cheap map (for
    intermediate continuation points, which only provide warm starts; docs/theory.md §9)."""

    method: str = "anderson"
    damping: float = 0.5
    memory: int = 5
    tol: float = 1e-5
    max_iter: int = 300
    patience: int = 40
    far_patience: int | None = None
    far_below: float = 1e-2
    full_every: int = 5
    cheap_finish: bool = False

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"method: must be one of {METHODS}, got {self.method!r}")
        if not 0 < self.damping <= 1:
            raise ValueError(f"damping: must be in (0, 1], got {self.damping}")
        if not self.tol > 0:
            raise ValueError(f"tol: must be > 0, got {self.tol}")
        _pos_int("max_iter", self.max_iter)
        _pos_int("memory", self.memory)
        _pos_int("patience", self.patience)
        _pos_int("full_every", self.full_every)
        if self.far_patience is not None:
            _pos_int("far_patience", self.far_patience)
        if not self.far_below >= 0:
            raise ValueError(f"far_below: must be ≥ 0, got {self.far_below}")


@dataclass(frozen=True)
class PolishOptions:
    """enabled: polish an unconverged solve whose best residual is below ``below`` with at most
    ``maxfev`` more channel evaluations (docs/theory.md §9)."""

    enabled: bool = True
    below: float = 1e-2
    maxfev: int = 30

    def __post_init__(self):
        if not self.below > 0:
            raise ValueError(f"polish_below: must be > 0, got {self.below}")
        _pos_int("polish_maxfev", self.maxfev)


# flat name → (group, field) for SolverOptions.build
_FLAT = {f.name: ("channel", f.name) for f in dataclasses.fields(ChannelOptions)}
_FLAT.update({f.name: ("iterate", f.name) for f in dataclasses.fields(IterateOptions)})
_FLAT.update(polish=("polish", "enabled"), polish_below=("polish", "below"), polish_maxfev=("polish", "maxfev"))


@dataclass(frozen=True)
class SolverOptions:
    """Everything :func:`slrpipe.theory.replica.solve_replica` needs besides the task
    (:class:`ReplicaTask`), λ, α, the common random numbers and the start."""

    iterate: IterateOptions = field(default_factory=IterateOptions)
    channel: ChannelOptions = field(default_factory=ChannelOptions)
    polish: PolishOptions = field(default_factory=PolishOptions)

    @classmethod
    def build(cls, base: SolverOptions | None = None, **flat) -> SolverOptions:
        """``base`` (default options if None) with the flat fields replaced (names: the fields of
        the groups, plus ``polish``, ``polish_below``, ``polish_maxfev``).

        Raises:
            ValueError: an unknown name or a value out of range.
        """
        base = base or cls()
        groups: dict = {}
        for k, v in flat.items():
            if k not in _FLAT:
                raise ValueError(f"{k}: not a replica solver option (known: {', '.join(sorted(_FLAT))})")
            g, name = _FLAT[k]
            groups.setdefault(g, {})[name] = v
        return dataclasses.replace(base, **{g: dataclasses.replace(getattr(base, g), **kv) for g, kv in groups.items()})

    def replace(self, **flat) -> SolverOptions:
        """These options with the flat fields replaced (:meth:`build`)."""
        return SolverOptions.build(self, **flat)


@dataclass(frozen=True)
class SweepOptions:
    """two_way: also continue from the smallest α up (docs/theory.md §9).  mc_seeds: draws of the
    common random numbers in all (≥ 1; the extra ones give ``test_error_mc_sd``).
    step_tol: tolerance of the intermediate α points of a halved continuation step (warm starts
    only, never reported; None: the solver's tol and polish); the intermediate points are then
    not polished.  step_patience: ``patience`` of the intermediate points (None: the solver's).
    cold_far_patience: ``far_patience`` of the cold starts (:func:`..continuation._cold_start`: a start
    outside every basin is given up early, the next one of the ladder tried; None: the solver's).
    step_cheap: the intermediate points and probes finish on cheap prox passes (``cheap_finish``).
    step_full_every: ``full_every`` of the intermediate points and probes (None: the solver's).
    Every try of a grid point, the first included, is a probe with the intermediate options,
    solved in full only from a probe that reached step_tol (past a fold every try fails), and every
    solve starts from the prox warm starts of the last converged point (docs/theory.md §9).
    stability: compute the RS stability outputs at every reported converged point (docs/theory.md
    §11; about one channel evaluation each); False leaves them NaN."""

    two_way: bool = True
    mc_seeds: int = 1
    step_tol: float | None = 1e-4
    step_patience: int | None = 15
    cold_far_patience: int | None = 30
    step_cheap: bool = True
    step_full_every: int | None = 10
    stability: bool = True

    def __post_init__(self):
        _pos_int("mc_seeds", self.mc_seeds)
        if self.step_tol is not None and not self.step_tol > 0:
            raise ValueError(f"step_tol: must be None or > 0, got {self.step_tol}")
        if self.step_patience is not None:
            _pos_int("step_patience", self.step_patience)
        if self.cold_far_patience is not None:
            _pos_int("cold_far_patience", self.cold_far_patience)
        if self.step_full_every is not None:
            _pos_int("step_full_every", self.step_full_every)

    def intermediate(self, opts: SolverOptions) -> SolverOptions:
        """The solver options of an intermediate continuation point (class docstring)."""
        flat = {}
        if self.step_tol is not None:
            flat.update(tol=max(self.step_tol, opts.iterate.tol), polish=False)
        if self.step_patience is not None:
            flat.update(patience=self.step_patience)
        if self.step_cheap:
            flat.update(cheap_finish=True)
        if self.step_full_every is not None:
            flat.update(full_every=self.step_full_every)
        return opts.replace(**flat) if flat else opts

    def cold(self, opts: SolverOptions) -> SolverOptions:
        """The solver options of a cold start (class docstring)."""
        return opts if self.cold_far_patience is None else opts.replace(far_patience=self.cold_far_patience)
