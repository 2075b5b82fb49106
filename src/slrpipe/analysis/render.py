"""The text table of the ERM-vs-theory comparison (``results/validation.txt``), from its rows
(:func:`slrpipe.analysis.comparison.compare`, or ``results/validation.json`` read back).

:func:`format_table`: a summary, then per replica experiment the comparison, objectives and ground
state, notes on the points not enforced, the D-ladder section (:func:`format_ladder`) and the 1RSB
section (:func:`format_rsb1`). :func:`finite`, :func:`pm` and :data:`LAWS` are shared with the
markdown tables (slrpipe.analysis.tables). Imports numpy only (the workflow reads
``slrpipe.analysis.tables.TABLES`` when it parses the rules).
"""

from __future__ import annotations

import collections
import textwrap

import numpy as np

from slrpipe.analysis.rows import Row
from slrpipe.analysis.verdict import MISSING, UNMEASURED, VERDICTS

#: the widest line of the text table (``results/validation.txt``); every column of every row is in
#: ``results/validation.json``
WIDTH = 120


def finite(x) -> bool:
    return x is not None and isinstance(x, (int, float, np.floating, np.integer)) and bool(np.isfinite(x))


def pm(x, se, digits: int = 4, sep: str = " ± ") -> str:
    """'x ± se'; 'x' alone where the error is missing, '—' where the value is."""
    if not finite(x):
        return "—"
    return f"{x:.{digits}f}{sep}{se:.{digits}f}" if finite(se) else f"{x:.{digits}f}"


def _n(x, digits: int = 4) -> str:
    """A number with ``digits`` decimals, '—' where missing."""
    return f"{x:.{digits}f}" if finite(x) else "—"


def _wrap(text: str, width: int = WIDTH, indent: str = "    ") -> list[str]:
    """``text`` as lines of at most ``width`` characters, continuation lines indented."""
    return textwrap.wrap(
        text, width=width, subsequent_indent=indent, break_on_hyphens=False, break_long_words=True
    ) or [""]


def _branch_ends(r: Row) -> str:
    ends = [
        f"{side} at α={getattr(r, f'reached_{p}'):.3g}"
        for p, side in (("down", "from above"), ("up", "from below"))
        if finite(getattr(r, f"reached_{p}")) and not np.isclose(getattr(r, f"reached_{p}"), r.alpha)
    ]
    return "branch ends " + ", ".join(ends) if ends else ""


def _not_enforced(r: Row) -> str:
    """Why the enforced check skips a point ('' where it is enforced): the first reason that
    applies, in the order of the module docstring's list."""
    if r.enforced:
        return ""
    if not finite(r.theory) or not r.theory_converged:
        return "not converged"
    if r.n_branches > 1:
        return "2 RS branches"
    if r.ill_conditioned:
        return "ill-conditioned theory"
    if r.n_seeds < 2:
        return "one seed"
    return "outside enforced range"


def _stopped_short(r: Row) -> str:
    """'ERM runs ended by the gradient test: informed k/n, ground state k/n seeds' where some seeds'
    informed or ground-state runs did not ('' where all did, or the store does not say)."""
    n = r.n_seeds
    fracs = {w: getattr(r, k) for w, k in (("informed", "erm_converged"), ("ground state", "ground_converged"))}
    if not any(finite(f) and f < 1 for f in fracs.values()):
        return ""
    parts = ", ".join(f"{w} {round(f * n)}/{n}" for w, f in fracs.items() if finite(f))
    return f"ERM runs ended by the gradient test: {parts} seeds"


def _check(r: Row) -> str:
    """The enforced check: ok / FAIL; in parentheses where not enforced; '—' without a theory."""
    if not finite(r.theory):
        return "—"
    word = "ok" if r.agrees else ("FAIL" if r.enforced else "≠")
    return word if r.enforced else f"({word})"


