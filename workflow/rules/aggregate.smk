# One store for everything: results/slr.zarr, written once (atomically) by one local job, from the
# plan file (the validated config and each experiment's result files; rewritten when they change).
# Snakemake tracks the sentinel STORE_DONE beside the store, not the store itself: a directory()
# output would get Snakemake's .snakemake_timestamp inside the zarr store and be deleted before the
# job runs. The store is written to a temporary sibling and renamed over the old one when complete,
# so a failed aggregation (e.g. an unreadable result file) keeps the last good store; Snakemake then
# deletes only the sentinel, and the next run aggregates again.
STORE = "results/slr.zarr"
STORE_DONE = f"{STORE}.done"


rule plan:
    output:
        PLAN_FILE,
    log:
        "results/logs/plan.log",
    localrule: True
    params:
        plan=PLAN_TEXT,
    run:
        write_text(params.plan, output[0])
        write_text(f"wrote {output[0]}\n", log[0])


rule aggregate:
    input:
        plan=PLAN_FILE,
        population=tracked(PLAN.population),  # the batches' sentinels (common.smk)
        erm=tracked(PLAN.erm),
        replica=list(PLAN.replica),
        rsb1=list(PLAN.rsb1),
        rsb1_error=list(PLAN.rsb1_error),
        length=list(PLAN.length),
    output:
        STORE_DONE,
    log:
        "results/logs/aggregate.log",
    benchmark:
        "results/benchmarks/aggregate.tsv"
    localrule: True
    # it runs alone, after every compute job: both cores of a laptop build the experiments' nodes
    # side by side (Snakemake caps it at --cores, at --local-cores under a cluster profile)
    threads: 2
    params:
        store=lambda wildcards, output: output[0].removesuffix(".done"),
    shell:
        f"{SLRPIPE} aggregate --plan {{input.plan}} --out {{params.store}} --workers {{threads}} > {{log}} 2>&1 && touch {{output}}"
