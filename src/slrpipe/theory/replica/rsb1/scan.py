"""The zero-temperature 1RSB rule: scan the Parisi parameter s and read the ground state off Φ(s).

The textbook rule (Mézard–Parisi; Monasson, PRL 75, 2847 (1995), "real replicas"; Mézard–Montanari,
*Information, Physics, and Computation*, ch. 19; docs/theory.md §13): with the states weighted by
e^{−sD·e}, the potential Φ(s) = min_e [e − Σ(e)/s] obeys the Legendre relations
Σ(s) = s² dΦ/ds and e(s) = d(sΦ)/ds, and the ground-state energy is

    e_gs = max_s Φ(s) = Φ(s*),  Σ(s*) = 0,  de/ds < 0 at s* (Σ(e) concave there).

Φ rises for s < s* and falls beyond it (its analytic continuation, Σ < 0), so a maximum is
*bracketed* when a converged row on each side of the row of largest Φ lies at least ``FALL_Z``
standard errors of the difference below it (:func:`diff_se`: paired over the outer samples the rows
of one scan share, where the rows carry them). :func:`scan_potential` applies it to any ``solve(s, near)``:

1. solve the grid in ascending order and stop once the maximum is bracketed; where it is not,
   extend the grid beyond the side that has not fallen, by the factor ``ScanOptions.extend``
   (up: s·extend; down: s/extend), up to ``ScanOptions.max_rows`` solves in all;
2. refine s* inside the bracket: the root of the closed-form Σ, linear between the maximum and a
   converged neighbour where it changes sign with both values at least ``FALL_Z`` s.e. from zero
   (the estimator then resolves its sign), else the vertex of the parabola of Φ through the maximum
   and its two converged neighbours; solve there, and repeat on the rows with that solve (regula
   falsi / successive parabolic fits) until the checks of 3 hold, at most
   ``ScanOptions.refine_max`` solves;
3. check s*: Σ(s*) = 0 within ``FALL_Z`` s.e. by the closed form and by s²Φ′ (the derivative of
   the parabola of Φ through s* and its converged neighbours, its s.e. paired over the outer
   samples, :func:`diff_se`), and de/ds < 0 there (the energies of those neighbours);
   in 2 and 3 every s.e. of Σ is multiplied by S ≥ 1, the scale factor of the two estimators'
   disagreement measured over the rows the rule uses (slrpipe.theory.replica.rsb1.estimators);
4. where no maximum is bracketed, the largest Φ of a converged row is only a LOWER BOUND of e_gs.

Only the physical part of the branch counts: Φ(s) = min_e [e − Σ(e)/s] ≤ e − Σ(e)/s at e = e_gs,
where Σ = 0, so Φ(s) ≤ e_gs holds for a saddle that is the minimum over e, that is where Σ(e) is
concave: d²Σ/de² = 1/(de/ds) < 0. A converged row where de/ds > 0 is resolved (by ``FALL_Z`` s.e.:
:func:`de_ds`, finite differences of e over the converged rows on the branch, its s.e. paired over
the outer samples, :func:`de_ds_se`) is a maximum over e whose Φ bounds nothing; it is set
``unphysical`` (:func:`mark_unphysical`), and the rule uses none of these rows in 1–4.

Φ(s) = min over saddles, and it is continuous and concave in 1/s (a minimum of functions linear in
1/s), with slope −Σ in 1/s: every tangent lies above it. A continuation that lands on a saddle of
higher Φ breaks this, so each solve is checked against the row it started from
(:func:`discontinuous`: the higher row above the other's tangent by more than ``FALL_Z`` s.e.; Σ's
s.e. as solved, since S is measured on the rows this test leaves on the branch).
Where it is, the step is bisected in log s (``ScanOptions.bisect`` levels): the midpoint is
solved from the start row and the s from the midpoint; at one s the converged saddle of smaller Φ is
kept (the dominant one; the other is in ``ScanResult.dropped``). A jump of Φ that remains between
the closest rows (:func:`discontinuous`) means the scan left the dominant branch: the rows on its
higher side lie above the continuous Φ there, so they are set ``off_branch`` and the rule uses
none of them (their Φ bounds nothing). The grid is not extended beyond a side whose outermost
row did not converge, is off the branch or is unphysical (``ScanResult.stop`` says why the scan
ended).

The complexity curve Σ(e) is drawn from the converged rows with de/ds < 0 (finite differences
over converged neighbours) and Σ ≥ 0 only (:func:`on_curve`).

Plain numpy, no solver: the exactly solvable random energy model checks it (tests/test_rsb1_scan.py).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from slrpipe.theory.replica.rsb1.estimators import Legendre, diff_se, legendre, paired_se, shared, sigma_fd
from slrpipe.vocabulary import DEFAULTS

log = logging.getLogger(__name__)

#: Φ must lie this many standard errors below its maximum on a converged row on each side for the
#: maximum to count as bracketed; also the width, in s.e., of the checks Σ(s*) ≈ 0 and of the
#: continuity bound of Φ between rows
FALL_Z = 2.0


@dataclass(frozen=True)
class ScanOptions:
    """How far :func:`scan_potential` extends the grid: ``extend`` (> 1), the factor beyond the
        grid's end (or below its start) per added s; ``max_rows`` (≥ 1), the most s solved in all,
        grid included (the refinement at s* not counted); ``refine_max`` (≥ 1), the most solves that refine
    s* (each inside the bracket narrowed by the last, until the checks of s* hold). Raises ValueError
    (one line) out of range. ``bisect`` (≥ 0): the levels of bisection in log s at a jump of the
    continuation (module docstring; 0: none). ``max_rows`` counts every solve, bisections and the
    saddles dropped at one s included. ``continuity``: False turns the continuity test off (no
    bisection, no row set off the branch), for a table of Φ that is not one potential."""

    extend: float = DEFAULTS["rsb1"]["s_extend"]
    max_rows: int = DEFAULTS["rsb1"]["s_max_rows"]
    refine_max: int = 3
    bisect: int = 2
    continuity: bool = True

    def __post_init__(self):
        if not self.extend > 1:
            raise ValueError(f"extend: must be > 1, got {self.extend}")
        for name in ("max_rows", "refine_max"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise ValueError(f"{name}: must be an integer ≥ 1, got {v}")
        if int(self.bisect) != self.bisect or self.bisect < 0:
            raise ValueError(f"bisect: must be an integer ≥ 0, got {self.bisect}")


@dataclass(frozen=True)
class StarCheck:
    """The checks of s* (module docstring, 3): Σ(s*) by the closed form ± s.e. and by s²Φ′ ± s.e.
    (each s.e. multiplied by ``scale``, :attr:`Legendre.scale` of the scan's rows), de/ds there, and
    whether each holds (within ``FALL_Z`` s.e.; de/ds < 0). NaN: not estimable."""

    sigma: float = math.nan
    sigma_se: float = math.nan
    sigma_fd: float = math.nan
    sigma_fd_se: float = math.nan
    de_ds: float = math.nan
    scale: float = 1.0

    @property
    def sigma_ok(self) -> bool:
        """|Σ(s*)| ≤ FALL_Z s.e. by the closed form."""
        return bool(abs(self.sigma) <= FALL_Z * self.sigma_se)

    @property
    def sigma_fd_ok(self) -> bool:
        """|s*²Φ′(s*)| ≤ FALL_Z s.e."""
        return bool(abs(self.sigma_fd) <= FALL_Z * self.sigma_fd_se)

    @property
    def falling(self) -> bool:
        """de/ds < 0 at s*."""
        return bool(self.de_ds < 0)

    @property
    def ok(self) -> bool:
        """All three."""
        return self.sigma_ok and self.sigma_fd_ok and self.falling


class Bracket(NamedTuple):
    """The maximum of Φ over the converged rows of a scan (:func:`bracket`): ``top``, the index of
    the row of largest Φ; ``lo`` / ``hi``, the converged rows nearest it on each side at least
    ``FALL_Z`` s.e. below it; ``extend``, the side still to extend ("up", "down", "" when found).
    None: no such row."""

    top: int | None
    lo: int | None
    hi: int | None
    extend: str

    @property
    def found(self) -> bool:
        """Whether the maximum is bracketed (lo and hi both exist)."""
        return self.lo is not None and self.hi is not None


NO_BRACKET = Bracket(None, None, None, "up")


@dataclass
class ScanResult:
    """What :func:`scan_potential` returns.

    rows: one per s (ascending), what ``solve`` returned (the solves that refine s* with
    ``refined`` True), or ``{"s": s, "converged": False, "solved": False}`` for a grid s left
    unsolved after the bracket was found.
    bracket: the :class:`Bracket` of the final rows (its top: the converged row of largest Φ, None
    where no row converged; not found: e_gs ≥ Φ[top] is then only a lower bound).
    s_star, star: the last refined s* and the solve there (NaN / None where not bracketed).
    refine: how s* was placed: "sigma root", "phi fit" or "" (none).
    check: the :class:`StarCheck` at s*.
    dropped: the saddles solved at an s that holds one of smaller Φ (or a converged one), kept aside.
    stop: why the scan ended: "bracketed", "max_rows" (the solves allowed are spent), "not converged
    at s=…", "off the branch at s=…" or "unphysical (de/ds > 0) at s=…" (the side to extend ends on
    such a row).
    legendre: the two estimators of Σ compared on the final rows the rule uses
    (:class:`~slrpipe.theory.replica.rsb1.estimators.Legendre`; its scale multiplies every Σ s.e.
    the rule reads).
    """

    rows: list
    bracket: Bracket = NO_BRACKET
    s_star: float = math.nan
    star: dict | None = None
    refine: str = ""
    check: StarCheck = field(default_factory=StarCheck)
    dropped: list = field(default_factory=list)
    stop: str = ""
    legendre: Legendre | None = None

    @property
    def bracketed(self) -> bool:
        """Whether a maximum of Φ is bracketed (s* found)."""
        return self.bracket.found

    @property
    def top(self) -> int | None:
        """Index of the converged row of largest Φ (None: no converged row)."""
        return self.bracket.top

    @property
    def reported(self) -> dict | None:
        """The state reported: the solve at s* where it converged, else the row of largest Φ (a
        lower bound where not bracketed); None where no row converged."""
        if self.star is not None and self.star["converged"] and not self.star.get("off_branch"):
            return self.star
        return None if self.top is None else self.rows[self.top]

    @property
    def lower_bound(self) -> bool:
        """True where the reported Φ is only a lower bound of e_gs (no bracket, a converged row)."""
        return self.top is not None and not self.bracketed


def _converged(r: dict) -> bool:
    return bool(r.get("converged")) and math.isfinite(r.get("phi", math.nan))


def _on_branch(r: dict) -> bool:
    return _converged(r) and not r.get("off_branch")


def _usable(r: dict) -> bool:
    return _on_branch(r) and not r.get("unphysical")


def _conv(rows) -> list[int]:
    """Indices of the rows the rule uses: converged, finite Φ, on the branch, not unphysical."""
    return [i for i, r in enumerate(rows) if _usable(r)]


def _fallen(top: dict, row: dict) -> bool:
    """Φ of ``row`` at least FALL_Z s.e. (of the difference, :func:`diff_se`) below ``top``'s."""
    return top["phi"] - row["phi"] >= FALL_Z * diff_se(top, row)


