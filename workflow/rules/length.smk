# Population optimum against the sequence length L (docs/theory.md §12): one job per experiment and σ.


rule length:
    output:
        "results/length/{exp}/{sigma}.nc",
    log:
        "results/logs/length/{exp}/{sigma}.log",
    benchmark:
        "results/benchmarks/length/{exp}/{sigma}.tsv"
    # as the population sweeps (theory.smk): the longest (softplus_norm, ~45 s) must not run alone
    # at the end while the other core idles
    priority: 5
    threads: 1
    resources:
        **scaled_resources(
            "length", lambda wildcards: PLAN.length["results/length/{exp}/{sigma}.nc".format(**wildcards)]
        ),
    params:
        args=args_of(PLAN.length, "results/length/{exp}/{sigma}.nc"),
        fingerprint=FINGERPRINT["length"],
    shell:
        f"{THREAD_ENV} {SLRPIPE} length {{params.args}} --out {{output}} > {{log}} 2>&1"
