# Theory ↔ experiment: every ERM point against the replica prediction at the same (σ, λ, α).
# Fails the workflow, with the disagreeing points in one message, where the theory should hold.


rule validate:
    input:
        store=STORE_DONE,  # the sentinel of results/slr.zarr (aggregate.smk)
        plan=PLAN_FILE,
    output:
        txt="results/validation.txt",
        rows="results/validation.json",  # every column of every row (slrpipe.analysis.rows.to_json)
    log:
        "results/logs/validate.log",
    benchmark:
        "results/benchmarks/validate.tsv"
    localrule: True
    shell:
        f"{SLRPIPE} validate --store {STORE} --plan {{input.plan}} --out {{output.txt}} > {{log}} 2>&1"
