"""Sequence length (docs/theory.md §12; Cor. 4.3, 4.4): excess risk vs L, the ν reaching a target
excess risk vs L with fitted laws, and the optimum under L ~ Uniform{1..N}."""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import numpy as np

from .style import COLORS, LABELS, MARKERS, ordered, save

_NU_STYLES = ["-", "--", ":", "-."]


def fit_laws(L: np.ndarray, nu_target: dict) -> dict:
    """Least-squares laws of the target ν against L (over L ≥ 10): a + b ln L for Bayes/softmax and
    erf, c·L^p (log-log) for linear. Returns {σ: (text, callable)}."""
    out = {}
    for s, nt in nu_target.items():
        ok = (L >= 10) & np.isfinite(nt) & (nt > 0)
        if ok.sum() < 2:
            continue
        if s == "linear":
            p, lc = np.polyfit(np.log(L[ok]), np.log(nt[ok]), 1)
            out[s] = (f"ν ≈ {np.exp(lc):.3g}·L^{p:.3f}", lambda x, p=p, lc=lc: np.exp(lc) * x**p)
        else:
            b, a = np.polyfit(np.log(L[ok]), nt[ok], 1)
            out[s] = (f"ν ≈ {a:.2f} + {b:.2f} ln L", lambda x, a=a, b=b: a + b * np.log(x))
    return out


def plot(tree, experiments, out_stem):
    """One row of three panels per length experiment (docs/theory.md §12; Cor. 4.3–4.4): (a) the
    optimal excess risk R* − Δ² vs L at each ν (with linear σ's closed form on spiked-SLR), (b)
    the ν reaching ``target_risk`` vs L with fitted laws (:func:`fit_laws`), (c) the optimum for
    L ~ Unif{1..var_L_max} vs ν, where the node has it.

    ``out_stem``: output path without extension. Returns the written [pdf, png] paths. Raises
    KeyError for an experiment not in the store."""
    fig, axes = plt.subplots(len(experiments), 3, figsize=(11.0, 3.2 * len(experiments)), squeeze=False)
    for (ax_r, ax_n, ax_v), name in zip(axes, experiments):
        node = tree[f"length/{name}"].to_dataset()
        L, nus = node["L"].values, node["nu"].values
        delta2 = float(node["delta"].values) ** 2
        model = str(node["model"].values)
        sigmas = ordered(node["sigma"].values)
        # (a) excess risk vs L at each ν
        for s in sigmas:
            for j, nu in enumerate(nus):
                r = node["risk"].sel(sigma=s, nu=nu).values - delta2
                ax_r.plot(
                    L,
                    r,
                    color=COLORS.get(s),
                    ls=_NU_STYLES[j % 4],
                    marker=MARKERS.get(s),
                    ms=2.5,
                    lw=1.8 if s == "bayes" else 1.2,
                    label=LABELS.get(s, s) + (" (= softmax optimum)" if s == "bayes" else "") if j == 0 else None,
                )
        if model == "spiked" and "linear" in sigmas:
            xs = np.unique(np.geomspace(L.min(), L.max(), 200).round().astype(int))
            for j, nu in enumerate(nus):
                ax_r.plot(
                    xs,
                    xs * (xs - 1) / ((xs - 1) * nu + xs * xs),
                    color="grey",
                    lw=0.7,
                    ls=_NU_STYLES[j % 4],
                    label="linear closed form L(L−1)/((L−1)ν+L²)" if j == 0 else None,
                )
        ax_r.set_xscale("log")
        ax_r.set_xlabel("sequence length L")
        ax_r.set_ylabel("optimal excess risk R* − Δ²")
        ax_r.set_title(f"{model}-SLR; ν = " + ", ".join(f"{v:g} ({st})" for v, st in zip(nus, _NU_STYLES)), fontsize=8)
        ax_r.legend(frameon=False, fontsize=6.5)
        # (b) ν needed for the target excess risk
        if "nu_target" in node:
            target = json.loads(node.attrs.get("target_risk", "null"))
            nt = {
                s: node["nu_target"].sel(sigma=s).values
                for s in sigmas
                if np.isfinite(node["nu_target"].sel(sigma=s).values).any()
            }
            laws = fit_laws(L, nt)
            xs = np.geomspace(max(10, L.min()), L.max(), 100)
            for s, v in nt.items():
                ax_n.loglog(
                    L, v, color=COLORS.get(s), marker=MARKERS.get(s, "o"), ls="none", ms=4, label=LABELS.get(s, s)
                )
                if s in laws:
                    ax_n.loglog(xs, laws[s][1](xs), color=COLORS.get(s), lw=0.9, label=laws[s][0])
            ax_n.set_xlabel("sequence length L")
            ax_n.set_ylabel(f"ν for excess risk {target:g}")
            ax_n.set_title("signal needed: fits over L ≥ 10", fontsize=8)
            ax_n.legend(frameon=False, fontsize=6.5)
        else:
            ax_n.set_visible(False)
        # (c) variable length
        if "risk_var" in node:
            nv = node["nu_var"].values
            for s in sigmas:
                rv = node["risk_var"].sel(sigma=s).values - delta2
                if np.isfinite(rv).any():
                    ax_v.semilogy(
                        nv,
                        rv,
                        color=COLORS.get(s),
                        marker=MARKERS.get(s),
                        ms=3,
                        ls="--" if s == "bayes" else "-",
                        label=LABELS.get(s, s),
                    )
            nmax = json.loads(node.attrs.get("var_L_max", "null"))
            ax_v.set_xscale("log")
            ax_v.set_xlabel("signal strength ν")
            ax_v.set_ylabel("optimal excess risk R* − Δ²")
            ax_v.set_title(f"variable length L ~ Unif{{1..{nmax}}}, shared (k, v)", fontsize=8)
            ax_v.legend(frameon=False, fontsize=6.5)
        else:
            ax_v.set_visible(False)
    fig.tight_layout()
    return save(fig, out_stem)
