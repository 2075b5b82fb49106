"""Cor. 4.3: risk vs ν on log scales — linear attention ~ 1/ν, softmax ~ exp(−c_L ν)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .style import COLORS, LABELS, ordered, save, setting_title


def plot(tree, experiments, out_stem):
    """Corollary 4.3 (docs/model.md §7): per population experiment (one row of two panels) the
    excess risk R* − Δ² vs ν on a log-linear and a log-log scale, with the ∝ 1/ν reference of
    linear σ and the exp(−c ν) fit of softmax's tail (the fitted c in the legend).

    ``tree``: the store (``open_store``), ``experiments``: population experiment names (dims
    (sigma, nu), ν > 0 finite drawn), ``out_stem``: output path without extension. Returns the
    written [pdf, png] paths. Raises KeyError for an experiment not in the store."""
    fig, axes = plt.subplots(len(experiments), 2, figsize=(6.8, 2.8 * len(experiments)), squeeze=False)
    for (ax_lin, ax_log), name in zip(axes, experiments):
        node = tree[f"population/{name}"].to_dataset()
        nu = node["nu"].values
        ok = np.isfinite(nu) & (nu > 0)
        delta2 = float(node["delta"]) ** 2
        for s in ordered(node["sigma"].values):
            r = node["risk"].sel(sigma=s).values[ok] - delta2  # excess risk over the noise floor Δ²
            kw = dict(color=COLORS.get(s), label=LABELS.get(s, s), marker="o", ms=2.5)
            if s == "bayes":
                kw.update(ls="--", marker=None, zorder=5)
            ax_lin.semilogy(nu[ok], r, **kw)
            ax_log.loglog(nu[ok], r, **kw)
        if "linear" in node["sigma"].values:
            r_lin = node["risk"].sel(sigma="linear").values[ok] - delta2
            ref = r_lin[-1] * nu[ok][-1] / nu[ok]
            ax_log.loglog(nu[ok], ref, color="grey", lw=0.8, ls=":", label="∝ 1/ν")
        if "softmax" in node["sigma"].values:
            r_sm = node["risk"].sel(sigma="softmax").values[ok] - delta2
            tail = (nu[ok] >= np.median(nu[ok])) & (r_sm > 0)
            if tail.sum() >= 2:
                c, b = np.polyfit(nu[ok][tail], np.log(r_sm[tail]), 1)
                ax_lin.semilogy(
                    nu[ok], np.exp(b + c * nu[ok]), color="grey", lw=0.8, ls=":", label=f"∝ exp(−{-c:.3g} ν)"
                )
        ax_lin.set_xlabel("signal strength ν")
        ax_log.set_xlabel("signal strength ν")
        ax_lin.set_ylabel("excess risk  R* − Δ²")
        ax_lin.set_title(setting_title(node) + " (log-lin)")
        ax_log.set_title("(log-log)")
        ax_lin.legend(frameon=False)
        ax_log.legend(frameon=False)
    fig.tight_layout()
    return save(fig, out_stem)