def bracket(rows) -> Bracket:
    """The :class:`Bracket` of ``rows`` (ascending s; each with s, phi, phi_se, converged) by the
    rule of the module docstring."""
    conv = _conv(rows)
    if not conv:
        return NO_BRACKET
    top = max(conv, key=lambda i: rows[i]["phi"])
    lo = next((i for i in reversed(conv) if i < top and _fallen(rows[top], rows[i])), None)
    hi = next((i for i in conv if i > top and _fallen(rows[top], rows[i])), None)
    extend = "" if lo is not None and hi is not None else ("up" if hi is None else "down")
    return Bracket(top, lo, hi, extend)


def _parabola(s, phi):
    """Coefficients (a, b, c) of a s² + b s + c through three points."""
    return np.polyfit(np.asarray(s, float), np.asarray(phi, float), 2)


def _neighbours(rows, conv, i) -> tuple[int, int]:
    k = conv.index(i)
    return conv[k - 1], conv[k + 1]


def refine(rows, b: Bracket, scale: float = 1.0) -> tuple[float, str]:
    """s* inside the found bracket ``b`` (module docstring, 2): (s*, "sigma root" | "phi fit"); Σ's
    s.e. multiplied by ``scale`` (:attr:`Legendre.scale`)."""
    top = b.top
    conv = [i for i in _conv(rows) if b.lo <= i <= b.hi]
    a, b = _neighbours(rows, conv, top)
    for i, j in ((a, top), (top, b)):
        ri, rj = rows[i], rows[j]
        resolved = all(abs(r["sigma"]) >= FALL_Z * scale * r["sigma_se"] for r in (ri, rj))
        if resolved and ri["sigma"] > 0 > rj["sigma"]:
            return ri["s"] + (rj["s"] - ri["s"]) * ri["sigma"] / (ri["sigma"] - rj["sigma"]), "sigma root"
    p2, p1, _ = _parabola([rows[i]["s"] for i in (a, top, b)], [rows[i]["phi"] for i in (a, top, b)])
    s_v = -p1 / (2 * p2) if p2 < 0 else rows[top]["s"]
    return float(min(max(s_v, rows[a]["s"]), rows[b]["s"])), "phi fit"


