"""Sequence length (docs/theory.md §12; Cor. 4.3, 4.4): excess risk vs L, the ν reaching a target
excess risk vs L with fitted laws, and the optimum under L ~ Uniform{1..N}."""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import numpy as np

from slrpipe.sigmas import get as get_sigma
from slrpipe.vocabulary import BAYES

from .style import COLORS, LABELS, MARKERS, ordered, save

_NU_STYLES = ["-", "--", ":", "-."]


def _law(sigma: str) -> str:
    """The law fitted to σ's target ν: "log" for the Bayes risk, else the registry's ``length_law``
    (ValueError for a σ not registered)."""
    return "log" if sigma == BAYES else get_sigma(sigma).length_law


def fit_laws(L: np.ndarray, nu_target: dict) -> dict:
    """Least-squares laws of the target ν against L (over L ≥ 10), per σ's ``length_law``
    (:mod:`slrpipe.sigmas`): "log", a + b ln L (Bayes, softmax, erf, softplus_norm), or "power",
    c·L^p in log-log (linear). Returns {σ: (text, callable)}.

    Raises:
        ValueError: a σ that is neither registered nor "bayes".
    """
    out = {}
    for s, nt in nu_target.items():
        law = _law(s)
        ok = (L >= 10) & np.isfinite(nt) & (nt > 0)
        if ok.sum() < 2:
            continue
        if law == "power":
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
        _panel_excess_risk(ax_r, node)
        _panel_nu_target(ax_n, node)
        _panel_variable_length(ax_v, node)
    fig.tight_layout()
    return save(fig, out_stem)


def _excess(node, var: str, **sel) -> np.ndarray:
    """``var`` at ``sel`` minus the noise floor Δ² of the node: the excess risk."""
    return node[var].sel(**sel).values - float(node["delta"].values) ** 2


def _panel_excess_risk(ax, node) -> None:
    """Panel (a): the optimal excess risk vs L, one line style per ν; on spiked-SLR with linear σ
    also its closed form L(L−1)/((L−1)ν+L²) (grey)."""
    L, nus = node["L"].values, node["nu"].values
    model = str(node["model"].values)
    sigmas = ordered(node["sigma"].values)
    for s in sigmas:
        for j, nu in enumerate(nus):
            ax.plot(
                L,
                _excess(node, "risk", sigma=s, nu=nu),
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
            ax.plot(
                xs,
                xs * (xs - 1) / ((xs - 1) * nu + xs * xs),
                color="grey",
                lw=0.7,
                ls=_NU_STYLES[j % 4],
                label="linear closed form L(L−1)/((L−1)ν+L²)" if j == 0 else None,
            )
    ax.set_xscale("log")
    ax.set_xlabel("sequence length L")
    ax.set_ylabel("optimal excess risk R* − Δ²")
    ax.set_title(f"{model}-SLR; ν = " + ", ".join(f"{v:g} ({st})" for v, st in zip(nus, _NU_STYLES)), fontsize=8)
    ax.legend(frameon=False, fontsize=6.5)


def _panel_nu_target(ax, node) -> None:
    """Panel (b): the ν reaching the node's ``target_risk`` vs L (markers) and the fitted laws of
    :func:`fit_laws` (lines); hidden when the node has no ``nu_target``."""
    if "nu_target" not in node:
        ax.set_visible(False)
        return
    L = node["L"].values
    target = json.loads(node.attrs.get("target_risk", "null"))
    nt = {
        s: node["nu_target"].sel(sigma=s).values
        for s in ordered(node["sigma"].values)
        if np.isfinite(node["nu_target"].sel(sigma=s).values).any()
    }
    laws = fit_laws(L, nt)
    xs = np.geomspace(max(10, L.min()), L.max(), 100)
    for s, v in nt.items():
        ax.loglog(L, v, color=COLORS.get(s), marker=MARKERS.get(s, "o"), ls="none", ms=4, label=LABELS.get(s, s))
        if s in laws:
            ax.loglog(xs, laws[s][1](xs), color=COLORS.get(s), lw=0.9, label=laws[s][0])
    ax.set_xlabel("sequence length L")
    ax.set_ylabel(f"ν for excess risk {target:g}")
    ax.set_title("signal needed: fits over L ≥ 10", fontsize=8)
    ax.legend(frameon=False, fontsize=6.5)


def _panel_variable_length(ax, node) -> None:
    """Panel (c): the optimal excess risk under L ~ Unif{1..var_L_max} vs ν (shared k, v); hidden
    when the node has no ``risk_var``."""
    if "risk_var" not in node:
        ax.set_visible(False)
        return
    nv = node["nu_var"].values
    for s in ordered(node["sigma"].values):
        rv = _excess(node, "risk_var", sigma=s)
        if np.isfinite(rv).any():
            ax.semilogy(
                nv,
                rv,
                color=COLORS.get(s),
                marker=MARKERS.get(s),
                ms=3,
                ls="--" if s == "bayes" else "-",
                label=LABELS.get(s, s),
            )
    nmax = json.loads(node.attrs.get("var_L_max", "null"))
    ax.set_xscale("log")
    ax.set_xlabel("signal strength ν")
    ax.set_ylabel("optimal excess risk R* − Δ²")
    ax.set_title(f"variable length L ~ Unif{{1..{nmax}}}, shared (k, v)", fontsize=8)
    ax.legend(frameon=False, fontsize=6.5)
