"""One form per parameter: every planned job is a typed record, its command line is generated from
that record, and the command rebuilds the very same record from the command line."""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import json
import math
import re
from pathlib import Path

import pytest
import yaml

from slrpipe.cli import build_parser
from slrpipe.config import validate
from slrpipe.job_args import argv, defaults, from_namespace, text
from slrpipe.jobs import RECORDS, DataJob, ReplicaJob, Rsb1ErrorJob, Rsb1Job, TrainBatchJob, TrainJob
from slrpipe.workflow import plan

REPO = Path(__file__).resolve().parents[1]
CONFIGS = ["config/smoke.yaml", "config/config.yaml", "config/paper.yaml", "config/length.yaml"]


def _plan(name):
    return plan(validate(copy.deepcopy(yaml.safe_load((REPO / name).read_text()))))


@functools.cache
def _parser():
    return build_parser()


def _parse(command, record):
    return _parser().parse_args([command, *argv(record), "--out", getattr(record, "out", None) or "x.nc"])


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "config").glob("*.yaml")))
def test_every_shipped_config_validates_and_plans(name):
    p = _plan(f"config/{name}")
    assert p.population or p.erm or p.replica or p.length


@pytest.mark.parametrize("name", CONFIGS)
def test_every_planned_record_round_trips_through_its_command_line(name):
    from slrpipe.commands.population_batch import members as population_members
    from slrpipe.commands.train import job_of
    from slrpipe.commands.train_batch import members

    p = _plan(name)
    for path, record in p.population.items():
        assert record.out == path
        assert from_namespace(type(record), _parse("population", record)) == record
    for batch in p.population_batches.values():
        args = _parser().parse_args(["population-batch", *argv(batch)])
        assert population_members(args.members) == list(batch.members)
    assert sorted(m.out for b in p.population_batches.values() for m in b.members) == sorted(p.population)
    for record in p.length.values():
        assert from_namespace(type(record), _parse("length", record)) == record
    for record in p.replica.values():
        assert from_namespace(ReplicaJob, _parse("replica", record)) == record
    for record in p.data.values():
        assert from_namespace(DataJob, _parse("generate", record)) == record
    for record in p.erm.values():
        if record.data is None:  # a stored set is read by the command (checked in tests/test_train.py)
            assert job_of(_parse("train", record)) == record
    for batch in p.train_batches.values():
        args = _parser().parse_args(["train-batch", *argv(batch)])
        assert members(args.members) == list(batch.members)
    for record in p.rsb1.values():
        assert from_namespace(Rsb1Job, _parse("rsb1", record)) == record
    for record in p.rsb1_error.values():
        assert from_namespace(Rsb1ErrorJob, _parse("rsb1-error", record)) == record


def test_population_batches_do_not_depend_on_the_order_of_the_config():
    """One batch per result directory, members in path order: listing the σ (or the experiments)
    in another order gives the same command lines, so it reruns nothing."""
    cfg = validate(copy.deepcopy(yaml.safe_load((REPO / "config/config.yaml").read_text())))
    p = plan(copy.deepcopy(cfg))
    for exp in cfg["population"].values():
        exp["sigmas"] = exp["sigmas"][::-1]
    cfg["erm"] = dict(reversed(list(cfg["erm"].items())))
    q = plan(cfg)
    assert {k: argv(b) for k, b in p.population_batches.items()} == {
        k: argv(b) for k, b in q.population_batches.items()
    }
    assert all(len({m.out.rsplit("/", 1)[0] for m in b.members}) == 1 for b in p.population_batches.values())
    assert len(p.population_batches) == 7  # 4 population experiments + 3 ERM settings


def test_a_one_way_sweep_is_its_own_job():
    """``one_way`` travels as a flag and keys the job's path: the two-way sweep is another job."""
    p = _plan("config/length.yaml")
    one = {path: r for path, r in p.replica.items() if r.one_way}
    assert one and all(path.endswith("_oneway.nc") and "--one-way" in argv(r) for path, r in one.items())
    assert all("/L64/" in path for path in one)  # config/length.yaml: L = 64 only
    two = [r for r in p.replica.values() if not r.one_way and not r.bayes_optimal]
    assert two and all("--one-way" not in argv(r) for r in two)


