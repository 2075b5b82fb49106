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
    params:
        members={f"{kind}/{name}": files for (kind, name), files in PLAN.members.items()},
    log:
        "results/logs/aggregate.log",
    run:
        from slrpipe.results.aggregate import build_store

        build_store(params.members, config, output[0], log=log[0])