def star_check(rows, star: dict, scale: float = 1.0) -> StarCheck:
    """The checks of s* (module docstring, 3) from the solve ``star`` and its converged neighbours
    in ``rows`` (one on each side; NaN entries where a side has none); both estimators' s.e.
    multiplied by ``scale`` (:attr:`Legendre.scale`)."""
    s = star["s"]
    conv = _conv(rows)
    left = [i for i in conv if rows[i]["s"] < s]
    right = [i for i in conv if rows[i]["s"] > s]
    chk = {"sigma": star["sigma"], "sigma_se": scale * star["sigma_se"], "scale": scale}
    if left and right and star["converged"]:
        a, b = rows[left[-1]], rows[right[0]]
        fd, fd_se = sigma_fd((a, star, b), s)
        chk.update(sigma_fd=fd, sigma_fd_se=scale * fd_se)
        chk["de_ds"] = (b["energy_direct"] - a["energy_direct"]) / (b["s"] - a["s"])
    return StarCheck(**chk)


def _differenced(rows) -> list[int]:
    """The rows :func:`de_ds` differences: the converged ones on the branch, where there are at
    least two and all carry ``energy_direct`` (else none)."""
    conv = [i for i, r in enumerate(rows) if _on_branch(r)]
    return conv if len(conv) >= 2 and all("energy_direct" in rows[i] for i in conv) else []


