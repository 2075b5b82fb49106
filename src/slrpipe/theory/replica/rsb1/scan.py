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
4. where no maximum is bracketed, the largest Φ of a converged row is only a LOWER BOUND of e_gs.

The complexity curve Σ(e) is drawn from the converged rows with de/ds < 0 (finite differences
over converged neighbours) and Σ ≥ 0 only (:func:`on_curve`).

Plain numpy, no solver: the exactly solvable random energy model checks it (tests/test_rsb1_scan.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from slrpipe.vocabulary import DEFAULTS

#: Φ must lie this many standard errors below its maximum on a converged row on each side for the
#: maximum to count as bracketed; also the width, in s.e., of the checks Σ(s*) ≈ 0
FALL_Z = 2.0


@dataclass(frozen=True)
class ScanOptions:
    """How far :func:`scan_potential` extends the grid: ``extend`` (> 1), the factor beyond the
        grid's end (or below its start) per added s; ``max_rows`` (≥ 1), the most s solved in all,
        grid included (the refinement at s* not counted); ``refine_max`` (≥ 1), the most solves that refine
    s* (each inside the bracket narrowed by the last, until the checks of s* hold). Raises ValueError
    (one line) out of range."""

    extend: float = DEFAULTS["rsb1"]["s_extend"]
    max_rows: int = DEFAULTS["rsb1"]["s_max_rows"]
    refine_max: int = 3

    def __post_init__(self):
        if not self.extend > 1:
            raise ValueError(f"extend: must be > 1, got {self.extend}")
        for name in ("max_rows", "refine_max"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise ValueError(f"{name}: must be an integer ≥ 1, got {v}")


@dataclass(frozen=True)
class StarCheck:
    """The checks of s* (module docstring, 3): Σ(s*) by the closed form ± s.e. and by s²Φ′ ± s.e.,
    de/ds there, and whether each holds (within ``FALL_Z`` s.e.; de/ds < 0). NaN: not estimable."""

    sigma: float = math.nan
    sigma_se: float = math.nan
    sigma_fd: float = math.nan
    sigma_fd_se: float = math.nan
    de_ds: float = math.nan

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
    """

    rows: list
    bracket: Bracket = NO_BRACKET
    s_star: float = math.nan
    star: dict | None = None
    refine: str = ""
    check: StarCheck = field(default_factory=StarCheck)

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
        if self.star is not None and self.star["converged"]:
            return self.star
        return None if self.top is None else self.rows[self.top]

    @property
    def lower_bound(self) -> bool:
        """True where the reported Φ is only a lower bound of e_gs (no bracket, a converged row)."""
        return self.top is not None and not self.bracketed


def _conv(rows) -> list[int]:
    return [i for i, r in enumerate(rows) if r.get("converged") and math.isfinite(r.get("phi", math.nan))]


def paired_se(x) -> float:
    """Standard error of the mean of per-outer-sample values x (N,), N even, pairing the antithetic
    halves (sample i with i + N/2), as the channel's estimators do."""
    x = np.asarray(x, float)
    h = x.shape[0] // 2
    p = 0.5 * (x[:h] + x[h:])
    return float(p.std(ddof=1) / math.sqrt(h))


def _shared(*rows) -> bool:
    """Whether every row carries ``phi_samples`` on the same outer samples (one scan's solves)."""
    samples = [r.get("phi_samples") for r in rows]
    return all(v is not None for v in samples) and len({np.shape(v) for v in samples}) == 1


def diff_se(a: dict, b: dict) -> float:
    """Standard error of Φ_a − Φ_b: paired over the outer samples where both rows carry
    ``phi_samples`` (the Monte Carlo part of Φ per outer sample, common random numbers: the
    difference is far less noisy than either value), else the two s.e. combined as if independent."""
    if _shared(a, b):
        return paired_se(np.asarray(a["phi_samples"]) - np.asarray(b["phi_samples"]))
    return math.hypot(a.get("phi_se", 0.0), b.get("phi_se", 0.0))


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


def refine(rows, b: Bracket) -> tuple[float, str]:
    """s* inside the found bracket ``b`` (module docstring, 2): (s*, "sigma root" | "phi fit")."""
    top = b.top
    conv = [i for i in _conv(rows) if b.lo <= i <= b.hi]
    a, b = _neighbours(rows, conv, top)
    for i, j in ((a, top), (top, b)):
        ri, rj = rows[i], rows[j]
        resolved = all(abs(r["sigma"]) >= FALL_Z * r["sigma_se"] for r in (ri, rj))
        if resolved and ri["sigma"] > 0 > rj["sigma"]:
            return ri["s"] + (rj["s"] - ri["s"]) * ri["sigma"] / (ri["sigma"] - rj["sigma"]), "sigma root"
    p2, p1, _ = _parabola([rows[i]["s"] for i in (a, top, b)], [rows[i]["phi"] for i in (a, top, b)])
    s_v = -p1 / (2 * p2) if p2 < 0 else rows[top]["s"]
    return float(min(max(s_v, rows[a]["s"]), rows[b]["s"])), "phi fit"


def star_check(rows, star: dict) -> StarCheck:
    """The checks of s* (module docstring, 3) from the solve ``star`` and its converged neighbours
    in ``rows`` (one on each side; NaN entries where a side has none)."""
    s = star["s"]
    conv = _conv(rows)
    left = [i for i in conv if rows[i]["s"] < s]
    right = [i for i in conv if rows[i]["s"] > s]
    chk = {"sigma": star["sigma"], "sigma_se": star["sigma_se"]}
    if left and right and star["converged"]:
        a, b = rows[left[-1]], rows[right[0]]
        pts = (a, star, b)
        ss = np.array([r["s"] for r in pts])
        # derivative at s of the Lagrange parabola through the three points: weights w·Φ
        w = np.array(
            [
                (2 * s - ss[1] - ss[2]) / ((ss[0] - ss[1]) * (ss[0] - ss[2])),
                (2 * s - ss[0] - ss[2]) / ((ss[1] - ss[0]) * (ss[1] - ss[2])),
                (2 * s - ss[0] - ss[1]) / ((ss[2] - ss[0]) * (ss[2] - ss[1])),
            ]
        )
        phi = np.array([r["phi"] for r in pts])
        chk["sigma_fd"] = float(s * s * w @ phi)
        if _shared(*pts):  # paired over the outer samples
            chk["sigma_fd_se"] = s * s * paired_se(sum(wj * np.asarray(r["phi_samples"]) for wj, r in zip(w, pts)))
        else:
            se = np.array([r.get("phi_se", 0.0) for r in pts])
            chk["sigma_fd_se"] = float(s * s * math.sqrt(float((w * se) @ (w * se))))
        chk["de_ds"] = (b["energy_direct"] - a["energy_direct"]) / (b["s"] - a["s"])
    return StarCheck(**chk)


def de_ds(rows) -> np.ndarray:
    """de/ds per row (ascending s) by finite differences of e over the converged rows (central
    inside, one-sided at the ends; NaN for a row not converged or a lone converged row)."""
    out = np.full(len(rows), np.nan)
    conv = _conv(rows)
    if len(conv) < 2:
        return out
    s = np.array([rows[i]["s"] for i in conv])
    e = np.array([rows[i]["energy_direct"] for i in conv])
    out[conv] = np.gradient(e, s)
    return out


def on_curve(rows) -> np.ndarray:
    """Which rows draw the complexity curve Σ(e): converged, de/ds < 0 and Σ ≥ 0 (bool per row)."""
    d = de_ds(rows)
    sig = np.array([r.get("sigma", np.nan) for r in rows], float)
    conv = np.array([bool(r.get("converged")) for r in rows])
    with np.errstate(invalid="ignore"):
        return conv & (d < 0) & (sig >= 0)


def _nearest(rows, s) -> dict | None:
    solved = [r for r in rows if r.get("solved", True)]
    return min(solved, key=lambda r: abs(math.log(r["s"] / s))) if solved else None


def scan_potential(solve: Callable[[float, dict | None], dict], grid, options: ScanOptions | None = None) -> ScanResult:
    """The rule of the module docstring on ``solve``.

    Args:
        solve: ``solve(s, near)`` → a row dict with at least s, phi, phi_se (outer Monte Carlo s.e.
            of Φ; optionally phi_samples (N₀,), its Monte Carlo part per outer sample), sigma, sigma_se (the closed-form complexity ± s.e.), energy_direct (e(s)) and
            converged; ``near`` is the solved row nearest s in log s (None for the first), to start from.
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
    rows: list[dict] = []
    side = "up"
    while len([r for r in rows if r.get("solved", True)]) < o.max_rows:
        if todo:
            s = todo.pop(0)
        else:
            ends = [r["s"] for r in rows]
            s = max(ends) * o.extend if side == "up" else min(ends) / o.extend
        rows.append(solve(s, _nearest(rows, s)))
        rows.sort(key=lambda r: r["s"])
        b = bracket(rows)
        side = b.extend
        if b.found:
            break
    rows += [{"s": s, "converged": False, "solved": False} for s in todo]
    rows.sort(key=lambda r: r["s"])
    res = ScanResult(rows=rows, bracket=bracket(rows))
    for _ in range(o.refine_max if res.bracketed else 0):
        s_star, how = refine(res.rows, res.bracket)
        if any(r["s"] == s_star for r in res.rows):  # the bracket cannot be narrowed further
            break
        star = solve(s_star, _nearest(res.rows, s_star)) | {"refined": True}
        others = list(res.rows)
        res.rows = sorted([*others, star], key=lambda r: r["s"])
        res.s_star, res.refine, res.star, res.check = s_star, how, star, star_check(others, star)
        if not star["converged"] or res.check.ok:
            break
        res.bracket = bracket(res.rows)
    res.bracket = bracket(res.rows)  # on the final rows (refined solves included)
    return res