def _rs(r: Row, short: bool = False) -> str:
    """The RS stability of a row with the replicon and the prox ties among the theory's N samples
    (docs/theory.md §11: one tie shows a switching surface, none bounds its rate below 3/N at
    95 %): 'stable (replicon 0.46, 3 prox ties in 4096)', or ``short`` (the table's column) 'stable
    ρ=0.46, ties 3/4096'; where not computed '', or '—' when short."""
    if not finite(r.rs_stable):
        return "—" if short else ""
    word, n = ("stable" if r.rs_stable else "unstable"), r.theory_n_samples
    ties = int(r.prox_ties) if finite(r.prox_ties) else None
    if short:
        return f"{word} ρ={r.replicon:.2f}" + (f", ties {ties}/{n}" if ties is not None else "")
    return f"{word} (replicon {r.replicon:.2f}" + (f", {ties} prox ties in {n}" if ties is not None else "") + ")"


def _starts(r: Row) -> str:
    """'k/n': how many of the n seeds' ground states are not the informed start ('' without starts)."""
    words = str(r.ground_starts).split()
    return words[0] if words else ""


def summary(rows: list[Row]) -> list[str]:
    """The head of the text table: how many points, the enforced check, the count of each verdict."""
    counts = collections.Counter(r.verdict for r in rows)
    order = [v for v in (*VERDICTS, UNMEASURED, MISSING) if counts[v]]
    enforced = [r for r in rows if r.enforced]
    agree = sum(r.agrees for r in enforced)
    return [
        f"ERM vs replica theory: {len(rows)} points; enforced check: {agree} of {len(enforced)} agree",
        *_wrap("verdicts: " + (", ".join(f"{v} {counts[v]}" for v in order) or "none")),
    ]


_LEGEND = (
    "ERM: population risk at the learned weights (test: on the finite test set), mean ± s.e. over seeds (n); "
    "theory ± its Monte Carlo error; z and rel: ERM − theory in combined errors and relative to the theory; "
    "check: the enforced test (|z| ≤ max_abs_z or |rel| ≤ rel_tol), in parentheses where not enforced (the notes "
    "say why); verdict: slrpipe.analysis.verdict (docs/results.md §2). obj: α·J of ERM and min 𝓛/D of the theory; "
    "ground: the lowest-objective start per seed (starts: seeds whose ground state is not the informed start); "
    "RS: replica-symmetric stability (replicon ρ, prox ties in the theory's samples). "
    "Every column of every row is in validation.json."
)


def format_table(rows: list[Row], width: int = WIDTH) -> str:
    """The text table of ``compare`` rows (``results/validation.txt``), at most ``width`` columns per
    line: a summary, then per replica experiment one line per (σ, λ, α) with the comparison and the
    verdict, one with the objectives, ground state and RS stability, notes on the points not
    enforced, and the D-ladder section (:func:`format_ladder`) where there is a ladder."""
    lines = [*summary(rows), *_wrap(_LEGEND, width, indent=""), ""]
    sw = max([8] + [len(r.sigma) + 1 for r in rows])
    for name in dict.fromkeys(r.experiment for r in rows):
        group = [r for r in rows if r.experiment == name]
        lines.append(f"== {name} ==")
        head = (
            f"{'sigma':<{sw}}{'lam':>6}{'alpha':>7}{'D':>6}{'n':>3}{'ERM ± s.e.':>16}{'theory ± MC':>16}"
            f"{'z':>7}{'rel':>7}  {'check':<6} verdict"
        )
        lines += [head, "-" * min(len(head) + 20, width)]
        for r in group:
            lines.append(
                f"{r.sigma:<{sw}}{r.lam:>6g}{r.alpha:>7.4g}{r.D:>6}{r.n_seeds:>3}"
                f"{pm(r.erm_mean, r.erm_se):>16}{pm(r.theory, r.theory_mc_se):>16}"
                f"{_n(r.z, 2):>7}{_n(r.rel_diff, 3):>7}  {_check(r):<6} {r.verdict}"
            )
        head = (
            f"{'sigma':<{sw}}{'lam':>6}{'alpha':>7}{'test':>8}{'obj ERM':>9}{'obj th':>8}{'ground ± s.e.':>17}"
            f"{'obj gr':>8}{'starts':>7}  RS"
        )
        lines += ["", head, "-" * min(len(head) + 30, width)]
        for r in group:
            lines.append(
                f"{r.sigma:<{sw}}{r.lam:>6g}{r.alpha:>7.4g}{_n(r.erm_test):>8}"
                f"{_n(r.erm_objective):>9}{_n(r.theory_objective):>8}"
                f"{pm(r.ground_mean, r.ground_se):>17}{_n(r.ground_objective):>8}"
                f"{_starts(r):>7}  {_rs(r, short=True)}"
            )
        notes = []
        for r in group:
            why = [
                w
                for w in (_not_enforced(r) and f"not enforced ({_not_enforced(r)})", _branch_ends(r), _stopped_short(r))
                if w
            ]
            if r.n_branches > 1 and finite(r.theory_alt):
                why.append(f"second RS fixed point {r.theory_alt:.4f}")
            if why:
                notes += _wrap(f"{r.sigma} λ={r.lam:g} α={r.alpha:.4g}: " + "; ".join(why), width)
        if notes:
            lines += ["", "notes:", *notes]
        lines.append("")
    ladder = [r for r in rows if r.ladder_D]
    if ladder:
        lines += format_ladder(ladder, width)
    rsb1 = [r for r in rows if finite(r.rsb1_rs_objective)]
    if rsb1:
        lines += ["", *format_rsb1(rsb1, width)]
    return "\n".join(lines).rstrip("\n")


