"""slrpipe: single-location regression (SLR) with attention — data, estimators, theory, ERM.

Reproduces Duranthon, Marion, Boyer, Loureiro, Zdeborová, *Statistical Advantage of Softmax
Attention: Insights from Single-Location Regression* (arXiv 2509.21936, ICLR 2026).
Sub-packages follow the data flow: ``data`` (teacher, SLR sampling) → ``models`` (estimators)
→ ``train`` (ERM) / ``theory`` (population, replica) → ``store`` (aggregation, validation) → ``figures``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("slrpipe")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0+unknown"
