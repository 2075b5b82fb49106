# One store for everything: results/slr.zarr, written once (atomically) by one local job, from the
# plan file (the validated config and each experiment's result files; rewritten when they change).


rule plan:
    localrule: True
    output:
        PLAN_FILE,
    params:
        plan=PLAN_TEXT,
    run:
        write_text(params.plan, output[0])


rule aggregate:
    localrule: True
    input:
        plan=PLAN_FILE,
        population=list(PLAN.population),
        erm=list(PLAN.erm),
        replica=list(PLAN.replica),
        length=list(PLAN.length),
    output:
        directory("results/slr.zarr"),
    log:
        "results/logs/aggregate.log",
    benchmark:
        "results/benchmarks/aggregate.tsv"
    shell:
        f"{SLRPIPE} aggregate --plan {{input.plan}} --out {{output}} > {{log}} 2>&1"