def format_rsb1(rows: list[Row], width: int = WIDTH) -> list[str]:
    """The 1RSB section of the table (``RSB1_COLUMNS``): per point RS and 1RSB on the same samples
    beside the ERM reference, objective (min 𝓛/D) and test error, the fraction of each gap closed,
    the s of the 1RSB state reported (:func:`_s_reported`) and 2 tr δQ; '—' where no row of the s
    scan converged (not solved). The overlaps beside ERM's are in the JSON (``RSB1_COLUMNS``)."""
    out = _wrap(
        "1RSB (docs/theory.md §13): RS and the 1RSB state reported on the same samples — at s* = argmax Φ (marked *: "
        "a maximum of Φ(s) bracketed by rows 2 s.e. below it; *? where a check of s* fails: Σ(s*) ≈ 0 by the closed "
        "form and by s²Φ′, de/ds < 0), else at the largest Φ of the scan (marked lb: a lower bound of the "
        "ground-state energy, no verdict) — against ERM "
        "(ref: gr = ground state over starts, inf = informed start; ∞: extrapolated D→∞ over a ladder); 1RSB ± the batch-means s.e. of the state (K "
        "batches of the outer samples; the objective's outer-sample s.e. where no batches were solved); "
        "closed = (1RSB − RS)/(ERM − RS) ± s.e., 'no gap' where "
        "ERM − RS is under 2 s.e. (ERM's, and RS's outer s.e. for the objective); "
        "2trδQ: the predicted distance (1/D)|W_a − W_b|² between minima (RS: 0); d₂ERM: the measured one between the "
        "two lowest minima found per seed (D→∞ where a ladder exists)",
        width,
        indent="",
    )
    head = (
        f"{'sigma':<7}{'lam':>5}{'α':>5}{'s':>6}{'obj RS':>7}{'1RSB±s.e.':>14}{'ERM':>7}{'closed':>11}"
        f"{'test RS':>8}{'1RSB±s.e.':>14}{'ERM':>7}{'closed':>11}{'2trδQ':>6}{'d₂ERM':>6} ref"
    )
    for name in dict.fromkeys(r.experiment for r in rows):
        out += ["", f"== {name} ==", head, "-" * min(len(head) + 12, width)]
        out += [_rsb1_line(r) for r in rows if r.experiment == name]
    return out


def _s_reported(r: Row) -> str:
    """The s of the 1RSB state reported: ``1.7*`` at a bracketed s* whose checks hold, ``1.7*?``
    where one fails, ``4lb`` at the largest Φ of a scan without a bracketed maximum (a lower bound)."""
    s = r.rsb1_s_reported
    if not finite(s):
        return "—"
    if r.rsb1_bracketed == 1:
        return f"{s:.2g}*" + ("" if r.rsb1_checked == 1 else "?")
    return f"{s:.2g}lb"


#: the ERM reference of a 1RSB row as the text table writes it (the JSON keeps the long form)
_SHORT_REF = {"ground D→∞": "gr∞", "informed D→∞": "inf∞", "ground": "gr", "informed": "inf"}


