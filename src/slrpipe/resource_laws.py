"""Slurm requests of the workflow's compute jobs: the first attempt's ``mem_mb`` and ``runtime``
from a law of the job's size, measured (docs/cluster.md), or a constant where the size is not
modelled; the rules multiply both by Snakemake's attempt (:func:`first_attempt`).
"""

from __future__ import annotations

import math

from slrpipe.jobs import ReplicaJob, Rsb1Job, TrainBatchJob

#: resource law of one train-batch job (measured by benchmarks/bench_erm.py batch; docs/cluster.md):
#: peak memory = MEM_BASE_MB + MEM_PER_SET × (one training set X in its dtype) + the test chunks, the
#: host memory of a CPU run (the sample, its JAX copy and the transposed copy XT: 3.2 sets measured at
#: the paper's largest batch); a GPU run holds XT on the device and needs about half of it on the host;
#: the jax sampler keeps no host copy (CPU peak one set lower: the law is 1.61× it, docs/cluster.md)
MEM_BASE_MB, MEM_PER_SET, TEST_CHUNK_MB = 1200.0, 4.0, 512.0
#: runtime = START_S + Σ_runs iterations × SEC_PER_GB_ITER × |X| in GB (+ sampling), ×SAFETY
START_S, SEC_PER_GB_ITER, SAMPLE_SEC_PER_GB, SAFETY = 120.0, 0.2, 60.0, 2.0


def batch_resources(batch: TrainBatchJob) -> dict[str, int]:
    """Slurm request of one training batch from the measured law above: ``mem_mb`` (MiB) and
    ``runtime`` (minutes) of the first attempt; the rules scale both with Snakemake's ``attempt``.
    The runtime is the CPU law (a GPU runs an iteration ~100× faster, so it is an upper bound)."""
    m = batch.members[0]
    itemsize = 8 if any(j.dtype == "float64" for j in batch.members) else 4
    x_gb = m.n * max(m.L) * m.D * itemsize / 2**30
    mem = MEM_BASE_MB + MEM_PER_SET * x_gb * 1024 + TEST_CHUNK_MB
    n_sets = len({(j.teacher_seed, j.data_seed) for j in batch.members})
    tests = {(j.teacher_seed, j.test_seed, j.n_test) for j in batch.members}  # one pass over each
    test_gb = sum(n_test for *_, n_test in tests) * max(m.L) * m.D * 4 / 2**30
    sec = (
        START_S
        + sum(j.max_iter for j in batch.members) * SEC_PER_GB_ITER * x_gb
        + SAMPLE_SEC_PER_GB * (n_sets * x_gb + test_gb)
    )
    return {"mem_mb": int(math.ceil(mem)), "runtime": int(math.ceil(SAFETY * sec / 60))}


#: replica law (``slrpipe replica``; docs/cluster.md): its channel averages over N Monte Carlo
#: samples of L tokens at each α of its grid, for each λ and Monte Carlo draw (mc_seeds), fold
#: searches included: runtime = REPLICA_START_S + REPLICA_SEC_PER_POINT × N·L·draws / 2¹⁶ × |α|·|λ|,
#: ×SAFETY; peak memory = JAX_BASE_MB + REPLICA_MB_PER_SAMPLE × N·L·draws / 2¹⁶
JAX_BASE_MB = 1000.0
REPLICA_START_S, REPLICA_SEC_PER_POINT, REPLICA_MB_PER_SAMPLE = 60.0, 100.0, 64.0
#: 1RSB law (``slrpipe rsb1``; docs/cluster.md): a fixed point at each s of the grid, each channel
#: pass N₀·N₁ prox solves: runtime = RSB1_START_S + RSB1_SEC_PER_S × N₀·N₁ / 2¹⁵ × |s|, ×SAFETY (a
#: point that needs more comes back with the attempt); peak memory = JAX_BASE_MB + RSB1_MB × N₀·N₁ / 2¹⁵
RSB1_START_S, RSB1_SEC_PER_S, RSB1_MB = 60.0, 60.0, 64.0
#: the shortest runtime requested (min): a small job's wall time is dominated by start-up and by
#: what shares its node, which no law of its size sees
MIN_RUNTIME_MIN = 10
#: first-attempt requests of the rules whose job size is not modelled (mem_mb in MiB, runtime in min)
CONSTANT_RESOURCES = {
    "generate_data": {"mem_mb": 16000, "runtime": 30},
    "population": {"mem_mb": 4000, "runtime": 30},
    "length": {"mem_mb": 4000, "runtime": 30},
}


def _request(mem_mb: float, seconds: float) -> dict[str, int]:
    return {"mem_mb": int(math.ceil(mem_mb)), "runtime": int(math.ceil(SAFETY * seconds / 60))}


def replica_resources(job: ReplicaJob) -> dict[str, int]:
    """Slurm request of one replica sweep from the law above: ``mem_mb`` (MiB) and ``runtime``
    (minutes) of the first attempt."""
    size = job.n_samples * max(job.L) * (job.mc_seeds or 1) / 2**16
    points = len(job.alpha_grid) * len(job.lam_grid or (None,))
    return _request(JAX_BASE_MB + REPLICA_MB_PER_SAMPLE * size, REPLICA_START_S + REPLICA_SEC_PER_POINT * size * points)


