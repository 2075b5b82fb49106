# Theory ↔ experiment: every ERM point against the replica prediction at the same (σ, λ, α).
# Fails the workflow, with the disagreeing points in one message, where the theory should hold.


rule validate:
    localrule: True
    input:
        STORE_DONE,  # the sentinel of results/slr.zarr (aggregate.smk)
    output:
        "results/validation.txt",
    params:
        config=json.dumps(config),
    log:
        "results/logs/validate.log",
    benchmark:
        "results/benchmarks/validate.tsv"
    shell:
        f"{SLRPIPE} validate --store {STORE} --config-json {{params.config:q}} --out {{output}} > {{log}} 2>&1"