def test_values_are_written_exactly():
    """Floats by repr (a round trip to the last bit), ∞ as 'inf', length laws in their text form."""
    assert text(0.1) == "0.1" and float(text(1 / 3)) == 1 / 3 and text(math.inf) == "inf"
    assert text({1: 1 / 3, 2: 1 / 3, 3: 1 / 3}) == "uniform:1,2,3" and text((0.5, 2.0)) == "0.5,2.0"
    job = TrainJob(model="max", nu=math.inf, L={2: 1.0}, delta=0.0, D=10, n=20, teacher_seed=0, data_seed=1, lam=1 / 3)
    args = argv(job)
    assert args[args.index("--nu") + 1] == "inf" and float(args[args.index("--lam") + 1]) == 1 / 3
    assert "--data" not in args and "--out" not in args  # None left out; out is the rule's
    batch = TrainBatchJob(members=[job])
    assert json.loads(argv(batch)[1])[0]["L"] == "2"


def test_train_batches_partition_the_runs_by_setting_and_size():
    p = _plan("config/smoke.yaml")
    runs = [m for b in p.train_batches.values() for m in b.members]
    assert sorted(m.out for m in runs) == sorted(p.erm)  # every run in exactly one batch
    for b in p.train_batches.values():
        assert len({(m.model, m.nu, m.L[2], m.delta, m.D, m.n) for m in b.members}) == 1
        assert {m.sigma for m in b.members} == {"softmax", "linear"}  # every σ on the same sets
    # smoke: one batch per α, each holding the σ, seeds, λ and starts of its α
    assert len(p.train_batches) == 2 and len(runs) == 16


_SHELL_FLAG = re.compile(r"--([a-z][a-z-]*)")
#: the options a rule may write itself: where inputs and outputs are, and how (not what) it runs
#: (aggregate --workers {threads}: the same store for any count; tables --validation: the rows it reads)
RULE_FLAGS = {"out", "store", "plan", "experiments", "no-theory", "workers", "validation", "members-file"}


@pytest.mark.parametrize("smk", sorted((REPO / "workflow" / "rules").glob("*.smk")), ids=lambda p: p.name)
def test_no_rule_writes_a_parameter_by_hand(smk):
    """A rule's parameters reach its command only through the planned record (``args_of`` /
    ``command_line``): no '--nu …' typed into a rule, no hand-listed keys."""
    src = smk.read_text()
    commands = [line for line in src.splitlines() if "SLRPIPE}" in line or "slrpipe " in line]
    flags = {f for line in commands for f in _SHELL_FLAG.findall(line)}
    assert flags <= RULE_FLAGS, f"{smk.name} writes {sorted(flags - RULE_FLAGS)} by hand"
    for m in re.finditer(r"^\s+args=(.*)$", src, re.M):
        assert m.group(1).startswith(("args_of(", "command_line(")), m.group(0)


def test_the_rule_check_can_fail(tmp_path):
    bad = tmp_path / "bad.smk"
    bad.write_text(
        'rule x:\n    params:\n        args=lambda wc: f"--nu {wc.nu}",\n    shell: "slrpipe population {params.args}"\n'
    )
    with pytest.raises(AssertionError, match="nu"):
        test_no_rule_writes_a_parameter_by_hand(bad)