def de_ds(rows) -> np.ndarray:
    """de/ds per row (ascending s) by finite differences of e over the converged rows on the branch
    (central inside, one-sided at the ends; NaN for another row, a lone converged row or rows
    without ``energy_direct``)."""
    out = np.full(len(rows), np.nan)
    conv = _differenced(rows)
    if not conv:
        return out
    s = np.array([rows[i]["s"] for i in conv])
    e = np.array([rows[i]["energy_direct"] for i in conv])
    out[conv] = np.gradient(e, s)
    return out


def de_ds_se(rows) -> np.ndarray:
    """The s.e. of :func:`de_ds` per row: paired over the outer samples where the rows it differences
    carry ``energy_samples`` on common samples, else their ``energy_direct_se`` combined as if
    independent (NaN where de/ds is)."""
    out = np.full(len(rows), np.nan)
    conv = _differenced(rows)
    if not conv:
        return out
    # de/ds is linear in e: the finite-difference weights, row by row
    w = np.gradient(np.eye(len(conv)), np.array([rows[i]["s"] for i in conv]), axis=0)
    if shared(*(rows[i] for i in conv), key="energy_samples"):
        e = np.array([rows[i]["energy_samples"] for i in conv])
        out[conv] = [paired_se(v) for v in w @ e]
    else:
        se = np.array([rows[i].get("energy_direct_se", 0.0) for i in conv])
        out[conv] = np.sqrt((w * w) @ (se * se))
    return out


