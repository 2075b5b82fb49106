# ERM: one job per training batch — the σ, seeds, λ and starts (init × restart × optimizer) of one
# (setting, α, D), trained in one process (slrpipe train-batch) — writing one netCDF per run, so
# the store, the figures and partial reruns keep the granularity of one run per file. One rule per
# batch (its outputs are its runs' files): changing one α adds or reruns that α's batches only.


def _batch_data(batch):
    return sorted({m.data for m in batch.members if m.data})


# A profile addresses the batch rules as one family, "train_erm" (family_threads and
# family_resources, common.smk): its set-threads and set-resources entries for that name
# (partition, GPU) apply to every batch rule. Memory and runtime come from the measured law
# (slrpipe.workflow.batch_resources), scaled by the attempt so that a job killed for memory or
# time is retried bigger (profile: retries).
_FAMILY = "train_erm"


def _scaled(value):
    return lambda wildcards, attempt: value * attempt


for _name, _batch in PLAN.train_batches.items():

    rule:
        name:
            f"{_FAMILY}__{_name}"
        input:
            _batch_data(_batch),
        output:
            [m.out for m in _batch.members],
        log:
            f"results/logs/erm/{_name}.log",
        benchmark:
            f"results/benchmarks/erm/{_name}.tsv"
        threads: family_threads(_FAMILY)
        resources:
            **{k: _scaled(v) for k, v in batch_resources(_batch).items()},
            **family_resources(_FAMILY),
        params:
            args=command_line(_batch),
            fingerprint=FINGERPRINT["train"],
        shell:
            f"{THREAD_ENV} {JAX_CACHE_ENV} {SLRPIPE} train-batch {{params.args}} --no-theory > {{log}} 2>&1"
