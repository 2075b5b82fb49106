"""The environment that pins XLA and the BLAS/OpenMP libraries to a number of threads, defined once.

Used by the workflow's rules (workflow/rules/common.smk builds its shell prefix from it, with
Snakemake's ``{threads}`` as n), the benchmarks and the tests. It takes effect only in a process
that has it before JAX or numpy start their thread pools: set it in a child's environment, or in
``os.environ`` (``setdefault``: a value set by the caller wins) before those imports. This module
imports neither (nor anything of slrpipe), so it can be imported first. :func:`threads_allowed`
reads the count back in a job (the replica prox's threads); :func:`map_threads` runs a map on a
thread pool and :func:`map_processes` on a process pool (the store's aggregation).
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

#: the variables of the BLAS and OpenMP thread pools (numpy/scipy; the replica prox reads
#: OMP_NUM_THREADS as its number of chunk threads, slrpipe.theory.replica.prox.prox_threads)
BLAS_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: the size of XLA's CPU intra-op thread pool ("XLAEigen"): the PJRT CPU client reads NPROC and
#: otherwise takes every core the process may run on, whatever XLA_FLAGS say, so that a 1-thread
#: job used ~1.4 cores (docs/cluster.md, "Threads")
XLA_POOL_VAR = "NPROC"


def thread_env(n: int | str = 1, *, multi_thread_eigen: bool = False) -> dict[str, str]:
    """The variables that pin XLA (CPU) and BLAS/OpenMP to ``n`` threads, in this order:
    ``XLA_FLAGS`` ('--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=n'),
    ``XLA_POOL_VAR`` (NPROC, the size of XLA's intra-op pool) = n, then ``BLAS_THREAD_VARS`` = n.

    Args:
        n: threads, an int ≥ 1; or a placeholder str filled in later (the Snakemake rules pass
            '{threads}').
        multi_thread_eigen: the value of XLA's --xla_cpu_multi_thread_eigen (False, as the
            workflow's jobs run).
    Returns:
        dict[str, str]: variable name → value.
    Raises:
        ValueError: n an int < 1.
    """
    if not isinstance(n, str) and (int(n) != n or n < 1):
        raise ValueError(f"n: threads must be an integer ≥ 1 or a placeholder string, got {n!r}")
    eigen = "true" if multi_thread_eigen else "false"
    env = {"XLA_FLAGS": f"--xla_cpu_multi_thread_eigen={eigen} intra_op_parallelism_threads={n}", XLA_POOL_VAR: str(n)}
    env.update({var: str(n) for var in BLAS_THREAD_VARS})
    return env


def threads_allowed() -> int:
    """The threads this process may use: ``OMP_NUM_THREADS`` where set to a positive integer (the
    workflow sets it to a job's cores), else the CPUs the process may run on (≥ 1)."""
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def map_threads(fn, items: list, workers: int = 1) -> list:
    """``[fn(x) for x in items]``, on ``workers`` threads when > 1 (for numpy-bound ``fn``, which
    releases the GIL); the same list for any count."""
    if workers <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(min(workers, len(items))) as pool:
        return list(pool.map(fn, items))


def map_processes(fn, items: list, workers: int = 1) -> list:
    """``[fn(x) for x in items]``, on ``workers`` processes when > 1 (for work that holds the GIL,
    such as opening files through xarray); the same list for any count. ``fn`` and the items must
    pickle (a module-level function); an exception of ``fn`` is raised here. The processes are
    forked where the platform allows (no re-import), so call it before anything starts threads
    or JAX."""
    if workers <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ProcessPoolExecutor(min(workers, len(items)), mp_context=ctx) as pool:
        return list(pool.map(fn, items))
