"""The single-thread environment (slrpipe.threads): its values, and that importing it starts no
thread pool (the benchmarks import it before JAX and numpy)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from slrpipe.threads import BLAS_THREAD_VARS, thread_env


def test_thread_env_pins_xla_and_blas():
    assert thread_env(1) == {
        "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    assert list(thread_env(4)) == ["XLA_FLAGS", *BLAS_THREAD_VARS]
    assert thread_env(4, multi_thread_eigen=True)["XLA_FLAGS"].startswith("--xla_cpu_multi_thread_eigen=true ")
    # a placeholder for Snakemake to fill in (workflow/rules/common.smk)
    assert thread_env("{threads}")["MKL_NUM_THREADS"] == "{threads}"
    with pytest.raises(ValueError, match="n: threads"):
        thread_env(0)


def test_importing_it_loads_neither_jax_nor_numpy():
    code = "import sys, slrpipe.threads; print(sorted({'jax', 'numpy'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