def mark_unphysical(rows) -> None:
    """Set ``unphysical`` on the converged rows on the branch where de/ds > 0 is resolved, by at least
    ``FALL_Z`` s.e. (:func:`de_ds`, :func:`de_ds_se`): there Σ(e) is convex (d²Σ/de² = 1/(de/ds)),
    the saddle a maximum of e − Σ(e)/s over e, not the minimum that makes Φ(s) ≤ e_gs, so the rule
    uses none of them (module docstring)."""
    d, se = de_ds(rows), de_ds_se(rows)
    for r, v, err in zip(rows, d, se):
        r.pop("unphysical", None)
        if v > FALL_Z * err:
            r["unphysical"] = True


def on_curve(rows) -> np.ndarray:
    """Which rows draw the complexity curve Σ(e): converged on the branch, de/ds < 0 and Σ ≥ 0 (bool
    per row)."""
    d = de_ds(rows)
    sig = np.array([r.get("sigma", np.nan) for r in rows], float)
    conv = np.array([_on_branch(r) for r in rows])
    with np.errstate(invalid="ignore"):
        return conv & (d < 0) & (sig >= 0)


def _nearest(rows, s) -> dict | None:
    """The solved row nearest s in log s to start from: a converged one on the branch where there is
    one (unphysical or not: the continuation follows the branch)."""
    solved = [r for r in rows if r.get("solved", True)]
    pool = [r for r in solved if _on_branch(r)] or solved
    return min(pool, key=lambda r: abs(math.log(r["s"] / s))) if pool else None


def _both(a: dict, b: dict) -> bool:
    return bool(a.get("converged")) and bool(b.get("converged"))


def discontinuous(a: dict, b: dict) -> bool:
    """Whether the converged rows ``a`` and ``b`` cannot lie on one continuous Φ: the row of larger
    Φ (h) lies above the tangent of the other (r) in 1/s, Φ_h − Φ_r > Σ_r·(1/s_r − 1/s_h) +
    FALL_Z·(s.e. of Σ_r)·|1/s_r − 1/s_h| + FALL_Z·:func:`diff_se` (Φ concave in 1/s with slope −Σ:
    every tangent lies above it; module docstring). False unless both converged."""
    if not _both(a, b):
        return False
    r, h = (a, b) if a["phi"] <= b["phi"] else (b, a)
    dt = 1 / r["s"] - 1 / h["s"]
    tangent = r["sigma"] * dt + FALL_Z * r["sigma_se"] * abs(dt)  # the slope Σ_r ± FALL_Z s.e. most lenient
    return bool(h["phi"] - r["phi"] > tangent + FALL_Z * diff_se(a, b))


def _dominant(first: dict, second: dict) -> tuple[dict, dict]:
    """(kept, dropped) of two solves at one s: the converged one of smaller Φ (the dominant saddle:
    Φ(s) is the minimum over saddles); with one converged, that one; with none, the second."""
    if _both(first, second):
        return (first, second) if first["phi"] < second["phi"] else (second, first)
    return (first, second) if first.get("converged") else (second, first)