def _closed(r: Row, which: str) -> str:
    """The fraction of the gap closed ± its s.e., 'no gap' where the RS–ERM gap is under 2 s.e.,
    '—' where missing."""
    from slrpipe.analysis.rsb1 import MIN_GAP_Z  # here: the workflow reads TABLES without xarray

    z = getattr(r, f"gap_z_{which}")
    if not finite(getattr(r, f"gap_closed_{which}")) and finite(z) and abs(z) < MIN_GAP_Z:
        return "no gap"
    return pm(getattr(r, f"gap_closed_{which}"), getattr(r, f"gap_closed_{which}_se"), 2, "±")


def _with_se(r: Row, which: str, per_sample: str | None = None) -> str:
    """The 1RSB value ± its batch-means s.e. (``rsb1_<which>_batch_se``), else ± ``per_sample``."""
    se = getattr(r, f"rsb1_{which}_batch_se")
    if not finite(se) and per_sample:
        se = getattr(r, per_sample)
    return pm(getattr(r, f"rsb1_{which}"), se, 4, "±")


def _rsb1_line(r: Row) -> str:
    return (
        f"{r.sigma:<7}{r.lam:>5g}{r.alpha:>5.3g}{_s_reported(r):>6}"
        f"{_n(r.rsb1_rs_objective):>7}{_with_se(r, 'objective', 'rsb1_objective_se'):>14}"
        f"{_n(r.rsb1_erm_objective):>7}{_closed(r, 'objective'):>11}"
        f"{_n(r.rsb1_rs_test_error):>8}{_with_se(r, 'test_error'):>14}{_n(r.rsb1_erm_test):>7}"
        f"{_closed(r, 'test'):>11}{_n(r.rsb1_distance, 2):>6}{_n(r.erm_distance, 2):>6}"
        f" {_SHORT_REF.get(r.rsb1_erm_ref, r.rsb1_erm_ref)}"
    )


def _fit(r: Row, who: str) -> str:
    if not finite(getattr(r, f"{who}_limit")):
        return "no fit"
    chi = (
        f", χ²/dof {getattr(r, f'{who}_chi2_dof'):.2f}, p {getattr(r, f'{who}_fit_p'):.2f}"
        if finite(getattr(r, f"{who}_chi2_dof"))
        else ""
    )
    return f"{pm(getattr(r, f'{who}_limit'), getattr(r, f'{who}_limit_se'))} [{getattr(r, f'{who}_law')}{chi}{'' if getattr(r, f'{who}_fit_ok') else ', poor fit'}]"


def format_ladder(rows: list[Row], width: int = WIDTH) -> list[str]:
    """The D-ladder section of the table: per row the theory, the informed start's and the ground
    state's seed mean ± s.e. at each D, their D → ∞ limits (law, χ²/dof, p) with z against the
    theory, RS stability and the verdict (module docstring); lines of at most ``width`` columns."""
    out = [
        *_wrap(
            "D ladder: ERM (informed start) and ground state (lowest objective over starts) at each D, "
            "extrapolated D → ∞ (a + b/D or a + b/√D, slrpipe.analysis.extrapolate)",
            width,
            indent="",
        ),
        "",
    ]
    for r in rows:
        rs = _rs(r)
        out += _wrap(
            f"{r.experiment} {r.sigma} λ={r.lam:g} α={r.alpha:g}: theory "
            f"{pm(r.theory, r.theory_mc_se)}{'; RS ' + rs if rs else ''}; verdict: {r.verdict}",
            width,
        )
        for who, label in (("erm", "informed"), ("ground", "ground")):
            if not getattr(r, f"ladder_{who}"):
                continue
            Ds = getattr(r, "ladder_D" if who == "erm" else "ladder_ground_D")
            per_D = "  ".join(
                f"D={d}: {pm(m, e, sep='±')}"
                for d, m, e in zip(Ds, getattr(r, f"ladder_{who}"), getattr(r, f"ladder_{who}_se"))
            )
            z = getattr(r, "z_limit" if who == "erm" else "z_ground_limit")
            out += _wrap(f"    {label:<9}{per_D}", width, indent=" " * 13)
            out += _wrap(f"    {'':<9}D=∞: {_fit(r, who)}  z {z:.2f}", width, indent=" " * 13)
    return out


#: how docs/validation.md writes the extrapolation laws
LAWS = {"1/D": "1/D", "1/sqrt(D)": "1/√D"}
