# Theory ↔ experiment: every ERM point against the replica prediction at the same (σ, λ, α).
# Fails the workflow, with the disagreeing points in one message, where the theory should hold.

localrules:
    validate,


rule validate:
    input:
        "results/slr.zarr",
    output:
        "results/validation.txt",
    log:
        "results/logs/validate.log",
    run:
        from slrpipe.store.validation import validate_store

        validate_store(input[0], config, output[0])