def _continue(solve, a: dict, b: dict, depth: int, dropped: list, budget: list) -> list[dict]:
    """The rows from ``a`` (excluded) to b's s, where the solve ``b`` (from ``a``) jumped: the
    midpoint in log s solved from ``a``, then b's s from the midpoint, each step bisected again
    (``depth`` levels); the dominant of the two solves at b's s is kept (module docstring).
    ``budget``: one-element list, the solves still allowed (each solve spends one)."""
    if depth == 0 or budget[0] < 2 or not discontinuous(a, b):
        return [b]
    budget[0] -= 2
    log.info(
        "1RSB scan: Φ jumps from s=%g (%.6f) to s=%g (%.6f), off one branch: bisecting",
        a["s"],
        a["phi"],
        b["s"],
        b["phi"],
    )
    mid = solve(math.sqrt(a["s"] * b["s"]), a)
    left = _continue(solve, a, mid, depth - 1, dropped, budget)
    again = _continue(solve, left[-1], solve(b["s"], left[-1]), depth - 1, dropped, budget)
    kept, other = _dominant(b, again[-1])
    dropped.append(other)
    log.info("1RSB scan s=%g: kept the saddle of Φ=%.6f, dropped Φ=%.6f", b["s"], kept["phi"], other["phi"])
    return [*left, *again[:-1], kept]


def mark_branch(rows, first_s: float) -> None:
    """Set ``off_branch`` on the rows (ascending s) that lie off the dominant branch: split the
    converged rows where Φ is :func:`discontinuous` between neighbours; walking out from the segment
    holding ``first_s`` (the first row solved), at each break the side whose Φ lies higher there is
    off (above the continuous Φ): the far side and all beyond it (the continuation did not reach
    them), or the near segment, the walk going on along the far one."""
    usable = [i for i, r in enumerate(rows) if _converged(r)]
    for r in rows:
        r.pop("off_branch", None)
    if not usable:
        return
    segs = [[usable[0]]]
    for i, j in zip(usable, usable[1:]):
        if discontinuous(rows[i], rows[j]):
            segs.append([])
        segs[-1].append(j)
    start = next((k for k, g in enumerate(segs) if rows[g[-1]]["s"] >= first_s), len(segs) - 1)
    for step in (1, -1):
        k = start
        while 0 <= k + step < len(segs):
            near, far = segs[k], segs[k + step]
            a, b = (near[-1], far[0]) if step == 1 else (near[0], far[-1])
            if rows[b]["phi"] > rows[a]["phi"]:
                for g in segs[k + step :: step] if step == 1 else segs[:k]:
                    for i in g:
                        rows[i]["off_branch"] = True
                break
            for i in near:
                rows[i]["off_branch"] = True
            k += step


def _stop_side(rows, side: str) -> str:
    """Why the grid is not extended beyond ``side`` ("up" / "down"): its outermost solved row did not
    converge, is off the branch or is unphysical ("" where it may be extended)."""
    solved = [r for r in rows if r.get("solved", True)]
    end = solved[-1] if side == "up" else solved[0]
    if not end.get("converged"):
        return f"not converged at s={end['s']:g}"
    if end.get("off_branch"):
        return f"off the branch at s={end['s']:g}"
    if end.get("unphysical"):
        return f"unphysical (de/ds > 0) at s={end['s']:g}"
    return ""


def _blocked(rows, todo, side: str) -> str:
    """Why the scan may solve nothing more ("" where it may): with grid left, the grid lies above a
    row off the branch (the branch is lost there); with none, the side to extend ends on a row the
    rule cannot use (:func:`_stop_side`)."""
    if not todo:
        return _stop_side(rows, side)
    if rows and rows[-1].get("off_branch") and todo[0] > rows[-1]["s"]:
        return _stop_side(rows, "up")
    return ""


