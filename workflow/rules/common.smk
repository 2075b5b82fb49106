# Helpers shared by all rules: config validation, the job tables, source fingerprints.
import os
import shlex
import sys

from slrpipe.figures import DRAWS_SETTING_REPLICA, READS_ROWS, REGISTRY
from slrpipe.fingerprint import fingerprint
from slrpipe.commands.plan_file import plan_text
from slrpipe.io import write_text
from slrpipe.job_args import command_line
from slrpipe.manifests import MANIFEST as MANIFEST_PATTERN
from slrpipe.manifests import digest, follow_members, manifest_text, stale_sentinel, write_manifest
from slrpipe.threads import thread_env
from slrpipe.config import ConfigError, validate
from slrpipe.resource_laws import first_attempt
from slrpipe.workflow import plan, setting_dir

try:
    validate(config)  # against the package's schema (workflow/schemas/ links to it)
    PLAN = plan(config, results="results")
except ConfigError as err:  # one line, before any job exists
    print(err, file=sys.stderr)
    sys.exit(1)

# The CLI through this workflow's own interpreter: jobs need no venv on PATH (Slurm nodes included).
SLRPIPE = f"{shlex.quote(sys.executable)} -m slrpipe"

# Compute jobs are single-threaded: XLA and BLAS are pinned to the cores Snakemake gives them
# (slrpipe.threads.thread_env, with Snakemake's {threads} filled in per job).
THREAD_ENV = " ".join(
    [f"{k}={shlex.quote(v) if ' ' in v else v}" for k, v in thread_env("{threads}").items()]
    + ["PYTHONUNBUFFERED=1", "XLA_PYTHON_CLIENT_PREALLOCATE=false"]
)

# JAX's persistent compilation cache, shared by every JAX job (train and replica; concurrent jobs
# and Slurm nodes on one filesystem included): a job loads the XLA programs an earlier job of the
# same shapes compiled instead of compiling them again (train: ~1.6 s per job; replica: ~11 s of
# wall for its prox programs). Entries are keyed by the program, the jax/XLA versions and
# XLA_FLAGS; a loaded program is the compiled one, so results are bit-identical (tests/test_train.py,
# tests/test_replica.py). The threshold is 0 s: the train programs compile in well under JAX's default 1 s.
JAX_CACHE_ENV = "JAX_COMPILATION_CACHE_DIR=results/cache/jax JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0"

# What each step imports; an edit there changes the fingerprint and reruns that step only.
FINGERPRINT = {
    "generate": fingerprint(["slrpipe.commands.generate"]),
    # the train job records overlaps only; the population formula at the learned overlaps is
    # evaluated at aggregation, so a theory edit never reruns training
    "train": fingerprint(["slrpipe.commands.train"], exclude=["slrpipe.theory"]),
    "population": fingerprint(["slrpipe.commands.population_batch"]),
    "length": fingerprint(["slrpipe.commands.length"]),
    "replica": fingerprint(["slrpipe.commands.replica"]),
    "rsb1": fingerprint(["slrpipe.commands.rsb1"]),
    "rsb1_error": fingerprint(["slrpipe.commands.rsb1_error"]),
}


# Batch jobs (train_erm, population): one rule each, the batch a wildcard. A batch's members are in
# its manifest (slrpipe.manifests), written here when the workflow is loaded, atomically and only
# when its text changes; the job reads it (--members-file), so no command line carries them, and
# its rule reruns the batch when the manifest's digest (a param) changes. Snakemake tracks a batch
# by its sentinel BATCH_DONE, written when the job succeeds and holding its manifest's digest: its
# result files (one per member, how many varies by batch) are not declared outputs. A sentinel
# stands for all of its members: one whose member file is missing (deleted, or lost to a failure)
# is removed here, so that the batch is remade as a removed declared output would be (when a job
# reading it runs, or as a target) — only while its members are those it was made with (a plan of
# another member list, a dry run of an edited config included, leaves it to the digest param).
# A member file newer than its sentinel (rewritten or edited since) has the sentinel rewritten
# (slrpipe.manifests.follow_members), so that what reads the batch is redone, as for a declared output.
MANIFEST = MANIFEST_PATTERN.format(results="results", family="{family}", batch="{batch}")
BATCH_DONE = "results/batches/{family}/{batch}.done"
BATCHES = {"train_erm": PLAN.train_batches, "population": PLAN.population_batches}
MANIFEST_DIGEST = {}
_DONE_OF = {}  # result file -> the sentinel of its batch
for _family, _batches in BATCHES.items():
    for _name, _batch in _batches.items():
        _text = manifest_text(_batch)
        write_manifest(_text, MANIFEST.format(family=_family, batch=_name))
        MANIFEST_DIGEST[(_family, _name)] = digest(_text)
        _done = BATCH_DONE.format(family=_family, batch=_name)
        _DONE_OF.update({m.out: _done for m in _batch.members})
        _outs = [m.out for m in _batch.members]
        if stale_sentinel(_done, MANIFEST_DIGEST[(_family, _name)], _outs):
            os.remove(_done)
        else:
            follow_members(_done, _outs)


