"""Config validation: bad values fail at load time with one line naming the field and range."""

from __future__ import annotations

import copy
import math

import pytest
import yaml
from conftest import REPO, snakemake

from slrpipe.config import ConfigError, validate
from slrpipe.job_args import argv
from slrpipe.workflow import fmt, plan, size

SMOKE = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())


def _bad(mutator):
    cfg = copy.deepcopy(SMOKE)
    mutator(cfg)
    return cfg


BAD = {
    "negative nu": (
        lambda c: c["population"]["spiked_L2"].update(nu=[-1.0]),
        "population.spiked_L2.nu[0]",
        "minimum of 0",
    ),
    "alpha zero": (
        lambda c: c["erm"]["spiked_L2"].update(alphas=[0.0, 2.0]),
        "erm.spiked_L2.alphas[0]",
        "minimum of 0",
    ),
    "unknown sampler": (
        lambda c: c["erm"]["spiked_L2"].update(sampler="torch"),
        "erm.spiked_L2.sampler",
        "jax: drawn on the device",
    ),
    "unknown sigma": (lambda c: c["erm"]["spiked_L2"].update(sigmas=["relu"]), "erm.spiked_L2.sigmas[0]", "softmax"),
    "L below 1": (lambda c: c["erm"]["spiked_L2"].update(L=0), "erm.spiked_L2.L", "minimum of 1"),
    "missing key": (lambda c: c["erm"]["spiked_L2"].pop("seeds"), "erm.spiked_L2", "'seeds' is a required property"),
    "spiked nu inf": (lambda c: c["erm"]["spiked_L2"].update(nu=math.inf), "erm.spiked_L2.nu", "max only"),
    "bayes-optimal max finite nu": (
        lambda c: c["replica"]["spiked_L2"].update(model="max", nu=2.0),
        "replica.spiked_L2.bayes_optimal",
        "nu = 0 or inf",
    ),
    "bayes-optimal samples": (
        lambda c: c["replica"]["spiked_L2"].update(bayes_optimal_samples=10),
        "replica.spiked_L2.bayes_optimal_samples",
        "minimum of 1000",
    ),
    "replica mc seeds": (
        lambda c: c["replica"]["spiked_L2"].update(mc_seeds=0),
        "replica.spiked_L2.mc_seeds",
        "minimum of 1",
    ),
    "unknown figure experiment": (
        lambda c: c["figures"].update(fig2=["nope"]),
        "figures.fig2",
        "not a population experiment",
    ),
    "unknown figure": (lambda c: c["figures"].update(fig9=[]), "figures.fig9", "allowed: ['complexity', 'cor43'"),
    "nu nan": (lambda c: c["erm"]["spiked_L2"].update(nu=math.nan), "erm.spiked_L2.nu", "allowed: a finite number"),
    "nu nan in a grid": (
        lambda c: c["population"]["spiked_L2"].update(nu=[0.5, math.nan]),
        "population.spiked_L2.nu[1]",
        "allowed: a finite number",
    ),
    "lam inf": (
        lambda c: c["erm"]["spiked_L2"].update(lams=[math.inf]),
        "erm.spiked_L2.lams[0]",
        "allowed: a finite number",
    ),
    "alpha inf": (
        lambda c: c["replica"]["spiked_L2"].update(alphas=[1.0, math.inf]),
        "replica.spiked_L2.alphas[1]",
        "allowed: a finite number",
    ),
    "replica variable L": (
        lambda c: c["replica"]["spiked_L2"].update(L={"uniform": [1, 2]}),
        "replica.spiked_L2.L",
        "does not handle variable L",
    ),
    "ladder alpha*D not an integer": (
        lambda c: c["erm"]["spiked_L2"].update(D=[25, 40], alphas=[2.0, 8.1]),
        "erm.spiked_L2.alphas",
        "α·D must be an integer",
    ),
    "ladder D below 2": (lambda c: c["erm"]["spiked_L2"].update(D=[1, 40]), "erm.spiked_L2.D", "ladder"),
    "ladder of one D": (lambda c: c["erm"]["spiked_L2"].update(D=[40]), "erm.spiked_L2.D", "ladder"),
    "ladder repeated D": (lambda c: c["erm"]["spiked_L2"].update(D=[40, 40]), "erm.spiked_L2.D", "ladder"),
    "ladder with sqrt_nD": (
        lambda c: c["erm"]["spiked_L2"].update(D=[20, 40], sqrt_nD=100.0),
        "erm.spiked_L2.sqrt_nD",
        "either D or sqrt_nD",
    ),
    "replica erf": (
        lambda c: c["replica"]["spiked_L2"].update(sigmas=["softmax", "erf"]),
        "replica.spiked_L2.sigmas[1]",
        "'softmax', 'linear', 'softplus_norm'",
    ),
    "rsb1 without rs": (
        lambda c: c["replica"]["spiked_L2"].update(ansatz=["rsb1"]),
        "replica.spiked_L2.ansatz",
        "allowed: [rs] or [rs, rsb1]",
    ),
    "rsb1 alpha off the RS grid": (
        lambda c: c["replica"]["spiked_L2"]["rsb1"].update(alphas=[3.0]),
        "replica.spiked_L2.rsb1.alphas",
        "allowed: values of alphas [2.0, 8.0]",
    ),
    "rsb1 inner samples": (
        lambda c: c["replica"]["spiked_L2"]["rsb1"].update(n_inner=10),
        "replica.spiked_L2.rsb1.n_inner",
        "multiple of 4",
    ),
    "rsb1 s grid descending": (
        lambda c: c["replica"]["spiked_L2"]["rsb1"].update(s_grid=[4.0, 1.0]),
        "replica.spiked_L2.rsb1.s_grid",
        "strictly ascending",
    ),
    "rsb1 s grid extension": (
        lambda c: c["replica"]["spiked_L2"]["rsb1"].update(s_extend=1.0),
        "replica.spiked_L2.rsb1.s_extend",
        "less than or equal to the minimum of 1",
    ),
    "rsb1 fewer rows than the grid": (
        lambda c: c["replica"]["spiked_L2"]["rsb1"].update(s_max_rows=1),
        "replica.spiked_L2.rsb1.s_max_rows",
        "fewer than the 2 values of s_grid",
    ),
    "rsb1 batches": (
        lambda c: c["replica"]["spiked_L2"]["rsb1"].update(batches=3),
        "replica.spiked_L2.rsb1.batches",
        "a divisor of it, at least 2",
    ),
    "rsb1 one batch": (
        lambda c: c["replica"]["spiked_L2"]["rsb1"].update(batches=1),
        "replica.spiked_L2.rsb1.batches",
        "minimum",
    ),
    "unknown ansatz": (
        lambda c: c["replica"]["spiked_L2"].update(ansatz=["rs", "frsb"]),
        "replica.spiked_L2.ansatz[1]",
        "'rs', 'rsb1'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_config_one_line(case):
    mutate, field, allowed = BAD[case]
    with pytest.raises(ConfigError) as info:
        validate(_bad(mutate))
    msg = str(info.value)
    assert "\n" not in msg and field in msg and allowed in msg, msg


def test_schema_enums_are_the_vocabulary():
    """The schema's name lists are the vocabulary's (one source: slrpipe.vocabulary), the σ lists
    filled from the σ registry at load (the file holds none)."""
    from slrpipe import vocabulary as voc
    from slrpipe.config import SCHEMA, load_schema

    raw = yaml.safe_load(SCHEMA.read_text())["$defs"]
    assert all("enum" not in raw[k] for k in ("sigma", "sigma_or_bayes", "replica_sigma"))
    defs = load_schema()["$defs"]
    assert tuple(defs["model"]["enum"]) == voc.MODELS
    assert tuple(defs["sigma"]["enum"]) == voc.SIGMAS
    assert tuple(defs["sigma_or_bayes"]["enum"]) == (*voc.SIGMAS, voc.BAYES)
    assert tuple(defs["replica_sigma"]["enum"]) == voc.REPLICA_SIGMAS
    erm = defs["erm"]["properties"]
    assert tuple(erm["inits"]["items"]["enum"]) == voc.INITS
    assert tuple(erm["optimizers"]["items"]["enum"]) == voc.OPTIMIZERS
    assert tuple(erm["dtype"]["enum"]) == voc.DTYPES
    assert tuple(erm["sampler"]["enum"]) == voc.SAMPLERS
    assert tuple(defs["replica"]["properties"]["ansatz"]["items"]["enum"]) == voc.ANSATZE


@pytest.mark.parametrize("section", ["population", "erm", "replica"])
def test_an_unregistered_sigma_fails_at_load_naming_the_registered(section):
    """A σ the registry does not hold fails validation in one line that lists the registered σ
    (replica: those the solver supports)."""
    from slrpipe import vocabulary as voc

    cfg = copy.deepcopy(SMOKE)
    name = next(iter(cfg[section]))
    cfg[section][name]["sigmas"] = ["relu_norm_unregistered"]
    with pytest.raises(ConfigError) as info:
        validate(cfg)
    msg = str(info.value)
    allowed = voc.REPLICA_SIGMAS if section == "replica" else voc.SIGMAS
    assert "\n" not in msg and f"{section}.{name}.sigmas[0]" in msg and "relu_norm_unregistered" in msg, msg
    assert all(repr(s) in msg for s in allowed), msg


def test_every_section_optional_and_defaults_from_the_schema():
    cfg = validate({"population": {"p": {"model": "spiked", "L": 2, "nu": [1.0], "sigmas": ["softmax"]}}})
    assert cfg["erm"] == {} and cfg["replica"] == {} and cfg["figures"] == {}
    assert cfg["population"]["p"]["delta"] == 0.0 and cfg["validation"]["max_abs_z"] == 4.0
    assert validate({})["population"] == {}
    p = plan(cfg)
    assert list(p.population) == ["results/population/p/softmax.nc"] and not p.erm and not p.replica


def test_plan_holds_values_not_text():
    """One representation per parameter: job records hold numbers and length laws; text only in
    paths and in the command lines generated from the records."""
    cfg = validate(copy.deepcopy(SMOKE))
    job = next(iter(plan(cfg).erm.values()))
    assert isinstance(job.nu, float) and isinstance(job.lam, float) and isinstance(job.L, dict)
    assert job.L == {2: 1.0}


def test_defaults_filled_and_plan():
    cfg = validate(copy.deepcopy(SMOKE))
    erm = cfg["erm"]["spiked_L2"]
    assert (
        erm["delta"] == 0.0
        and erm["inits"] == ["informed"]
        and erm["optimizers"] == ["lbfgs"]
        and erm["dtype"] == "float32"
    )
    p = plan(cfg)
    # 2 alphas x 2 seeds datasets; x 2 sigmas x 1 lam ERM runs
    assert len(p.data) == 4 and len(p.members[("erm", "spiked_L2")]) == 8
    # opt_L2 (seed 0, informed + 1 random) shares its informed runs with spiked_L2; opt_gd_L2 adds 4
    assert len(p.members[("erm", "opt_L2")]) == 8 and len(p.erm) == 8 + 4 + 4
    assert all("/alpha2/" in k or "/alpha8/" in k for k in p.erm)
    # the automatic population point at the ERM setting carries the Bayes risk
    assert any(k.endswith("population/at/spiked/L2/nu2/delta0/bayes.nc") for k in p.population)
    # experiments of the same setting share it (the same jobs and files, whatever their order)
    assert len(p.population) == 6
    assert p.members[("population", "at_opt_L2")] == p.members[("population", "at_spiked_L2")]


def test_device_sampler_is_part_of_the_data_sets_key():
    """sampler: jax draws other data sets: paths keyed by it beside the numpy ones, its training
    sets shared by its σ and λ only, and the command lines carry it."""
    from slrpipe.job_args import argv

    cfg = copy.deepcopy(SMOKE)
    cfg["erm"]["on_device"] = {**cfg["erm"]["spiked_L2"], "sampler": "jax"}
    p = plan(validate(cfg))
    mine = p.members[("erm", "on_device")]
    assert len(mine) == len(p.members[("erm", "spiked_L2")]) and not set(mine) & set(p.members[("erm", "spiked_L2")])
    assert all("_seed0_jax_informed" in path or "_seed1_jax_informed" in path for path in mine)
    assert all(p.erm[path].sampler == "jax" and p.erm[path].data.endswith("_jax.zarr") for path in mine)
    assert {d.sampler for path, d in p.data.items() if path.endswith("_jax.zarr")} == {"jax"}
    assert len(p.data) == 8
    job = p.erm[mine[0]]
    assert argv(job)[argv(job).index("--sampler") + 1] == "jax"
    # the numpy experiment's paths are those of a config without the option
    assert set(p.members[("erm", "spiked_L2")]) == set(
        plan(validate(copy.deepcopy(SMOKE))).members[("erm", "spiked_L2")]
    )


def test_size_rule_and_formatting():
    assert size({"D": None, "sqrt_nD": 1e4}, 4.0) == (5000, 20000)  # √(nD) = 10⁴ at α = 4
    assert size({"D": 50, "sqrt_nD": 1e4}, 2.0) == (50, 100)
    assert fmt(0.1) == "0.1" and fmt(math.inf) == "inf" and fmt(3) == "3" and fmt(1e-7) == "1e-07"


def test_bad_config_cli_touches_nothing(workflow_dir):
    """Through the snakemake CLI: exit non-zero, one error line, results/ untouched."""
    results = workflow_dir / "results"
    results.mkdir()
    keep = results / "precious.nc"
    keep.write_bytes(b"computed earlier")
    bad = _bad(lambda c: c["erm"]["spiked_L2"].update(alphas=[-2.0]))
    (workflow_dir / "config" / "bad.yaml").write_text(yaml.safe_dump(bad))
    proc = snakemake(
        workflow_dir, "--cores", "1", "--configfile", "config/bad.yaml", check=False, timeout=120, share_cache=False
    )
    assert proc.returncode != 0
    errors = [l for l in proc.stderr.splitlines() if "config error" in l]
    assert errors == ["config error: erm.spiked_L2.alphas[0]: -2.0 is less than or equal to the minimum of 0"], (
        proc.stderr
    )
    assert sorted(p.name for p in results.iterdir()) == ["precious.nc"] and keep.read_bytes() == b"computed earlier"


def test_schema_step_sizes_are_the_optimizer_defaults():
    """The config's default step sizes are the ones ``minimize`` uses when given none."""
    from slrpipe.config import load_schema
    from slrpipe.train.options import DEFAULT_LR

    lr = load_schema()["$defs"]["erm"]["properties"]["lr"]["properties"]
    assert {k: v["default"] for k, v in lr.items()} == DEFAULT_LR
    names = [n for n, exp in SMOKE["erm"].items() if "lr" not in exp]
    cfg = validate(copy.deepcopy(SMOKE))
    assert names and all(cfg["erm"][n]["lr"] == DEFAULT_LR for n in names)


def _shared(defaults, prefix=()):
    """(section, property path) of every entry of slrpipe.vocabulary.DEFAULTS."""
    for name, value in defaults.items():
        if isinstance(value, dict):
            yield from _shared(value, (*prefix, name))
        else:
            yield (*prefix, name)


def test_a_shared_default_is_declared_once():
    """A default that DEFAULTS holds is not in the schema file too (it is set there at load time),
    and every one of them names a property the schema has."""
    from slrpipe.config import SCHEMA
    from slrpipe.config import load_schema as schema
    from slrpipe.vocabulary import DEFAULTS, UNCONFIGURED

    raw, full = yaml.safe_load(SCHEMA.read_text())["$defs"], schema()["$defs"]
    assert set(UNCONFIGURED) <= set(DEFAULTS) and not set(UNCONFIGURED) & set(raw)
    for section, *path in _shared({k: v for k, v in DEFAULTS.items() if k not in UNCONFIGURED}):
        sections = [s for s in raw if path[0] in raw[s].get("properties", {})] if section == "law" else [section]
        assert sections, path
        for sec in sections:
            node_raw, node_full = raw[sec], full[sec]
            for name in path:
                node_raw, node_full = node_raw["properties"][name], node_full["properties"][name]
            assert "default" not in node_raw, f"{sec}.{'.'.join(path)}: default in the schema file and in DEFAULTS"
            value = DEFAULTS[section]
            for name in path:
                value = value[name]
            assert node_full["default"] == value
    assert "default" not in raw["delta"]


def test_a_default_for_an_unknown_property_is_refused(monkeypatch):
    from slrpipe import config

    monkeypatch.setitem(config.DEFAULTS, "rsb1", {**config.DEFAULTS["rsb1"], "n_outr": 64})
    with pytest.raises(KeyError, match="n_outr"):
        config.load_schema()


def test_plan_expands_inits_restarts_optimizers():
    """Each (init, restart, optimizer) is one job keyed in its path; informed is one start; adding a
    restart adds exactly the new random starts and keeps every other job (path and parameters)."""
    from slrpipe.vocabulary import init_seed

    cfg = copy.deepcopy(SMOKE)
    cfg["erm"] = {"spiked_L2": cfg["erm"]["spiked_L2"]}
    cfg["figures"].pop("optimization")
    cfg["erm"]["spiked_L2"].update(
        inits=["informed", "random"], restarts=2, optimizers=["lbfgs", "gd"], lr={"gd": 0.25}, steps=300
    )
    p2 = plan(validate(copy.deepcopy(cfg)))
    # 2 α × 2 seeds × 2 σ × (1 informed + 2 random) × 2 optimisers
    assert len(p2.erm) == 2 * 2 * 2 * 3 * 2
    gd = [j for k, j in p2.erm.items() if k.endswith("_random-r1_gd-lr0.25.nc")]
    assert len(gd) == 8 and all(j.lr == 0.25 and j.max_iter == 300 and j.restart == 1 for j in gd)
    assert {j.init_seed for j in gd} == {init_seed(0, 1), init_seed(1, 1)}
    lb = [j for k, j in p2.erm.items() if k.endswith("_informed-r0_lbfgs.nc")]
    assert len(lb) == 8 and all(j.lr is None and j.max_iter == 200 for j in lb)
    cfg["erm"]["spiked_L2"]["restarts"] = 3
    p3 = plan(validate(cfg))
    new = set(p3.erm) - set(p2.erm)
    assert set(p2.erm) <= set(p3.erm) and all(p3.erm[k] == p2.erm[k] for k in p2.erm)
    assert len(new) == 16 and all("_random-r2_" in k for k in new)
    # lanes: the lbfgs runs only, on their command line; the paths stay the runs' own
    assert not any(j.lanes for j in p2.erm.values())
    cfg["erm"]["spiked_L2"]["lanes"] = True
    pl = plan(validate(cfg))
    assert set(pl.erm) == set(p3.erm)
    assert all(j.lanes == (j.optimizer == "lbfgs") for j in pl.erm.values())
    assert all(("--lanes" in argv(j)) == j.lanes for j in pl.erm.values())


def test_init_seeds_distinct_and_stable():
    from slrpipe.vocabulary import init_seed

    got = {init_seed(s, r) for s in range(50) for r in range(50)}
    assert len(got) == 2500 and all(0 <= x < 2**31 for x in got)
    assert init_seed(3, 7) == init_seed(3, 7)
    with pytest.raises(ValueError):
        init_seed(-1, 0)


def test_plan_one_rsb1_job_per_point_started_from_its_rs_sweep():
    """ansatz [rs, rsb1]: one 1RSB job per (σ, λ, α of rsb1.alphas), its RS sweep as the start, its
    file a member of the replica experiment, with a batch-means error job beside it; rsb1.alphas
    null means the whole RS grid."""
    cfg = validate(copy.deepcopy(SMOKE))
    p = plan(cfg)
    assert sorted(p.rsb1) == [
        f"results/replica/spiked/L2/nu2/delta0/{s}/rsb1/lam0.1_alpha8_n512x4_seed0_1.nc" for s in ("linear", "softmax")
    ]
    for path, job in p.rsb1.items():
        assert job.rs in p.replica and p.replica[job.rs].sigma == job.sigma and job.alpha == 8.0
        assert job.s_grid == (1.0, 4.0) and job.max_iter == 5 and path in p.members[("replica", "spiked_L2")]
        assert job.s_max_rows == 2 and job.s_extend == 2.0  # smoke: the grid only; the schema's default factor
        assert job.n0_check is False  # off by default: it about doubles the cost
    # beside each point its batch-means error (K = 4 by default), a member as well
    assert {job.rsb1 for job in p.rsb1_error.values()} == set(p.rsb1)
    for path, job in p.rsb1_error.items():
        assert "/rsb1_error/" in path and path.endswith("_k4.nc") and path in p.members[("replica", "spiked_L2")]
        assert job.batches == 4 and job.tol == p.rsb1[job.rsb1].tol and job.max_iter == 5
    every = copy.deepcopy(SMOKE)
    every["replica"]["spiked_L2"]["rsb1"]["alphas"] = None
    assert sorted({j.alpha for j in plan(validate(every)).rsb1.values()}) == [2.0, 8.0]
    del every["replica"]["spiked_L2"]["ansatz"]  # the default: RS only
    assert not plan(validate(every)).rsb1