def _mark(rows, first_s: float, o: ScanOptions) -> None:
    """The rows the rule may not use: off the branch (with ``continuity``), then unphysical."""
    if o.continuity:
        mark_branch(rows, first_s)
    mark_unphysical(rows)


def scan_potential(solve: Callable[[float, dict | None], dict], grid, options: ScanOptions | None = None) -> ScanResult:
    """The rule of the module docstring on ``solve``.

    Args:
        solve: ``solve(s, near)`` → a row dict with at least s, phi, phi_se (outer Monte Carlo s.e.
            of Φ; optionally phi_samples (N₀,), its Monte Carlo part per outer sample), sigma,
            sigma_se (the closed-form complexity ± s.e.; optionally sigma_samples (N₀,), Σ per
            outer sample: :mod:`.estimators`), energy_direct ± energy_direct_se (e(s),
            outer s.e.) and converged; ``near`` is the row to start from (None for the first).
        grid: Parisi parameters > 0 (solved in ascending order).
        options: :class:`ScanOptions` (defaults if None).
    Returns:
        :class:`ScanResult`.
    Raises:
        ValueError: an empty grid or an s ≤ 0.
    """
    o = options or ScanOptions()
    todo = sorted(float(v) for v in grid)
    if not todo or todo[0] <= 0:
        raise ValueError(f"s_grid: need Parisi parameters > 0, got {list(grid)}")
    first_s = todo[0]
    rows: list[dict] = []
    dropped: list[dict] = []
    side, stop = "up", "max_rows"
    while (spent := len(rows) + len(dropped)) < o.max_rows:
        why = _blocked(rows, todo, side)
        if why:
            stop = why
            break
        if not todo:
            ends = [r["s"] for r in rows]
            todo = [max(ends) * o.extend if side == "up" else min(ends) / o.extend]
        s = todo.pop(0)
        near = _nearest(rows, s)
        new = solve(s, near)
        if near is not None and o.bisect and o.continuity:
            budget = [o.max_rows - spent - 1]
            new = _continue(solve, near, new, o.bisect, dropped, budget)
        else:
            new = [new]
        rows = sorted([*rows, *new], key=lambda r: r["s"])
        _mark(rows, first_s, o)
        b = bracket(rows)
        side = b.extend
        if b.found:
            stop = "bracketed"
            break
    if stop == "max_rows":  # the solves are spent: say so only where more would have been solved
        stop = _blocked(rows, todo, side) or stop
    rows += [{"s": s, "converged": False, "solved": False} for s in todo]
    rows.sort(key=lambda r: r["s"])
    res = ScanResult(rows=rows, bracket=bracket(rows), dropped=dropped, stop=stop)
    res.legendre = legendre(res.rows, _conv(res.rows))
    for _ in range(o.refine_max if res.bracketed else 0):
        s_star, how = refine(res.rows, res.bracket, res.legendre.scale)
        if any(r["s"] == s_star for r in res.rows):  # the bracket cannot be narrowed further
            break
        star = solve(s_star, _nearest(res.rows, s_star)) | {"refined": True}
        others = list(res.rows)
        res.rows = sorted([*others, star], key=lambda r: r["s"])
        _mark(res.rows, first_s, o)
        res.legendre = legendre(res.rows, _conv(res.rows))
        res.s_star, res.refine, res.star = s_star, how, star
        res.check = star_check(others, star, res.legendre.scale)
        if not star["converged"] or star.get("off_branch") or res.check.ok:
            break
        res.bracket = bracket(res.rows)
    res.bracket = bracket(res.rows)  # on the final rows (refined solves included)
    leg = res.legendre
    log.info(
        "1RSB scan: closed-form Σ against Φ's differences: χ² = %.3g on %d intervals, s.e. × %.3g",
        leg.chi2,
        leg.dof,
        leg.scale,
    )
    return res
