"""Figure ``complexity``: the 1RSB complexity curve Σ(e) at each solved point, with the energies of
ERM's minima placed on it (docs/theory.md §13).

One panel per (replica experiment, σ, λ, α) where 1RSB was solved (``ansatz: [rs, rsb1]``; the
store's ``rsb1_scan_*``): the parametric curve (e(s), Σ(s)) of the s scan — e the energy of a
typical state, 𝓛/D — filled on the complexity curve (converged, de/ds < 0 and Σ ≥ 0;
slrpipe.theory.replica.rsb1.scan.on_curve), triangles where converged off it, open where not
converged (the axes fit the curve, the first point past it and the references: the rest of the
branch, up to Σ ~ 30, and a solve far off are clipped); the ground state Φ(s*) at a bracketed
s* = argmax Φ as a star, or, where no maximum is bracketed, the largest Φ (a lower bound of e_gs)
as a '>'; RS on the same samples as a grey square at Σ = 0. ERM's minima of the linked
experiment as vertical lines: the informed start, the random starts (mean over restarts) and the
ground state over all starts (where there are random starts), each the objective α·J (= 𝓛/D)
averaged over seeds — extrapolated to D → ∞ (a ± s.e. band) where the experiment has a D ladder,
else at its largest D. Beside each, the state's overlaps m_k, m_v, q₁_k, q₁_v (1RSB ± its
batch-means s.e., and RS at the same (σ, λ, α) of the sweep) divided by ERM's ground-state overlaps
(D → ∞ where fitted), all read from the comparison's rows (results/validation.json,
slrpipe.analysis.validation) and the store; 1 is agreement, the band ERM's own relative s.e.
Panels in rows of ``NCOLS`` (two per point).
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from slrpipe.analysis.ladder import point_ladder
from slrpipe.analysis.rows import Row

from .style import COLORS, LABELS, legend_below, ordered, panels, save, setting_title

#: panels per row (config/rsb1.yaml has 27 points)
NCOLS = 4
#: the 1RSB overlaps drawn beside each curve and the ERM (and RS sweep) names they are compared with
#: (slrpipe.analysis.validation.OVERLAP_PAIRS: q₁ is the self-overlap of one minimum)
OVERLAPS = (
    ("m_k", "m_k", "$m_k$"),
    ("m_v", "m_v", "$m_v$"),
    ("q1_k", "q_k", "$q_{1,k}$"),
    ("q1_v", "q_v", "$q_{1,v}$"),
)
#: colours of ERM's minima
SHADES = {"informed": "#2ca02c", "random": "#ff7f0e", "ground state": "#d62728"}


def erm_energies(node: xr.Dataset, sigma: str, lam: float, alpha: float) -> dict:
    """{name: (value, s.e., label)} of the objective 𝓛/D = α·J of ERM's informed start, random
    starts (mean over restarts per seed) and ground state over all starts (L-BFGS runs), seed
    means: the D → ∞ limit (slrpipe.analysis.ladder.point_ladder) where ``node`` has a D ladder, else
    the value at its largest D. Names whose runs the node lacks are left out."""
    pt = node.sel(sigma=sigma, lam=lam).sel(alpha=alpha, method="nearest")
    if "optimizer" in pt.dims and "lbfgs" in pt["optimizer"].values:
        pt = pt.sel(optimizer="lbfgs")
    series = {}
    if "init" in pt.dims:
        for name in ("informed", "random"):
            if name in pt["init"].values:
                v = pt["train_loss"].sel(init=name)
                series[name] = (v.mean("restart") if "restart" in v.dims else v) * alpha
    if "train_loss_ground" in pt and "random" in series:  # with the informed start alone it is that start
        series["ground state"] = pt["train_loss_ground"] * alpha
    out = {}
    for name, v in series.items():
        v = v.drop_vars(["init", "restart", "optimizer"], errors="ignore")
        if "D" in v.dims:
            fit = point_ladder(v).fit
            if fit is not None:
                out[name] = (fit.limit, fit.limit_se, f"D → ∞ ({fit.law})")
                continue
            v = v.isel(D=-1)
        k = int(v.count())
        if k:
            se = float(v.std(ddof=1)) / np.sqrt(k) if k > 1 else np.nan
            out[name] = (float(v.mean()), se, f"D = {int(pt['D'].max()) if 'D' in pt else '?'}")
    return out


def _points(rep: xr.Dataset):
    """(σ, λ, α) of every point of a replica node where 1RSB was solved."""
    if "rsb1_rs_objective" not in rep:
        return []
    done = rep["rsb1_rs_objective"].notnull()
    return [
        (str(s), float(lam), float(a))
        for s in ordered(rep["sigma"].values)
        for lam in rep["lam"].values
        for a in rep["alpha"].values
        if bool(done.sel(sigma=s, lam=lam, alpha=a))
    ]


def draw_point(ax, rep: xr.Dataset, sigma: str, lam: float, alpha: float, erm: dict) -> None:
    """One panel (module docstring) of the point (σ, λ, α) of replica node ``rep``; ``erm``: the
    output of :func:`erm_energies` (may be empty)."""
    pt = rep.sel(sigma=sigma, lam=lam, alpha=alpha)
    e, sig = pt["rsb1_scan_energy"].values, pt["rsb1_scan_complexity"].values
    sig_se, s = pt["rsb1_scan_complexity_se"].values, pt["s"].values
    conv = pt["rsb1_scan_converged"].values == 1
    phys = pt["rsb1_scan_on_curve"].values == 1
    c = COLORS.get(sigma)
    curve = (conv & phys, "o", "1RSB (e(s), Σ(s)) ± s.e., de/ds < 0, Σ ≥ 0")
    for mask, fmt, lab in (curve, (conv & ~phys, "^", "off the curve (de/ds ≥ 0 or Σ < 0)")):
        if mask.any():
            ax.errorbar(
                e[mask], sig[mask], yerr=sig_se[mask], fmt=fmt, color=c, ms=3, elinewidth=0.6, capsize=2, label=lab
            )
    ok = np.isfinite(e) & np.isfinite(sig)
    ax.plot(e[ok & conv], sig[ok & conv], "-", color=c, lw=0.8, alpha=0.5)
    if (ok & ~conv).any():
        ax.scatter(
            e[ok & ~conv], sig[ok & ~conv], facecolors="white", edgecolors=c, s=14, zorder=3, label="not converged"
        )
    for x, y, t in zip(e[ok], sig[ok], s[ok]):
        ax.annotate(f"s={t:g}", (x, y), textcoords="offset points", xytext=(3, 3), fontsize=6, annotation_clip=True)
    xs = [float(pt["rsb1_rs_objective"])]
    if float(pt["rsb1_bracketed"]) == 1:
        xs.append(float(pt["rsb1_objective"]))
        ax.plot(xs[-1:], [0.0], "*", color="black", ms=9, label="ground state Φ(s*), s* = argmax Φ")
    elif float(pt["rsb1_lower_bound"]) == 1:
        xs.append(float(pt["rsb1_objective"]))
        ax.plot(xs[-1:], [0.0], ">", color="black", ms=6, label="max Φ on the scan (e_gs ≥ it: no s* bracketed)")
    ax.plot(xs[:1], [0.0], "s", color="grey", ms=5, label="RS, same samples")
    for name, (val, se, where) in erm.items():
        ax.axvline(val, color=SHADES[name], lw=1, ls=":", label=f"ERM {name} ({where})")
        if np.isfinite(se):
            ax.axvspan(val - se, val + se, color=SHADES[name], alpha=0.12, lw=0)
            xs += [val - se, val + se]
        xs.append(val)
    ax.axhline(0.0, color="black", lw=0.6)
    # the scale fits the curve, the first point past it and the references; points farther along
    # the branch off the curve (Σ up to ~30 at s = 16) would squash the curve near Σ = 0
    shown = ok & conv & phys
    past = np.flatnonzero(ok & conv & ~phys & (s > (s[shown].max() if shown.any() else -np.inf)))
    if past.size:
        shown[past[0]] = True
    band = (sig_se if np.isfinite(sig_se).all() else np.nan_to_num(sig_se))[shown]
    _limits(ax, np.r_[e[shown], xs], np.r_[sig[shown] - band, sig[shown] + band, 0.0])
    ax.set_xlabel(r"energy $e = \mathcal{L}/D$")
    ax.set_ylabel("complexity Σ")
    ax.set_title(f"{setting_title(rep)}\n{LABELS.get(sigma, sigma)}, λ = {lam:g}, α = {alpha:g}", fontsize=8)


def find_row(rows, experiment: str, sigma: str, lam: float, alpha: float) -> Row | None:
    """The 1RSB row of ``rows`` at (experiment, σ, λ, α) (α: ERM's realised n/D, within 2 % of the
    replica grid's), or None."""
    for r in rows:
        if (
            r.has_rsb1
            and r.experiment == experiment
            and r.sigma == sigma
            and np.isclose(r.lam, lam)
            and abs(np.log(r.alpha / alpha)) < 0.02
        ):
            return r
    return None


def draw_overlaps(ax, rep: xr.Dataset, sigma: str, lam: float, alpha: float, row: Row | None) -> None:
    """The overlap panel of one point (module docstring): 1RSB's (stars) and RS's (diamonds) m_k,
    m_v, q₁_k, q₁_v over ERM's ground state's. An overlap whose ERM value is not measured, or within
    2 s.e. of 0 (no ratio), is left out and named in the panel, as are the 1RSB overlaps of a state
    that did not converge (NaN)."""
    x = np.arange(len(OVERLAPS))
    skipped, unsolved = [], []
    pt = rep.sel(sigma=sigma, lam=lam, alpha=alpha)
    for i, (mine, erm, label) in enumerate(OVERLAPS):
        ref = np.nan if row is None else getattr(row, f"erm_{erm}")
        ref_se = np.nan if row is None else getattr(row, f"erm_{erm}_se")
        if not np.isfinite(ref) or (np.isfinite(ref_se) and abs(ref) < 2 * ref_se):
            skipped.append(label)
            continue
        if np.isfinite(ref_se):
            ax.fill_between(
                [i - 0.3, i + 0.3],
                1 - ref_se / abs(ref),
                1 + ref_se / abs(ref),
                color=SHADES["ground state"],
                alpha=0.15,
                lw=0,
            )
        v, v_se = getattr(row, f"rsb1_{mine}"), getattr(row, f"rsb1_{mine}_batch_se")
        if np.isfinite(v):  # NaN: the state reported did not converge
            ax.errorbar(
                [i + 0.08],
                [v / ref],
                yerr=[abs(v_se / ref)],
                fmt="*",
                color="black",
                ms=7,
                capsize=2,
                label="1RSB state ± s.e. / ERM ground state",
            )
        else:
            unsolved.append(label)
        if erm in pt:
            ax.plot([i - 0.08], [float(pt[erm]) / ref], "D", color="grey", ms=4, label="RS (sweep) / ERM ground state")
    ax.axhline(
        1.0,
        color=SHADES["ground state"],
        lw=1,
        ls=":",
        label="ERM ground state (D → ∞ where fitted, else largest D)",
    )
    ax.set_xticks(x, [lab for *_, lab in OVERLAPS])
    ax.set_xlim(-0.5, len(OVERLAPS) - 0.5)
    ax.set_ylabel("overlap / ERM's")
    notes = ["no ERM ground state"] if row is None else []
    notes += [f"left out (ERM ≈ 0): {', '.join(skipped)}"] if skipped else []
    notes += [f"1RSB state not converged: {', '.join(unsolved)}"] if unsolved else []
    note = "; ".join(notes)
    if note:
        ax.text(0.5, 0.02, note, transform=ax.transAxes, ha="center", va="bottom", fontsize=6)
    ax.set_title(f"overlaps, {LABELS.get(sigma, sigma)}, λ = {lam:g}, α = {alpha:g}", fontsize=8)


def _limits(ax, x, y, pad=0.08) -> None:
    """Axis limits around the finite values of ``x`` and ``y`` (converged points and references):
    a solve that did not converge may lie far off and is clipped rather than set the scale."""
    for values, setter in ((x, ax.set_xlim), (y, ax.set_ylim)):
        v = np.asarray(values, float)
        v = v[np.isfinite(v)]
        if v.size:
            lo, hi = v.min(), v.max()
            d = (hi - lo) * pad or abs(hi) * pad or 1e-3
            setter(lo - d, hi + d)


def plot(tree, experiments, out_stem, *, rows: list[Row]):
    """The figure (module docstring): two panels per 1RSB point of the replica ``experiments``, the
    complexity curve and the overlaps (a single empty panel saying so where none has one). ``rows``:
    the comparison's rows (slrpipe.analysis.rows.read_rows of results/validation.json).
    ``out_stem``: output path without extension. Returns the written [pdf, png] paths. Raises
    KeyError for an experiment not in the store."""
    jobs = []
    for name in experiments:
        rep = tree[f"replica/{name}"].to_dataset()
        erm_name = json.loads(rep.attrs.get("erm", "null"))
        node = tree[f"erm/{erm_name}"].to_dataset() if erm_name and erm_name in tree.get("erm", {}) else None
        jobs += [(name, rep, p, node) for p in _points(rep)]
    fig, axes = panels(max(2 * len(jobs), 1), width=3.6, height=3.0, ncols=NCOLS)
    for (ax, ax_o), (name, rep, (sigma, lam, alpha), node) in zip(zip(axes[::2], axes[1::2]), jobs):
        erm = erm_energies(node, sigma, lam, alpha) if node is not None and sigma in node["sigma"].values else {}
        draw_point(ax, rep, sigma, lam, alpha, erm)
        draw_overlaps(ax_o, rep, sigma, lam, alpha, find_row(rows, name, sigma, lam, alpha))
    if not jobs:
        axes[0].text(0.5, 0.5, "no 1RSB point solved\n(replica ansatz: [rs, rsb1])", ha="center", va="center")
        axes[0].set_axis_off()
    legend_below(fig, axes)
    return save(fig, out_stem)
