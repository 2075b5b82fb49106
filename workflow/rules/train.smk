# ERM: one job per training batch — the σ, seeds, λ and starts (init × restart × optimizer) of one
# (setting, α, D), trained in one process (slrpipe train-batch) — writing one netCDF per run, so
# the store, the figures and partial reruns keep the granularity of one run per file. One rule,
# the batch a wildcard (slrpipe.workflow.batch_key); its members come from the batch's manifest
# and Snakemake tracks it by its sentinel (common.smk): changing one α adds or reruns that α's
# batches only. Memory and runtime: the measured law (slrpipe.resource_laws.batch_resources) × attempt.
_TRAIN = batch_rule("train_erm")


def _batch_data(wildcards):
    return sorted({m.data for m in PLAN.train_batches[wildcards.batch].members if m.data})


rule train_erm:
    input:
        members=_TRAIN["manifest"],
        data=_batch_data,
    output:
        _TRAIN["done"],
    log:
        "results/logs/erm/{batch}.log",
    benchmark:
        "results/benchmarks/erm/{batch}.tsv"
    wildcard_constraints:
        batch=r"\w+",
    threads: 1
    resources:
        **scaled_resources("train_erm", lambda wildcards: PLAN.train_batches[wildcards.batch]),
    params:
        members=_TRAIN["digest"],
        fingerprint=FINGERPRINT["train"],
    shell:
        f"{THREAD_ENV} {JAX_CACHE_ENV} {SLRPIPE} train-batch --members-file {{input.members}} --no-theory"
        " > {log} 2>&1 && echo {params.members} > {output}"
