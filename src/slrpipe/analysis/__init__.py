"""Analysis of a run: the results store and what is computed from it.

``aggregate``: the per-job result files → ``results/slr.zarr`` (one zarr DataTree; docs/results.md
§3); ``ground``, ``trajectory``, ``distance``: variables added at aggregation (the ground state over
starts, the population risk along trajectories, distances between minima); ``rsb1``: the 1RSB state
a point reports; ``validation`` (with ``replica``, ``seeds``, ``verdict``, ``ladder``,
``extrapolate``): the ERM-vs-theory comparison, typed rows (``rows``) → ``results/validation.json``;
``render``: its text table (``results/validation.txt``); ``tables``: the markdown tables
``results/tables/<name>.md`` (docs/results.md §2).
"""
