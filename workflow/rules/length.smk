# Population optimum against the sequence length L (docs/theory.md §12): one job per experiment and σ.


def _length_args(wc, output):
    j = PLAN.length[output[0]]
    return cli_args(j, ["sigma", "model", "L_grid", "nu_grid", "delta", "target_risk", "var_L_max", "var_nu_grid"])


rule length:
    output:
        "results/length/{exp}/{sigma}.nc",
    params:
        args=_length_args,
        fingerprint=FINGERPRINT["length"],
    log:
        "results/logs/length/{exp}/{sigma}.log",
    benchmark:
        "results/benchmarks/length/{exp}/{sigma}.tsv"
    threads: 1
    shell:
        f"{THREAD_ENV} {SLRPIPE} length {{params.args}} --out {{output}} > {{log}} 2>&1"
