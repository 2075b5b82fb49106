"""Benchmark of ERM (slrpipe.train), one mode per question; each mode's module docstring says what
it runs and prints.

Modes:
  eval    seconds per L-BFGS iteration and the bandwidth an evaluation of J reaches; the paper
          config projected onto one GPU (benchmarks/_erm_eval.py)
  starts  the starts of one training set one after the other, as lanes, and by vmap of
          optax.lbfgs (benchmarks/_erm_starts.py)
  share   every model of one training set in one pass over X: a config's training set (default:
          the paper's largest batch) one model after the other against all as lanes, time per
          model-iteration and passes over X per iteration (benchmarks/_erm_share.py)
  products  the product forms of the lanes' evaluation: CPU rate of each against the number of
          columns (benchmarks/_erm_products.py)
  scipy   side by side with research code: scipy's L-BFGS-B in float64 with jitted JAX gradients,
          one start after another, against the lanes (benchmarks/_erm_scipy.py)
  batch   one train-batch job as the workflow submits it: peak memory, time split, the resource
          laws' requests (benchmarks/_erm_batch.py)
  job     where one run's seconds go in a training job, JAX's compilation cache cold and warm
          (benchmarks/_erm_job.py)
  config  a config's ERM with lanes off and on: CPU seconds of its batches, the runs compared
          (benchmarks/_erm_config.py)

Usage: python benchmarks/bench_erm.py MODE [its options; MODE --help lists them]
       python benchmarks/bench_erm.py [MODE] --quick   (CI: tiny sizes; without MODE every mode,
                                                        each in a fresh process)
"""

from __future__ import annotations

import sys

#: mode → the module of benchmarks/ that runs it
MODES = {
    "eval": "_erm_eval",
    "starts": "_erm_starts",
    "share": "_erm_share",
    "products": "_erm_products",
    "scipy": "_erm_scipy",
    "batch": "_erm_batch",
    "job": "_erm_job",
    "config": "_erm_config",
}


def main(argv=None) -> int:
    from _modes import run_mode  # benchmarks/, the script's folder, is first on sys.path

    return run_mode(__file__, MODES, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
