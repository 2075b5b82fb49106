"""Shared look of all figures: one colour per σ (from the σ registry, :mod:`slrpipe.sigmas`), labels
with symbols, atomic PDF + PNG output."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from slrpipe.io import atomic_file
from slrpipe.sigmas import get as get_sigma
from slrpipe.vocabulary import BAYES, NORMALISED_SIGMAS, SIGMAS

#: colour, label and marker per σ: the registry's (``Sigma.colour``, ``label``, ``marker``), plus the Bayes
#: risk and the Bayes-optimal error
COLORS = {**{s: get_sigma(s).colour for s in SIGMAS}, "bayes": "black", "bayes_optimal": "black"}
LABELS = {**{s: get_sigma(s).label for s in SIGMAS}, "bayes": "Bayes risk", "bayes_optimal": "Bayes-optimal"}
MARKERS = {s: get_sigma(s).marker for s in SIGMAS}
#: legend order: the Bayes risk, the normalised scores, then the element-wise ones (erf before linear)
ORDER = [BAYES, *NORMALISED_SIGMAS, *(s for s in reversed(SIGMAS) if s not in NORMALISED_SIGMAS)]

plt.rcParams.update(
    {
        "font.size": 9,
        "axes.titlesize": 9,
        "axes.labelsize": 9,
        "legend.fontsize": 7.5,
        "figure.dpi": 150,
        "savefig.bbox": "tight",
        "axes.grid": True,
        "grid.alpha": 0.3,
        "lines.linewidth": 1.5,
    }
)


def ordered(sigmas):
    """The σ names as str, in the figures' fixed order (``ORDER``: bayes, the normalised σ in
    registry order, then the others in reverse registry order: bayes, softmax, softplus_norm, erf,
    linear; names not in it last)."""
    sigmas = [str(s) for s in sigmas]
    return sorted(sigmas, key=lambda s: ORDER.index(s) if s in ORDER else len(ORDER))


def setting_title(ds) -> str:
    """'spiked-SLR, L = 2, ν = 1, Δ = 0.1' from a node's scalar coordinates model, L (text form,
    slrpipe.lengths.format_L), ν (left out where ν is a dimension) and Δ (left out when 0)."""
    from slrpipe.lengths import parse_L

    def scalar(k):
        return ds[k].values.item() if k in ds.coords and ds[k].ndim == 0 else None

    model = {"spiked": "spiked-SLR", "max": "max-SLR"}.get(scalar("model"), scalar("model"))
    parts = [model] if model else []
    if scalar("L") is not None:
        law = parse_L(str(scalar("L")))
        uniform = len(law) > 1 and len(set(law.values())) == 1
        if uniform:
            parts.append(f"L ~ Unif{{{','.join(map(str, law))}}}")
        else:
            parts.append(f"L = {next(iter(law))}" if len(law) == 1 else f"L ~ {law}")
    nu = scalar("nu")
    if nu is not None:
        parts.append("ν = ∞" if math.isinf(nu) else f"ν = {nu:g}")
    delta = scalar("delta") or 0.0
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


def panels(n: int, width=3.3, height=2.7, ncols: int | None = None):
    """A figure with ``n`` panels, each ``width`` × ``height`` inches: side by side, or in rows of
    ``ncols`` (the unused cells of the last row hidden); returns (figure, [its n axes])."""
    cols = n if ncols is None else max(1, min(ncols, n))
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


#: no creation date in the PDF (matplotlib writes the time otherwise): the same figure, the same bytes
_METADATA = {"pdf": {"CreationDate": None}, "png": None}


def save(fig, out_stem) -> list[Path]:
    """Write ``<out_stem>.pdf`` and ``.png`` atomically (temp file, then rename); both are
    byte-identical whenever the figure is (no time stamp in either)."""
    out_stem = Path(out_stem)
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("pdf", "png"):
        final = out_stem.with_suffix(f".{ext}")
        with atomic_file(final) as tmp:
            fig.savefig(tmp, format=ext, dpi=200, metadata=_METADATA[ext])
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
    fig.legend(
        list(seen.values()),
        list(seen),
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=min(4, len(seen)),
        frameon=False,
    )
