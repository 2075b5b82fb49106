"""Figures drawn from results/slr.zarr, one module per figure (``plot(tree, experiments, out)``).

``REGISTRY`` is the one list of figures: the CLI's choices, the workflow's figure rules, the
config's ``figures:`` keys and the report captions (workflow/report/<name>.rst) all derive from it.
Importing this package does not import matplotlib.
"""

# figure name -> the experiment kind (config section) whose experiments it draws, one panel each
REGISTRY = {
    "fig2": "population",
    "cor43": "population",
    "erm_vs_population": "erm",
    "fig3": "replica",
    "length": "length",
    "length_alpha": "replica",  # finite α at several L: replica, ERM, Bayes-optimal, n = ∞ limits
    "optimization": "erm",
    "validation": "replica",  # the verdict of every ERM point against the replica theory
    "complexity": "replica",  # the 1RSB complexity curve Σ(e) at each solved point, ERM's minima on it
}

#: figures of ERM experiments that also draw the replica node of each experiment's data setting
#: (model, ν, L, Δ; figures/optimization.py): their rules list that node's result files as well, so
#: that a changed replica result redraws them (workflow/rules/common.smk, ``figure_uses``)
DRAWS_SETTING_REPLICA = frozenset({"optimization"})

#: figures that read the comparison's rows (results/validation.json, slrpipe.analysis.comparison):
#: their rules read those rows and pass them as ``plot(…, rows=…)``
READS_ROWS = frozenset({"validation", "complexity"})
#: of those, the figures drawn from the rows alone (no store is opened: ``plot(None, …)``)
ROWS_ONLY = frozenset({"validation"})
