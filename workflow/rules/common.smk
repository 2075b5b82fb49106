# Helpers shared by all rules: config validation, the job tables, source fingerprints.
import json
import shlex
import sys

from slrpipe.figures import DRAWS_SETTING_REPLICA, READS_ROWS, REGISTRY
from slrpipe.fingerprint import fingerprint
from slrpipe.commands._config import plan_text
from slrpipe.io import write_text
from slrpipe.jobs import command_line
from slrpipe.threads import thread_env
from slrpipe.workflow import ConfigError, batch_resources, plan, setting_dir, validate

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


def _plain(setting):
    """A profile setting as parsed by Snakemake (a Resource) back to the value a rule accepts."""
    return getattr(setting, "_value", setting)


# Batch rules are generated one per batch (population__<batch>, train_erm__<batch>); a profile
# addresses each kind by its family name (the part before "__"), which Snakemake does not match
# to the generated names: these give a family's set-threads / set-resources entries to its rules.
def family_threads(family):
    return _plain(workflow.resource_settings.overwrite_threads.get(family, 1))


def family_resources(family):
    entries = dict(workflow.resource_settings.overwrite_resources.get(family, {}))
    return {k: _plain(v) for k, v in entries.items()}


def args_of(table, output):
    """A rule's ``params.args``: the command line of the planned record of its output (slrpipe.jobs),
    ``output`` being the rule's output pattern. A function of the wildcards only: Snakemake records
    (and compares, to rerun a job whose command changed) no params derived from input or output."""
    return lambda wildcards: command_line(table[output.format(**wildcards)])


def experiment_files(kind, names):
    return [f for name in names for f in PLAN.members[(kind, name)]]


def figure_uses(fig):
    """Result files a figure draws from (through the store): a figure reruns when one changes."""
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
    return files


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