def tracked(files):
    """The files Snakemake tracks for result files: a batch member's sentinel, anything else itself."""
    return list(dict.fromkeys(_DONE_OF.get(f, f) for f in files))


def batch_rule(family):
    """A batch rule's manifest (input), sentinel (output) and members' digest (param)."""
    return dict(
        manifest=ancient(MANIFEST.format(family=family, batch="{batch}")),
        done=BATCH_DONE.format(family=family, batch="{batch}"),
        digest=lambda wildcards: MANIFEST_DIGEST[(family, wildcards.batch)],
    )


# Slurm requests of every compute rule: mem_mb (MiB) and runtime (min) of the first attempt from
# slrpipe.resource_laws.first_attempt (a measured law where the job's size varies, a constant
# elsewhere), times Snakemake's attempt: a job killed for memory or time comes back with more
# (profile: retries). A --set-resources entry (command line or profile) replaces a value.
def scaled_resources(family, record):
    """{mem_mb, runtime} of a rule of ``family`` whose job's record is ``record(wildcards)``."""

    def law(name):
        return lambda wildcards, attempt: attempt * first_attempt(family, record(wildcards))[name]

    return {"mem_mb": law("mem_mb"), "runtime": law("runtime")}


def args_of(table, output):
    """A rule's ``params.args``: the command line of the planned record of its output (slrpipe.jobs),
    ``output`` being the rule's output pattern. A function of the wildcards only: Snakemake records
    (and compares, to rerun a job whose command changed) no params derived from input or output."""
    return lambda wildcards: command_line(table[output.format(**wildcards)])


def experiment_files(kind, names):
    return [f for name in names for f in PLAN.members[(kind, name)]]


def figure_uses(fig):
    """Files a figure draws from (through the store), as Snakemake tracks them (:func:`tracked`):
    a figure reruns when one changes."""
    kind, names = FIGURE_INPUTS[fig]
    files = experiment_files(kind, names)
    if kind == "erm":  # the population optimum at each ERM setting
        files += experiment_files("population", [f"at_{n}" for n in names])
    if kind == "replica":  # the ERM markers drawn on each replica panel
        linked = [config["replica"][n]["erm"] for n in names if config["replica"][n]["erm"]]
        files += experiment_files("erm", linked)
    if fig in DRAWS_SETTING_REPLICA:  # the replica line of each ERM experiment's data setting
        settings = {setting_dir(config["erm"][n]) for n in names}
        same = [r for r, exp in config["replica"].items() if setting_dir(exp) in settings]
        files += experiment_files("replica", same)
    return tracked(files)


# The plan as the commands that read the whole workflow (aggregate, validate) receive it: the
# validated config and each experiment's result files, planned once, here.
PLAN_FILE = "results/plan.json"
PLAN_TEXT = plan_text(config, PLAN.members)

# figure -> (experiment kind, experiment names) of this config (slrpipe.figures.REGISTRY)
FIGURE_INPUTS = {fig: (kind, config["figures"].get(fig, [])) for fig, kind in REGISTRY.items()}
FIGURES = [
    f"results/figures/{fig}.{ext}" for fig, (_, names) in FIGURE_INPUTS.items() if names for ext in ("pdf", "png")
]

# The ERM-vs-replica check runs when some replica experiment names an ERM experiment.
VALIDATION = ["results/validation.txt"] if any(exp["erm"] for exp in config["replica"].values()) else []
VALIDATION_ROWS = [p.removesuffix(".txt") + ".json" for p in VALIDATION]  # its rows (validation.json)
