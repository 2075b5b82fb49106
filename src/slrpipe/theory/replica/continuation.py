"""Continuation of the RS fixed points along α at one λ, in both directions (docs/theory.md §10).

Per λ, the α grid is solved from the largest α down (each point warm-started from its converged
neighbour; the large-α fixed point is close to the population optimum) and, with ``two_way``,
also from the smallest α up (cold start, then continuation). A cold start that fails is retried
from larger key norms, the α → 0 point and the population optimum (:func:`_cold_start`); a
continuation step that fails is retried in halved α steps from the last converged point
(:func:`_step`), so that a branch is followed as far as it goes between grid points. The RS
equations can have two branches over a window of α (a fold: docs/theory.md §10 — linear σ near
its interpolation peak); a one-way continuation then silently follows one of them past the point
where the other one takes over, or jumps onto the other at a large step. Where both passes
converge to different fixed points, the one with the lower RS objective (min 𝓛/D, the RS ground
state) is reported (:func:`pick_fixed_point`). The up pass stops once it has agreed with the down
pass at two consecutive α (a window higher up would then be missed). What the sweep records of
the passes is :mod:`slrpipe.theory.replica.sweep`'s.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from slrpipe.theory.population import optimal_risk
from slrpipe.theory.replica.fields import Draw, Fields
from slrpipe.theory.replica.linalg import UNROLL_MAX
from slrpipe.theory.replica.options import ReplicaTask, SolverOptions, SweepOptions
from slrpipe.theory.replica.solver import STATE, solve_replica

log = logging.getLogger(__name__)

#: two fixed points are the same when every order parameter agrees to this relative tolerance
SAME_TOL = 5e-3
#: key scales c of the cold starts tried in turn at the first point of a pass (:func:`_cold_start`);
#: c = 0 stands for the α → 0 start (the ridge prior alone: V_a = 1/λ, m_a, q_a ≈ 0)
KEY_SCALES = (1.0, 3.0, 8.0, 12.0, 0.0)
#: the ``key_scale`` recorded for the cold starts at the population optimum (:func:`_population_init`):
#: its own proportions, and rescaled to |k| = |v| (the product m_k m_v kept)
POPULATION, POPULATION_BALANCED = -1.0, -2.0
#: their spread around the population direction, q_a = (1 + POP_SPREAD) m_a², and V_a = POP_V · q_a
#: (balanced: V_a = POP_BALANCED_V): near the proportions of the linear fixed points at L = 16 and 64
#: (q/m² ≈ 1.1, V/q ≈ 0.1–0.2)
POP_SPREAD, POP_V, POP_BALANCED_V = 0.2, 0.2, 0.1
#: a failed continuation step is retried from the last converged α in steps halved up to this
#: many times (the smallest step is 2^-MAX_HALVINGS of the grid spacing)
MAX_HALVINGS = 4


def _same(a: dict, b: dict) -> bool:
    return all(abs(a[k] - b[k]) <= SAME_TOL * (1 + abs(a[k])) for k in STATE)


def _resume(r: dict) -> tuple[dict, object]:
    """(order parameters, prox warm starts) of a converged solve: where the next solve starts."""
    return {k: r[k] for k in STATE}, r.get("prox_warm")


def ladder(sigma: str, L: int = 3, top: bool = False) -> tuple[float, ...]:
    """The cold starts of σ at sequence length L in the order :func:`_cold_start` tries them
    (``KEY_SCALES``, then ``POPULATION`` and ``POPULATION_BALANCED`` for the population optimum);
    ``top``: the point is the largest α of the grid (the down pass's first). Linear tries the
    population optimum right after the default init, and first at the top of the grid above
    L = 6: at large L its fixed point keeps the population optimum's unbalanced proportions
    (spiked ν = 16, α = 20: m_k = 2.39, m_v = 0.046 at L = 16; 1.52, 0.028 at L = 64), outside
    the basin of every key-scale start (docs/validation.md §5; the default init failed there after
    31 evaluations at both L: ≈ 14 min of one CPU core at L = 64, at 27 s per evaluation); the
    population optimum is the α → ∞ limit of the down pass's first point. At L = 64 it converges from the population
    optimum's own proportions, at L = 16 only from the balanced ones. Other σ, and linear up to
    L = 6, try both after the key scales, so that no point they reached before moves."""
    pop = (POPULATION, POPULATION_BALANCED)
    if sigma != "linear":
        return (*KEY_SCALES, *pop)
    if top and L > UNROLL_MAX:
        return (*pop, *KEY_SCALES)
    return (1.0, *pop, *KEY_SCALES[1:])


def _population_init(task: ReplicaTask, balanced: bool = False) -> dict | None:
    """Order parameters at the population optimum of ``task`` (model.md §4), spread by
    ``POP_SPREAD`` and ``POP_V`` (``balanced``: both m_a = √(m_k m_v), V_a = ``POP_BALANCED_V``);
    None where the optimum is not finite (m_k → ∞) or ``balanced`` and m_k m_v ≤ 0."""
    opt = optimal_risk(task.sigma, task.setting)
    m = {a: opt[f"m_{a}"] for a in "kv"}
    if not all(math.isfinite(v) for v in m.values()):
        return None
    if balanced:
        if m["k"] * m["v"] <= 0:
            return None
        m = dict.fromkeys("kv", math.sqrt(m["k"] * m["v"]))
    init = {}
    for a in "kv":
        q = (1.0 + POP_SPREAD) * m[a] ** 2
        init.update({f"m_{a}": m[a], f"q_{a}": q, f"V_{a}": POP_BALANCED_V if balanced else POP_V * q})
    return init


def _start(c: float, lam: float) -> dict | None:
    """Initial order parameters of cold start c (``KEY_SCALES``): None (the solver's default) for
    c = 1, m_k = c/2 and q_k = c² for c > 1, and for c = 0 the α → 0 limit, where the conjugates
    vanish and the ridge prior alone gives m_a = q_a = 0, V_a = 1/λ (m_a, q_a slightly positive
    to keep the fields non-degenerate)."""
    if c == 1.0:
        return None
    if c == 0.0:
        return dict(m_k=0.05, q_k=0.01, V_k=1.0 / lam, m_v=0.05, q_v=0.01, V_v=1.0 / lam)
    return dict(m_k=0.5 * c, q_k=c * c)


@dataclass(frozen=True)
class SweepSetup:
    """What every solve of one sweep shares: the task, the common random numbers, how they were
    drawn (the extra seeds of :func:`mc_sd` are drawn the same way) and the options."""

    task: ReplicaTask
    fields: Fields
    draw: Draw
    opts: SolverOptions
    sw: SweepOptions

    @property
    def sigma(self) -> str:
        return self.task.sigma

    def draw_fields(self, seed: int) -> Fields:
        """The common random numbers of seed ``seed`` (drawn as the sweep's own)."""
        return self.draw._replace(seed=seed).fields(self.task)

    def solve(self, lam, alpha, options, init, warm=None, fields=None) -> dict:
        """One :func:`solve_replica` at (λ, α) on ``fields`` (default: the sweep's)."""
        fields = self.fields if fields is None else fields
        return solve_replica(self.task, lam, alpha, fields=fields, init=init, options=options, warm=warm)


def _cold_start(setup: SweepSetup, lam, alpha, top: bool = False) -> dict:
    """Solve from the starts of :func:`ladder` in turn (:func:`_start`, :func:`_population_init`;
    ``top``: α is the grid's largest), with the cold-start options (``SweepOptions.cold``; the
    population start without its ``far_patience``: it is the start closest to the large-α fixed
    point, and approaches it slowly). Larger key scales: at small λ the softmax fixed point sits at a large
    key norm (q_k ≈ 70 at λ = 0.01, α = 20; docs/theory.md §10 (iv)) outside the default init's
    basin. The α → 0 start: at small α and λ the fixed point has V_a ≈ 1/λ (= 100 at λ = 0.01),
    outside the basin of V_a = 1 (linear, spiked ν = 1, α = 0.5). The first converged start is
    returned (else the first one's result), with ``key_scale`` = its c.
    The ladder is empirical: spiked ν = 1 converges from c = 8, ν = 2 from c = 10–12 (not 8), and
    m_k = 0.7 c fails for both."""
    opts = setup.sw.cold(setup.opts)
    first = None
    for c in ladder(setup.sigma, setup.task.L, top):
        if c in (POPULATION, POPULATION_BALANCED):
            init = _population_init(setup.task, balanced=c == POPULATION_BALANCED)
            if init is None:
                continue
            r = dict(setup.solve(lam, alpha, opts.replace(far_patience=None), init), key_scale=c)
        else:
            r = dict(setup.solve(lam, alpha, opts, _start(c, lam)), key_scale=c)
        if r["converged"]:
            if c != 1.0:
                log.info(
                    "replica %s λ=%g α=%g: converged from key scale %g (not from the default init)",
                    setup.sigma,
                    lam,
                    alpha,
                    c,
                )
            return r
        first = first or r
    return first


def _step(setup: SweepSetup, lam, a_from, a_to, start) -> tuple[dict, float]:
    """Continuation from the converged solve at α = a_from to α = a_to; ``start`` = (its order
    parameters, its prox warm starts) (:func:`_resume`; every solve starts from the warm starts of
    the last converged one). A failed step is
    retried from the last converged α at half the remaining distance, halving down to
    2^-``MAX_HALVINGS`` of |a_to − a_from|. After each success the nearest intermediate α that
    failed beyond it is retried from there (the halving restarts at it), and once none is left
    a_to is tried again and the halving restarts at a_to: this follows a branch up to a fold
    between grid points without trying α beyond a failure that the branch has not passed (at a
    fold every such try fails; ~25 evaluations each at linear L = 16). The intermediate points only
    provide warm starts: they are solved to ``sw.step_tol`` without polish (``SweepOptions``), and
    every try of a_to, from a_from or from them, is such a cheap probe first, solved in full only
    from a probe that converged. Returns (result at
    a_to, with ``iterations`` and ``wall_time`` summed over all the solves; the α nearest a_to
    reached on the branch)."""
    sw, opts = setup.sw, setup.opts
    mid_opts = sw.intermediate(opts)
    cost = [0, 0.0]  # channel evaluations and seconds of every solve of this step

    def solve(a, o, ini, w):
        r = setup.solve(lam, a, o, ini, w)
        cost[0], cost[1] = cost[0] + r["iterations"], cost[1] + r["wall_time"]
        return r

    def attempt(ini, w):
        # a_to from (ini, w): a cheap probe first, finished in full from its state only if it
        # reached step_tol: past a fold every attempt fails, and a failed full solve (patience,
        # polish) costs ~5× a failed probe
        p = solve(a_to, mid_opts, ini, w)
        return solve(a_to, opts, *_resume(p)) if p["converged"] else p

    init, warm = start
    r = attempt(init, warm)
    a, h, h_min = a_from, a_to - a_from, abs(a_to - a_from) * 2.0**-MAX_HALVINGS * (1 - 1e-9)
    failed = []  # the intermediate α that failed
    while not r["converged"]:
        h *= 0.5
        if abs(h) < h_min:
            break
        mid = solve(a + h, mid_opts, init, warm)
        if not mid["converged"]:
            failed.append(a + h)
            continue
        a, (init, warm) = a + h, _resume(mid)
        log.info("replica %s λ=%g: branch followed to α=%g on the way to α=%g", setup.sigma, lam, a, a_to)
        beyond = [f for f in failed if (f - a) * (a_to - a) > 0]
        if beyond:
            # a nearer α failed from farther back: it is retried (from here) before anything beyond
            h = 2 * (min(beyond, key=lambda f: abs(f - a)) - a)
            continue
        retry = attempt(init, warm)
        if retry["converged"]:
            r = retry
        h = a_to - a
    iters, wall = cost
    return dict(r, iterations=iters, wall_time=wall), (a_to if r["converged"] else a)


def _log_point(setup: SweepSetup, lam, alpha, r) -> None:
    t = setup.task
    sigma, model, nu, L = t.sigma, t.model, t.nu, t.L
    log.info(
        "replica %s %s ν=%g L=%d λ=%g α=%g: e_test=%.5f objective=%.5f converged=%s it=%d (%.1fs)",
        sigma,
        model,
        nu,
        L,
        lam,
        alpha,
        r["test_error"],
        r["objective"],
        r["converged"],
        r["iterations"],
        r["wall_time"],
    )


def _continue(setup: SweepSetup, lam, alphas, order, *, stop_when=None, past_fold="cold", cold=None):
    """Solve alphas[order] by continuation (the first point by :func:`_cold_start`, the others by
    :func:`_step`); returns {index: result}, each with ``alpha_reached``: the α of the result if it
    converged, else the α closest to it that the branch was followed to (NaN if none).
    Once a step fails (the branch ended at a fold before the point), ``past_fold`` = 'stop' ends
    the pass (the other pass of a two-way sweep covers the rest) and 'cold' solves the next point
    by a cold start. ``stop_when(j, r)`` → True ends the pass after point j. ``cold``: {index: cold
    start result} shared by the passes of one λ (a cold start is a deterministic function of the
    point: the up pass reuses one the down pass made at its first point, and vice versa)."""
    cold = {} if cold is None else cold
    out, start, a_init = {}, None, math.nan  # start: (order parameters, warm starts) to continue from
    for j in order:
        if start is None:
            if j not in cold:
                cold[j] = _cold_start(setup, lam, alphas[j], top=j == len(alphas) - 1)
            r = dict(cold[j])
            reached = alphas[j] if r["converged"] else math.nan
        else:
            r, reached = _step(setup, lam, a_init, alphas[j], start)
        r["alpha_reached"] = reached
        out[j] = r
        _log_point(setup, lam, alphas[j], r)
        if r["converged"]:
            start, a_init = _resume(r), alphas[j]
        elif start is not None:  # the branch ended between the last converged point and this one
            if past_fold == "stop":
                log.info(
                    "replica %s λ=%g: branch ends before α=%g (reached α=%g); pass stopped",
                    setup.sigma,
                    lam,
                    alphas[j],
                    reached,
                )
                break
            start = None
        if stop_when is not None and stop_when(j, r):
            break
    return out


def run_passes(setup: SweepSetup, lam, alphas) -> dict:
    """{'down': results, 'up': results} of the two continuation passes at one λ (module
    docstring); 'up' is empty for a one-way sweep or a single α."""
    n = alphas.size
    two_way = setup.sw.two_way and n > 1
    # two-way: a pass stops where its branch ends, the other pass covers the rest
    past_fold = "stop" if two_way else "cold"
    cold = {}
    down = _continue(setup, lam, alphas, reversed(range(n)), past_fold=past_fold, cold=cold)
    up = {}
    if two_way:
        agree = []

        def stop(j, r):
            # the up pass ends once it has agreed with the down pass at two consecutive α
            d = down.get(j)
            agree.append(d is not None and r["converged"] and d["converged"] and _same(r, d))
            return len(agree) >= 2 and agree[-1] and agree[-2]

        up = _continue(setup, lam, alphas, range(n), stop_when=stop, past_fold=past_fold, cold=cold)
    return {"down": down, "up": up}


def pick_fixed_point(cands):
    """(reported, other or None, number of distinct converged fixed points) among the candidates
    [(pass, result)] of one point: the lowest RS objective among the converged ones (else the down
    pass's result)."""
    conv = [(b, r) for b, r in cands if r["converged"]]
    distinct = conv[:1] + [c for c in conv[1:] if not _same(c[1], conv[0][1])]
    pick = min(distinct, key=lambda c: c[1]["objective"]) if distinct else cands[0]
    other = [c for c in (distinct if len(distinct) > 1 else ()) if c is not pick]
    return pick, (other[0] if other else None), len(distinct)


def mc_sd(setup: SweepSetup, lam, alpha, r0) -> tuple[float, float]:
    """(mean, s.d.) of test_error over seeds seed, …, seed + mc_seeds − 1 (the others
    warm-started from r0, the seed-``seed`` solution, through a cheap probe first, as a
    continuation step); NaN if any of them does not converge."""
    sw, opts, seed = setup.sw, setup.opts, setup.draw.seed
    init = {k: r0[k] for k in STATE}
    errs = [r0["test_error"]]
    for s in range(seed + 1, seed + int(sw.mc_seeds)):
        f = setup.draw_fields(s)
        start, warm = init, None
        p = setup.solve(lam, alpha, sw.intermediate(opts), init, fields=f)
        if p["converged"]:
            start, warm = _resume(p)
        r = setup.solve(lam, alpha, opts, start, warm, fields=f)
        if not r["converged"]:
            return math.nan, math.nan
        errs.append(r["test_error"])
    return float(np.mean(errs)), float(np.std(errs, ddof=1))
