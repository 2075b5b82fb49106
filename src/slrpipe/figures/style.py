"""Shared look of all figures: one colour per σ, labels with symbols, atomic PDF + PNG output."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from slrpipe.io import atomic_file  # noqa: E402
from slrpipe.vocabulary import BAYES, NORMALISED_SIGMAS, SIGMAS  # noqa: E402

COLORS = {"softmax": "#1f77b4", "linear": "#d62728", "erf": "#2ca02c", "softplus_norm": "#ff7f0e",
          "bayes": "black", "bayes_optimal": "black"}
LABELS = {"softmax": "softmax", "linear": "linear", "erf": "element-wise erf",
          "softplus_norm": "softplus (normalised)", "bayes": "Bayes risk", "bayes_optimal": "Bayes-optimal"}
MARKERS = {"softmax": "o", "linear": "s", "erf": "^", "softplus_norm": "D"}
#: legend order: the Bayes risk, the normalised scores, then the element-wise ones (erf before linear)
ORDER = [BAYES, *NORMALISED_SIGMAS, *(s for s in reversed(SIGMAS) if s not in NORMALISED_SIGMAS)]

plt.rcParams.update({"font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9, "legend.fontsize": 7.5,
                     "figure.dpi": 150, "savefig.bbox": "tight", "axes.grid": True, "grid.alpha": 0.3,
                     "lines.linewidth": 1.5})


def ordered(sigmas):
    """The σ names as str, in the figures' fixed order (``ORDER``: bayes, softmax, softplus_norm,
    erf, linear; unknown names last)."""
    sigmas = [str(s) for s in sigmas]
    return sorted(sigmas, key=lambda s: ORDER.index(s) if s in ORDER else len(ORDER))


def setting_title(attrs: dict) -> str:
    """'spiked-SLR, L = 2, Δ = 0' from a node's JSON-encoded experiment attributes."""
    import json

    get = lambda k, d=None: json.loads(attrs[k]) if k in attrs else d  # noqa: E731
    model = {"spiked": "spiked-SLR", "max": "max-SLR"}.get(get("model"), get("model"))
    L = get("L")
    Ltxt = f"L ~ Unif{{{','.join(map(str, L['uniform']))}}}" if isinstance(L, dict) else f"L = {L}"
    parts = [model, Ltxt]
    nu = get("nu")
    if nu is not None and not isinstance(nu, list):
        parts.append("ν = ∞" if (isinstance(nu, str) or math.isinf(nu)) else f"ν = {nu:g}")
    delta = get("delta", 0.0)
    if delta:
        parts.append(f"Δ = {delta:g}")
    return ", ".join(parts)


def log_alpha_axis(ax):
    """Log-scaled α axis with plain-number tick labels (0.5, 1, 2, 5, …)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("sample complexity α = n/D")


def log_error_axis(ax, label="test error"):
    """Log-scaled error axis with plain-number tick labels (errors span decades: max-SLR at ν = ∞
    reaches 0.1 while the linear interpolation peak exceeds 1)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel(label)


def panels(n: int, width=3.3, height=2.7):
    """A figure with ``n`` panels side by side, each ``width`` × ``height`` inches; returns
    (figure, [axes])."""
    fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False)
    return fig, list(axes[0])


def save(fig, out_stem) -> list[Path]:
    """Write ``<out_stem>.pdf`` and ``.png`` atomically (temp file, then rename)."""
    out_stem = Path(out_stem)
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("pdf", "png"):
        final = out_stem.with_suffix(f".{ext}")
        with atomic_file(final) as tmp:
            fig.savefig(tmp, format=ext, dpi=200)
        paths.append(final)
    plt.close(fig)
    return paths


def legend_below(fig, axes):
    """One legend for all panels, below them (entries de-duplicated by label)."""
    seen = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    fig.tight_layout()
    fig.legend(list(seen.values()), list(seen), loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=min(4, len(seen)), frameon=False)
