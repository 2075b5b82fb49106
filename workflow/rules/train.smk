# ERM: one job per (setting, σ, λ, α, seed) and start (init × restart × optimizer); writes one netCDF of metrics and overlaps.

# JAX's persistent compilation cache, shared by every train job (concurrent jobs and Slurm nodes on
# one filesystem included): a job loads the XLA programs an earlier job of the same shapes compiled
# instead of compiling them again (seconds per job). Entries are keyed by the program, the jax/XLA
# versions and XLA_FLAGS; a loaded program is the compiled one, so results are bit-identical
# (tests/test_train.py). The threshold is 0 s: our programs compile in well under JAX's default 1 s.
JAX_CACHE_ENV = "JAX_COMPILATION_CACHE_DIR=results/cache/jax JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0"


def _erm(wc):
    return job(PLAN.erm, "results/erm", wc.key, ".nc")


def _erm_data(wc):
    path = _erm(wc)["data_path"]
    return [path] if path else []


def _erm_args(wc):
    j = _erm(wc)
    common = ["sigma", "lam", "init", "restart", "init_seed", "optimizer", "lr", "max_iter", "record_every", "tol",
              "n_test", "test_seed", "dtype"]
    if j["data_path"]:
        return cli_args(j, common) + f" --data {j['data_path']}"
    return cli_args(j, common + ["model", "nu", "L", "delta", "D", "n", "teacher_seed", "data_seed"])


rule train_erm:
    input:
        _erm_data,
    output:
        "results/erm/{key}.nc",
    params:
        args=_erm_args,
        fingerprint=FINGERPRINT["train"],
    log:
        "results/logs/erm/{key}.log",
    benchmark:
        "results/benchmarks/erm/{key}.tsv"
    threads: 1
    shell:
        f"{THREAD_ENV} {JAX_CACHE_ENV} {SLRPIPE} train {{params.args}} --no-theory --out {{output}} > {{log}} 2>&1"
