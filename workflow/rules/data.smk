# Training sets as zarr stores, one per (setting, D, n, seed), shared by every σ and λ trained on it.
# With store_data: false no store is written and training regenerates the same samples from the
# recorded seeds (counter-based chunks), which is what the paper-size config does.


rule generate_data:
    output:
        directory("results/data/{key}.zarr"),
    log:
        "results/logs/data/{key}.log",
    benchmark:
        "results/benchmarks/data/{key}.tsv"
    threads: 1
    resources:
        **scaled_resources("generate_data", lambda wildcards: PLAN.data["results/data/{key}.zarr".format(**wildcards)]),
    params:
        args=args_of(PLAN.data, "results/data/{key}.zarr"),
        fingerprint=FINGERPRINT["generate"],
    shell:
        f"{THREAD_ENV} {SLRPIPE} generate {{params.args}} --out {{output}} > {{log}} 2>&1"
