"""Analysis of a run: the results store and what is computed from it.

``aggregate``: the per-job result files → ``results/slr.zarr`` (one zarr DataTree; docs/results.md
§3); ``ground``, ``trajectory``, ``distance``: variables added at aggregation (the ground state over
starts, the population risk along trajectories, distances between minima); ``rsb1``: the 1RSB state
a point reports; ``comparison`` (with ``replica``, ``seeds``, ``verdict``, ``ladder``,
``extrapolate``, ``rsb1_columns``): the ERM-vs-theory comparison, typed rows (``rows``);
``validation``: the check that writes them (``results/validation.json``) and fails on
disagreement; ``render``: their text table (``results/validation.txt``); ``tables``: the markdown tables
``results/tables/<name>.md`` (docs/results.md §2).
"""
