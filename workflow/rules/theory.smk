# Theory: population sweeps over ν (one job per experiment: its σ and the Bayes oracle, one file
# each) and replica sweeps over α (one job per setting, σ and λ, warm-started along α).
# A population job is one batch (its σ's files; the batch a wildcard, as the training batches are,
# train.smk), so a σ edit reruns that experiment's sweeps only (~1–25 s each).
_POPULATION = batch_rule("population")


rule population:
    input:
        members=_POPULATION["manifest"],
    output:
        _POPULATION["done"],
    log:
        "results/logs/population/{batch}.log",
    benchmark:
        "results/benchmarks/population/{batch}.tsv"
    wildcard_constraints:
        batch=r"\w+",
    # after the replica sweeps and before the training batches: the longest of these (max_Lvar,
    # ~30 s) then never runs alone at the end, the short training batches fill the other core
    priority: 5
    threads: 1
    resources:
        **scaled_resources("population", lambda wildcards: PLAN.population_batches[wildcards.batch]),
    params:
        members=_POPULATION["digest"],
        fingerprint=FINGERPRINT["population"],
    shell:
        f"{THREAD_ENV} {SLRPIPE} population-batch --members-file {{input.members}} > {{log}} 2>&1 && echo {{params.members}} > {{output}}"


# 11 for the first replica sweep of each σ in the plan, 10 for the other sweeps and the
# Bayes-optimal ones (rule replica)
_FIRST_OF_SIGMA = {job.sigma: out for out, job in reversed(PLAN.replica.items()) if job.sigma}
REPLICA_PRIORITY = {out: 11 if out in _FIRST_OF_SIGMA.values() else 10 for out in PLAN.replica}


rule replica:
    output:
        "results/replica/{key}.nc",
    log:
        "results/logs/replica/{key}.log",
    benchmark:
        "results/benchmarks/replica/{key}.tsv"
    wildcard_constraints:
        key=r"(?:(?!/rsb1(?:_error)?/).)+",  # a 1RSB point's files are rule rsb1's and rsb1_error's
    # the longest jobs of a run (fold searches: up to ~2 min on CPU) start first, so that they do
    # not finish alone at the end while the other core idles; the first job of each σ before the
    # others (11): two same-σ jobs started together would both compile its XLA programs (~11 s
    # each), while a later one loads them from the shared cache
    priority: lambda wildcards: REPLICA_PRIORITY[f"results/replica/{wildcards.key}.nc"]
    threads: 1
    resources:
        **scaled_resources("replica", lambda wildcards: PLAN.replica[f"results/replica/{wildcards.key}.nc"]),
    params:
        args=args_of(PLAN.replica, "results/replica/{key}.nc"),
        fingerprint=FINGERPRINT["replica"],
    shell:
        f"{THREAD_ENV} {JAX_CACHE_ENV} {SLRPIPE} replica {{params.args}} --out {{output}} > {{log}} 2>&1"


# Zero-temperature 1RSB at one (setting, σ, λ, α) (replica experiments with ansatz [rs, rsb1];
# docs/theory.md §13): started from the RS sweep's fixed point there, so it follows that sweep.
RSB1_OUTPUT = "results/replica/{key}/rsb1/{point}.nc"


rule rsb1:
    input:
        rs=lambda wildcards: PLAN.rsb1[RSB1_OUTPUT.format(**wildcards)].rs,
    output:
        RSB1_OUTPUT,
    log:
        "results/logs/replica/{key}/rsb1/{point}.log",
    benchmark:
        "results/benchmarks/replica/{key}/rsb1/{point}.tsv"
    threads: 1
    resources:
        **scaled_resources("rsb1", lambda wildcards: PLAN.rsb1[RSB1_OUTPUT.format(**wildcards)]),
    params:
        args=args_of(PLAN.rsb1, RSB1_OUTPUT),
        fingerprint=FINGERPRINT["rsb1"],
    shell:
        f"{THREAD_ENV} {JAX_CACHE_ENV} {SLRPIPE} rsb1 {{params.args}} --out {{output}} > {{log}} 2>&1"


# The batch-means Monte Carlo error of a 1RSB point's reported state (docs/theory.md §13): its own
# job, so that a change of K or of this step reruns the K batch solves only, not the s scan.
RSB1_ERROR_OUTPUT = "results/replica/{key}/rsb1_error/{point}.nc"


rule rsb1_error:
    input:
        rsb1=lambda wildcards: PLAN.rsb1_error[RSB1_ERROR_OUTPUT.format(**wildcards)].rsb1,
    output:
        RSB1_ERROR_OUTPUT,
    log:
        "results/logs/replica/{key}/rsb1_error/{point}.log",
    benchmark:
        "results/benchmarks/replica/{key}/rsb1_error/{point}.tsv"
    threads: 1
    resources:
        # the cost of one solve of its point's samples at one s: the point's law, one s
        **scaled_resources(
            "rsb1_error", lambda wildcards: PLAN.rsb1[PLAN.rsb1_error[RSB1_ERROR_OUTPUT.format(**wildcards)].rsb1]
        ),
    params:
        args=args_of(PLAN.rsb1_error, RSB1_ERROR_OUTPUT),
        fingerprint=FINGERPRINT["rsb1_error"],
    shell:
        f"{THREAD_ENV} {JAX_CACHE_ENV} {SLRPIPE} rsb1-error {{params.args}} --out {{output}} > {{log}} 2>&1"
