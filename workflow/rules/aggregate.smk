# One store for everything: results/slr.zarr, written once (atomically) by one local job.

localrules:
    aggregate,


rule aggregate:
    input:
        population=list(PLAN.population),
        erm=list(PLAN.erm),
        replica=list(PLAN.replica),
    output:
        directory("results/slr.zarr"),
    log:
        "results/logs/aggregate.log",
    run:
        from slrpipe.store.aggregate import build_store

        build_store(PLAN.members, config, output[0], log=log[0])
