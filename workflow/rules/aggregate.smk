# One store for everything: results/slr.zarr, written once (atomically) by one local job.


rule aggregate:
    localrule: True
    input:
        population=list(PLAN.population),
        erm=list(PLAN.erm),
        replica=list(PLAN.replica),
        length=list(PLAN.length),
    output:
        directory("results/slr.zarr"),
    params:
        config=json.dumps(config),
    log:
        "results/logs/aggregate.log",
    benchmark:
        "results/benchmarks/aggregate.tsv"
    shell:
        f"{SLRPIPE} aggregate --config-json {{params.config:q}} --out {{output}} > {{log}} 2>&1"
