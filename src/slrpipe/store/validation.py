"""ERM vs replica theory: one row per (experiment, σ, λ, α) and a verdict.

For each replica experiment that names an ERM experiment, every ERM point (mean over seeds,
standard error from the seed-to-seed spread) is compared with the replica test error at the same
(σ, λ, α) — linearly interpolated in log α when α is not on the replica grid. A point *disagrees*
when |z| = |mean − theory| / s.e. > ``max_abs_z`` **and** |mean − theory| > ``rel_tol`` · theory
(the second clause allows the O(1/√D) finite-size bias the seed spread does not measure). Points
with α < ``min_alpha`` or λ < ``min_lam`` (where the paper reports that theory and simulation may
part: low SNR with low regularisation), or where the replica solver did not converge, are reported
but not enforced.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

COLUMNS = ["experiment", "sigma", "lam", "alpha", "D", "n_seeds", "erm_mean", "erm_se", "theory",
           "z", "rel_diff", "theory_converged", "enforced", "agrees"]


def _theory_at(rep: xr.Dataset, sigma, lam, alpha):
    if sigma not in rep["sigma"].values or not np.isclose(rep["lam"].values, lam).any():
        return np.nan, False
    lam_sel = rep["lam"].values[np.isclose(rep["lam"].values, lam)][0]
    err = rep["test_error"].sel(sigma=sigma, lam=lam_sel)
    conv = rep["converged"].sel(sigma=sigma, lam=lam_sel).astype(bool) if "converged" in rep else xr.ones_like(err, bool)
    a = rep["alpha"].values
    if alpha < a.min() or alpha > a.max():
        return np.nan, False
    i = int(np.searchsorted(a, alpha))
    if np.isclose(a[min(i, len(a) - 1)], alpha):
        j = min(i, len(a) - 1)
        return float(err.values[j]), bool(conv.values[j])
    lo, hi = i - 1, i
    w = (np.log(alpha) - np.log(a[lo])) / (np.log(a[hi]) - np.log(a[lo]))
    return float((1 - w) * err.values[lo] + w * err.values[hi]), bool(conv.values[lo] and conv.values[hi])


def compare(tree: xr.DataTree, config: dict) -> list[dict]:
    """Rows of the comparison table (see module doc) for every replica experiment with an ERM link."""
    v = config.get("validation", {})
    max_z, rel_tol = v.get("max_abs_z", 4.0), v.get("rel_tol", 0.05)
    min_alpha, min_lam = v.get("min_alpha", 0.0), v.get("min_lam", 0.0)
    rows = []
    for name, exp in (config.get("replica") or {}).items():
        if not exp.get("erm") or exp["erm"] not in tree.get("erm", {}):
            continue
        rep = tree[f"replica/{name}"].to_dataset()
        erm = tree[f"erm/{exp['erm']}"].to_dataset()
        for sigma in erm["sigma"].values:
            for lam in erm["lam"].values:
                for alpha in erm["alpha"].values:
                    e = erm["test_error"].sel(sigma=sigma, lam=lam, alpha=alpha)
                    k = int(e.count())
                    if k == 0:
                        continue
                    mean = float(e.mean())
                    se = float(e.std(ddof=1) / np.sqrt(k)) if k > 1 else np.nan
                    theory, conv = _theory_at(rep, str(sigma), float(lam), float(alpha))
                    z = (mean - theory) / se if se and se > 0 else np.nan
                    rel = (mean - theory) / theory if theory else np.nan
                    enforced = bool(np.isfinite(theory) and conv and alpha >= min_alpha and lam >= min_lam and k > 1)
                    ok = bool(abs(z) <= max_z or abs(rel) <= rel_tol) if np.isfinite(theory) else False
                    D = int(erm["D"].sel(sigma=sigma, lam=lam, alpha=alpha).max()) if "D" in erm else -1
                    rows.append(dict(experiment=name, sigma=str(sigma), lam=float(lam), alpha=float(alpha), D=D,
                                     n_seeds=k, erm_mean=mean, erm_se=se, theory=theory, z=z, rel_diff=rel,
                                     theory_converged=conv, enforced=enforced, agrees=ok))
    return rows


def format_table(rows: list[dict]) -> str:
    """Fixed-width text table of ``compare`` rows."""
    head = f"{'experiment':<22}{'sigma':<9}{'lam':>6}{'alpha':>7}{'D':>6}{'seeds':>6}{'ERM mean ± s.e.':>20}{'theory':>9}{'z':>7}{'rel':>8}  verdict"
    lines = [head, "-" * len(head)]
    for r in rows:
        verdict = ("ok" if r["agrees"] else "DISAGREES") + ("" if r["enforced"] else " (not enforced)")
        lines.append(f"{r['experiment']:<22}{r['sigma']:<9}{r['lam']:>6g}{r['alpha']:>7g}{r['D']:>6}{r['n_seeds']:>6}"
                     f"{r['erm_mean']:>12.4f} ± {r['erm_se']:<6.4f}{r['theory']:>9.4f}{r['z']:>7.2f}{r['rel_diff']:>8.3f}  {verdict}")
    return "\n".join(lines)


def failures(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["enforced"] and not r["agrees"]]


def to_json(rows) -> str:
    return json.dumps(rows, indent=1, default=float)


class ValidationFailed(RuntimeError):
    """ERM disagrees with the replica theory where the theory is expected to hold."""


def validate_store(store, config: dict, out) -> list[dict]:
    """Compare, write ``out`` (text table) and ``out``.json (rows); raise on enforced disagreement.

    The table is written in both cases (a failed check leaves ``<out>.failed.txt`` instead of
    ``out``, so Snakemake sees no output and reruns the check next time).

    Raises:
        ValidationFailed: one line listing the disagreeing points, when ``validation.fail`` is true.
    """
    from pathlib import Path

    from slrpipe.store.aggregate import open_store

    rows = compare(open_store(store), config)
    table = format_table(rows)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(to_json(rows))
    v = config.get("validation", {})
    bad = failures(rows)
    if bad and v.get("fail", True):
        out.with_suffix(".failed.txt").write_text(table + "\n")
        raise ValidationFailed(
            f"{len(bad)} of {sum(r['enforced'] for r in rows)} enforced ERM points disagree with the replica theory "
            f"(|z| > {v.get('max_abs_z', 4.0)} and relative difference > {v.get('rel_tol', 0.05)}); table in "
            f"{out.with_suffix('.failed.txt')}: "
            + "; ".join(f"{r['experiment']} {r['sigma']} λ={r['lam']:g} α={r['alpha']:g} "
                        f"(ERM {r['erm_mean']:.4f} ± {r['erm_se']:.4f} vs theory {r['theory']:.4f})" for r in bad))
    tmp = out.with_name(f".tmp-{out.name}")
    tmp.write_text(table + "\n")
    tmp.replace(out)
    return rows
