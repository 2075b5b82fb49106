"""The single-thread environment (slrpipe.threads): its values, and that importing it starts no
thread pool (the benchmarks import it before JAX and numpy)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from slrpipe.threads import BLAS_THREAD_VARS, XLA_POOL_VAR, thread_env


def test_thread_env_pins_xla_and_blas():
    assert thread_env(1) == {
        "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
        "NPROC": "1",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    assert list(thread_env(4)) == ["XLA_FLAGS", XLA_POOL_VAR, *BLAS_THREAD_VARS]
    assert thread_env(4, multi_thread_eigen=True)["XLA_FLAGS"].startswith("--xla_cpu_multi_thread_eigen=true ")
    # a placeholder for Snakemake to fill in (workflow/rules/common.smk)
    assert thread_env("{threads}")["MKL_NUM_THREADS"] == "{threads}"
    with pytest.raises(ValueError, match="n: threads"):
        thread_env(0)


def test_importing_it_loads_neither_jax_nor_numpy():
    code = "import sys, slrpipe.threads; print(sorted({'jax', 'numpy'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


_COUNT_POOL = """
import os, jax, jax.numpy as jnp
x = jnp.ones((512, 512))
jax.jit(lambda a: (a @ a).sum())(x).block_until_ready()
names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
print(sum(n.startswith("tf_XLAEigen") for n in names))
"""


def _xla_pool_threads(env: dict) -> int:
    run = subprocess.run([sys.executable, "-c", _COUNT_POOL], env=env, capture_output=True, text=True, check=True)
    return int(run.stdout.split()[-1])


@pytest.mark.skipif(not os.path.isdir("/proc/self/task") or (os.cpu_count() or 1) < 2, reason="needs Linux, ≥ 2 cores")
def test_thread_env_sizes_the_xla_pool():
    """XLA's CPU pool takes every core unless NPROC says otherwise (XLA_FLAGS alone do not pin it):
    the control without NPROC must show the pool, else this test no longer checks anything."""
    base = {k: v for k, v in os.environ.items() if k != XLA_POOL_VAR} | {"JAX_PLATFORMS": "cpu"}
    unpinned = _xla_pool_threads(base | {"XLA_FLAGS": thread_env(1)["XLA_FLAGS"]})
    assert unpinned == min(os.cpu_count(), len(os.sched_getaffinity(0))) >= 2
    assert _xla_pool_threads(base | thread_env(1)) == 1
    assert _xla_pool_threads(base | thread_env(2)) == 2
