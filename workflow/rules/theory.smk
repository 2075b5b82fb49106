# Theory: population sweeps over ν (one job per experiment and σ) and replica sweeps over α
# (one job per setting, σ and λ, warm-started along α).


rule population:
    output:
        "results/population/{exp}/{sigma}.nc",
    log:
        "results/logs/population/{exp}/{sigma}.log",
    benchmark:
        "results/benchmarks/population/{exp}/{sigma}.tsv"
    threads: 1
    params:
        args=args_of(PLAN.population),
        fingerprint=FINGERPRINT["population"],
    shell:
        f"{THREAD_ENV} {SLRPIPE} population {{params.args}} --out {{output}} > {{log}} 2>&1"


rule replica:
    output:
        "results/replica/{key}.nc",
    log:
        "results/logs/replica/{key}.log",
    benchmark:
        "results/benchmarks/replica/{key}.tsv"
    # the longest jobs of a run (fold searches: up to ~2 min on CPU) start first, so that they do
    # not finish alone at the end while the other core idles
    priority: 10
    threads: 1
    params:
        args=args_of(PLAN.replica),
        fingerprint=FINGERPRINT["replica"],
    shell:
        f"{THREAD_ENV} {JAX_CACHE_ENV} {SLRPIPE} replica {{params.args}} --out {{output}} > {{log}} 2>&1"