def rsb1_resources(job: Rsb1Job, *, s_points: int | None = None) -> dict[str, int]:
    """Slurm request of one 1RSB point from the law above (``s_points``: the number of s solved;
    default the most a scan may solve, ``s_max_rows`` rows of the extended grid plus the solves that
    refine s*, ScanOptions.refine_max, and with ``n0_check`` two more at 2N₀): ``mem_mb`` (MiB) and
    ``runtime`` (minutes) of the first attempt."""
    from slrpipe.theory.replica.rsb1.scan import ScanOptions

    size = job.n_outer * job.n_inner / 2**15
    n_s = max(len(job.s_grid), job.s_max_rows) + ScanOptions.refine_max if s_points is None else s_points
    if job.n0_check and s_points is None:
        n_s += 2 * 2  # RS and the reported state again, each at twice the samples
    return _request(JAX_BASE_MB + RSB1_MB * size, RSB1_START_S + RSB1_SEC_PER_S * size * n_s)


#: rule family -> its first-attempt law (the record of one job -> {mem_mb, runtime});
#: rsb1_error gets its 1RSB point's record: K batches of N₀/K samples at the one reported s
LAWS = {
    "train_erm": batch_resources,
    "replica": replica_resources,
    "rsb1": rsb1_resources,
    "rsb1_error": lambda job: rsb1_resources(job, s_points=1),
    **{rule: (lambda job, _r=req: dict(_r)) for rule, req in CONSTANT_RESOURCES.items()},
}


def first_attempt(family: str, record) -> dict[str, int]:
    """The Slurm request of a job of rule ``family`` (a key of :data:`LAWS`) on its first attempt:
    ``mem_mb`` (MiB) and ``runtime`` (minutes, at least :data:`MIN_RUNTIME_MIN`); the rules multiply
    both by Snakemake's attempt.

    Raises:
        KeyError: ``family`` is not a compute rule of the workflow (one line naming the allowed)."""
    if family not in LAWS:
        raise KeyError(f"no resource law for rule {family!r}; allowed: {sorted(LAWS)}")
    req = LAWS[family](record)
    return {**req, "runtime": max(req["runtime"], MIN_RUNTIME_MIN)}


#: GPU nodes (``batch_gpu_resources``): the host holds the interpreter, JAX and the test chunks
#: (MEM_BASE_MB + TEST_CHUNK_MB; measured 1372 MB at the paper's largest batch, sampler jax), plus
#: with the numpy sampler HOST_SETS_NUMPY training sets drawn on the host (measured 2661 MB). The card
#: holds one training set X in its dtype (no transposed copy off the CPU), GPU_CHUNK_MB of chunks in
#: flight (a set being drawn, a test chunk with its predictions), the lanes (``lanes_device_mb``) and
#: GPU_BASE_MB: the CUDA context, XLA's workspace and the allocator's pool, set from the one
#: measurement of the card's memory (tests/measured/erm_batch_gpu.yaml: 8.9 GB at 1.12 GB of X, of an
#: older program, units not recorded; to be re-measured with benchmarks/bench_erm.py batch on a GPU)
HOST_SETS_NUMPY, GPU_CHUNK_MB, GPU_BASE_MB = 1.5, 512.0, 8192.0


def lanes_device_mb(S: int, n: int, L: int, D: int, itemsize: int = 4, memory_size: int = 10) -> float:
    """Device memory (MiB) of S models trained together as lanes (``slrpipe.train.lanes``) on a
    training set of n sequences of L tokens of dimension D, beside X: each lane's L-BFGS state and
    line search (2·memory_size + 12 vectors of (k, v), 2D numbers each) and the evaluation's
    temporaries (8 arrays of the product's n·L·2S numbers)."""
    return (S * 2 * D * (2 * memory_size + 12) + 8 * n * L * 2 * S) * itemsize / 2**20


def batch_gpu_resources(batch: TrainBatchJob) -> dict[str, int]:
    """Request of one training batch on a GPU node (constants above): ``mem_mb`` (MiB of host
    memory) and ``gpu_mem_mb`` (MiB of the card: one training set at a time, its models as lanes),
    so that batches whose ``gpu_mem_mb`` sum to at most the card's memory can share it. The
    runtime is ``batch_resources``'s (the CPU law, an upper bound)."""
    m = batch.members[0]
    itemsize = 8 if any(j.dtype == "float64" for j in batch.members) else 4
    x_mb = m.n * max(m.L) * m.D * itemsize / 2**20
    per_set: dict = {}
    for j in batch.members:
        per_set[(j.teacher_seed, j.data_seed)] = per_set.get((j.teacher_seed, j.data_seed), 0) + 1
    S = max(per_set.values())
    host = (
        MEM_BASE_MB + TEST_CHUNK_MB + (HOST_SETS_NUMPY * x_mb if any(j.sampler != "jax" for j in batch.members) else 0)
    )
    gpu = GPU_BASE_MB + x_mb + GPU_CHUNK_MB + lanes_device_mb(S, m.n, max(m.L), m.D, itemsize)
    return {"mem_mb": int(math.ceil(host)), "gpu_mem_mb": int(math.ceil(gpu))}