def test_a_command_imports_its_own_module_only(capsys):
    # `slrpipe <step>` builds the parser of its step alone (all twelve command modules: ~0.6 s more
    # per process); the full parser serves the rest, so a misspelt step still lists the choices
    import ast
    import subprocess
    import sys

    from slrpipe.cli import COMMANDS, main

    probe = "import sys; from slrpipe.cli import main; code = main(['validate', '--help']);print(sorted(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "usage: slrpipe validate" in out
    loaded = set(ast.literal_eval(out.strip().splitlines()[-1]))
    assert {m for m in COMMANDS.values() if m in loaded} == {"slrpipe.commands.validate"}
    assert main(["--help"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in COMMANDS)
    assert main(["figur"]) == 2
    assert "invalid choice: 'figur'" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # the one-step parser knows no other step
        build_parser("figure").parse_args(["validate"])


#: the options of each record command that are not fields of its record: where the result goes,
#: and how (not what) it is computed
NOT_RECORD = {
    "generate": {"--out", "--chunk-size"},
    "train": {"--out", "--chunk-size", "--alpha", "--batch-size", "--sgd-seed", "--log-every", "--no-theory"},
    "train-batch": {"--batch-size", "--sgd-seed", "--log-every", "--no-theory"},
    "population": {"--out", "--qmc-seed"},
    "population-batch": {"--qmc-seed"},
    "length": {"--out"},
    "replica": {"--out"},
    "rsb1": {"--out"},
    "rsb1-error": {"--out"},
}


def _options(command) -> set[str]:
    sub = next(a for a in build_parser(command)._subparsers._actions if a.choices)
    return {s for a in sub.choices[command]._actions for s in a.option_strings} - {"-h", "--help"}


def _record_options(cls) -> set[str]:
    out = set()
    for f in dataclasses.fields(cls):
        flag = "--" + f.name.replace("_", "-")
        if f.metadata.get("json"):
            out |= {flag, flag + "-file"}
        elif f.name != "out":
            out.add("--no-" + flag[2:] if f.default is True else flag)
    return out


@pytest.mark.parametrize("command", sorted(RECORDS))
def test_a_commands_options_are_its_records_fields(command):
    """The options of a command are generated from its record (job_args.add_arguments): one per field,
    with the field's default (required where it has none), beside the listed non-record options."""
    assert set(NOT_RECORD) == set(RECORDS)
    assert _options(command) == _record_options(RECORDS[command]) | NOT_RECORD[command]
    cls = RECORDS[command]
    sub = next(a for a in build_parser(command)._subparsers._actions if a.choices).choices[command]
    by_dest = {a.dest: a for a in sub._actions}
    optional = {f.name for f in dataclasses.fields(DataJob)} if command == "train" else set()
    for f in dataclasses.fields(cls):
        if f.name == "out" or f.metadata.get("json"):
            continue
        a = by_dest[f.name]
        if f.name in optional:
            assert a.default is None and not a.required
        elif f.default is dataclasses.MISSING:
            assert a.required, f.name
        else:
            assert a.default == f.default and not a.required, f.name


_SMOKE_RECORDS = {
    "generate": "data",
    "train": "erm",
    "train-batch": "train_batches",
    "population": "population",
    "population-batch": "population_batches",
    "replica": "replica",
    "rsb1": "rsb1",
    "rsb1-error": "rsb1_error",
}


@pytest.mark.parametrize("command", sorted(RECORDS))
def test_a_planned_record_of_every_command_round_trips(command):
    """``from_namespace(cls, parse(argv(record))) == record`` for the planned records of each class
    (config/smoke.yaml; length: config/config.yaml, smoke has no length experiment). A train record
    is taken without its stored set (``data``), whose fields the command would read from the store."""
    from slrpipe.commands.train import job_of
    from slrpipe.job_args import members_from_json

    p = _plan("config/config.yaml" if command == "length" else "config/smoke.yaml")
    table = p.length if command == "length" else getattr(p, _SMOKE_RECORDS[command])
    records = [dataclasses.replace(r, data=None) if command == "train" else r for r in table.values()]
    assert records and all(type(r) is RECORDS[command] for r in records)
    for record in records:
        extra = ["--out", getattr(record, "out", None) or "x.nc"] if "--out" in NOT_RECORD[command] else []
        args = _parser().parse_args([command, *argv(record), *extra])
        if command == "train":
            got = job_of(args)
        elif command.endswith("-batch"):  # the members travel as JSON, each with its out
            got = type(record)(members=members_from_json(type(record.members[0]), args.members))
        else:
            got = from_namespace(RECORDS[command], args)
        assert got == record


def test_a_flag_true_by_default_is_written_as_its_negation():
    job = next(r for r in _plan("config/smoke.yaml").replica.values() if not r.bayes_optimal)
    assert job.qmc and "--qmc" not in argv(job) and "--no-qmc" not in argv(job)  # the default: not written
    iid = dataclasses.replace(job, qmc=False, one_way=True)
    assert argv(iid)[-2:] == ["--no-qmc", "--one-way"]
    assert from_namespace(ReplicaJob, _parse("replica", iid)) == iid


def test_a_none_where_the_default_is_not_cannot_be_written():
    """argv leaves None out, so a field None whose default is a value would come back as that
    value: refused instead of silently changed."""
    job = next(iter(_plan("config/smoke.yaml").rsb1.values()))
    with pytest.raises(ValueError, match="tol"):
        argv(_with_none(job, "tol"))


def _with_none(record, name):
    """``record`` with field ``name`` None, past its __post_init__ (which would convert it)."""
    out = copy.copy(record)
    object.__setattr__(out, name, None)
    return out


def test_a_config_left_to_its_defaults_plans_the_records_defaults():
    """The config's defaults and the records' (so the command lines') are one: a config that sets
    nothing optional plans jobs whose shared parameters are the record defaults, and the library
    options of the same parameters default to them too."""
    from slrpipe.commands.train import EXECUTION
    from slrpipe.jobs import PopulationJob, Rsb1ErrorJob
    from slrpipe.theory.replica.bayes_optimal import BayesOptions
    from slrpipe.theory.replica.fields import Draw
    from slrpipe.theory.replica.rsb1 import Rsb1Draw, Rsb1Options, ScanOptions, rsb1_ground_state
    from slrpipe.train.options import ERMOptions, SolverOptions

    law = {"model": "spiked", "L": 2, "nu": 1.0}
    cfg = {
        "erm": {"e": {**law, "sigmas": ["softmax"], "alphas": [1.0], "lams": [0.1], "seeds": [0]}},
        "replica": {"r": {**law, "sigmas": ["softmax"], "alphas": [1.0], "lams": [0.1], "ansatz": ["rs", "rsb1"]}},
        "population": {"p": {**law, "nu": [1.0], "sigmas": ["softmax"]}},
    }
    p = plan(validate(cfg))
    shared = {
        TrainJob: ("delta", "init", "optimizer", "sampler", "max_iter", "record_every", "n_test", "dtype"),
        DataJob: ("delta", "sampler"),
        PopulationJob: ("delta",),
        ReplicaJob: ("delta", "n_samples", "seed"),
        Rsb1Job: (
            "delta",
            "n_outer",
            "n_inner",
            "seed",
            "inner_seed",
            "s_extend",
            "s_max_rows",
            "frac",
            "tol",
            "max_iter",
        ),
        Rsb1ErrorJob: ("batches", "tol", "max_iter"),
    }
    tables = (p.erm, p.data, p.population, p.replica, p.rsb1, p.rsb1_error)
    for (cls, names), table in zip(shared.items(), tables):
        record = next(r for r in table.values() if not getattr(r, "bayes_optimal", False))
        assert {n: getattr(record, n) for n in names} == {n: defaults(cls)[n] for n in names}, cls.__name__
    solver, erm = SolverOptions(), ERMOptions("softmax", 0.1)
    assert (solver.optimizer, solver.max_iter, solver.record_every, erm.init, erm.n_test, erm.dtype) == tuple(
        defaults(TrainJob)[n] for n in ("optimizer", "max_iter", "record_every", "init", "n_test", "dtype")
    )
    assert (solver.sgd_seed, solver.log_every) == (EXECUTION["sgd_seed"], EXECUTION["log_every"])
    assert (Rsb1Options().tol, Rsb1Options().max_iter) == (defaults(Rsb1Job)["tol"], defaults(Rsb1Job)["max_iter"])
    assert (ScanOptions().extend, ScanOptions().max_rows) == (
        defaults(Rsb1Job)["s_extend"],
        defaults(Rsb1Job)["s_max_rows"],
    )
    assert (Draw().n_samples, Draw().seed) == (defaults(ReplicaJob)["n_samples"], defaults(ReplicaJob)["seed"])
    assert tuple(Rsb1Draw())[:4] == tuple(defaults(Rsb1Job)[n] for n in ("n_outer", "n_inner", "seed", "inner_seed"))
    ground = inspect.signature(rsb1_ground_state).parameters
    rsb1_job = next(iter(p.rsb1.values()))
    assert (ground["s_grid"].default, ground["frac"].default) == (rsb1_job.s_grid, defaults(Rsb1Job)["frac"])
    cfg["replica"]["r"]["bayes_optimal"] = True
    p = plan(validate(cfg))
    assert next(r for r in p.replica.values() if r.bayes_optimal).n_samples == BayesOptions().n_samples


def test_a_field_the_generator_cannot_read_is_refused():
    """A record field with no parser for its type, or a flag with no default, stops the parser's
    construction instead of becoming an option that reads text as something else."""
    import argparse

    from slrpipe.job_args import add_arguments

    @dataclasses.dataclass(frozen=True)
    class Grid:
        points: tuple

    @dataclasses.dataclass(frozen=True)
    class Flag:
        on: bool

    for cls, field in ((Grid, "points"), (Flag, "on")):
        with pytest.raises(TypeError, match=f"{cls.__name__}.{field}"):
            add_arguments(argparse.ArgumentParser(), cls)
