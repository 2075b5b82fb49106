# ERM: one job per (setting, σ, λ, α, seed) and start (init × restart × optimizer); writes one netCDF of metrics and overlaps.



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
