"""The results store and what is computed from it.

``aggregate``: the per-job result files → ``results/slr.zarr`` (one zarr DataTree; docs/results.md
§3); ``ground``, ``trajectory``: variables added at aggregation (the ground state over starts, the
population risk along trajectories); ``validation``, ``verdict``, ``ladder``, ``extrapolate``: the
ERM-vs-theory comparison (``results/validation.txt``; docs/results.md §2).
"""
