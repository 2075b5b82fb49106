"""Config → job tables for the Snakemake workflow (no science here).

``load_config`` validates a config dict against ``workflow/schemas/config.schema.yaml`` (filling
defaults) plus the cross-field rules JSON Schema cannot express, and raises ``ConfigError`` with one
line naming the field and the allowed range. ``plan`` turns the validated config into the jobs each
rule runs, keyed by output path; paths encode the parameters that define a job (stable float
formatting), so adding one α creates only that α's jobs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import yaml

from slrpipe.vocabulary import seeds

SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """A config value out of its allowed range; the message is one line naming the field."""


def fmt(x) -> str:
    """Stable, filename-safe number formatting: 6 significant digits, 'inf' for ∞."""
    if isinstance(x, bool):
        raise TypeError("bool is not a number here")
    if isinstance(x, int):
        return str(x)
    x = float(x)
    if math.isinf(x):
        return "inf"
    return f"{x:.6g}"


def L_key(L) -> str:
    """'3' for a fixed length, 'u1-2-3' for L ~ Uniform{1,2,3}."""
    return str(L) if isinstance(L, int) else "u" + "-".join(str(v) for v in sorted(L["uniform"]))


def L_arg(L) -> str:
    """The CLI form understood by ``slrpipe.commands._common.parse_L``."""
    return str(L) if isinstance(L, int) else "uniform:" + ",".join(str(v) for v in sorted(L["uniform"]))


def _path_str(path) -> str:
    return ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in path).replace(".[", "[")


def _describe(err: jsonschema.ValidationError) -> str:
    where = _path_str(err.absolute_path) or "<top level>"
    desc = err.schema.get("description") if isinstance(err.schema, dict) else None
    if err.validator == "oneOf" and desc:
        return f"config error: {where}: {err.instance!r} is not valid; allowed: {desc}"
    msg = err.message
    if err.validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum") and desc:
        msg += f" ({desc})"
    return f"config error: {where}: {msg}"


def validate(config: dict, schema_path: Path = SCHEMA) -> dict:
    """Validate ``config`` in place (filling defaults) with a default-filling JSON-Schema validator.

    Raises:
        ConfigError: first violation, as one line ``config error: <field path>: <what is allowed>``.
    """
    schema = yaml.safe_load(Path(schema_path).read_text())
    base = jsonschema.Draft202012Validator

    def set_defaults(validator, properties, instance, sch):
        if isinstance(instance, dict):
            for prop, sub in properties.items():
                if isinstance(sub, dict) and "default" in sub:
                    instance.setdefault(prop, sub["default"])
        yield from base.VALIDATORS["properties"](validator, properties, instance, sch)

    Validator = jsonschema.validators.extend(base, {"properties": set_defaults})
    errors = sorted(Validator(schema).iter_errors(config), key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
    if errors:
        best = jsonschema.exceptions.best_match(errors)
        raise ConfigError(_describe(best))
    _cross_checks(config)
    return config


def _cross_checks(config: dict) -> None:
    for kind in ("population", "erm", "replica"):
        for name, exp in (config.get(kind) or {}).items():
            nus = exp["nu"] if isinstance(exp["nu"], list) else [exp["nu"]]
            if exp["model"] == "spiked" and any(math.isinf(v) for v in nus):
                raise ConfigError(f"config error: {kind}.{name}.nu: ν = inf is allowed for model max only; spiked needs finite ν ≥ 0")
            if not name.replace("_", "").replace("-", "").isalnum():
                raise ConfigError(f"config error: {kind}.{name}: experiment names may use letters, digits, '_' and '-' only")
    for fig, kind in (("fig2", "population"), ("cor43", "population"), ("erm_vs_population", "erm"), ("fig3", "replica")):
        for name in config["figures"].get(fig, []):
            if name not in (config.get(kind) or {}):
                raise ConfigError(f"config error: figures.{fig}: {name!r} is not a {kind} experiment; allowed: {sorted(config.get(kind) or {})}")
    for name, exp in (config.get("replica") or {}).items():
        if exp.get("erm") and exp["erm"] not in config["erm"]:
            raise ConfigError(f"config error: replica.{name}.erm: {exp['erm']!r} is not an erm experiment; allowed: {sorted(config['erm'])}")
        if exp["bayes_optimal"] and exp["model"] == "max" and not (exp["nu"] == 0 or math.isinf(exp["nu"])):
            raise ConfigError(f"config error: replica.{name}.bayes_optimal: for model max needs nu = 0 or inf (got {exp['nu']}); "
                              "set bayes_optimal: false")


def load_config(config: dict) -> dict:
    """``validate`` then return the config (Snakemake's ``config`` dict, modified in place)."""
    return validate(config)


# --------------------------------------------------------------------------------------------
# Job tables


def size(exp: dict, alpha: float) -> tuple[int, int]:
    """(D, n) of an ERM point: fixed D, or the paper's rule √(nD) = const (D = √(nD)/√α, n = αD)."""
    D = exp["D"] if exp.get("D") else max(2, round(exp["sqrt_nD"] / math.sqrt(alpha)))
    return D, max(1, round(alpha * D))


def setting_dir(exp: dict) -> str:
    """model/L/ν/Δ part of a path: the teacher setting shared by all σ, λ, α."""
    return f"{exp['model']}/L{L_key(exp['L'])}/nu{fmt(exp['nu'])}/delta{fmt(exp['delta'])}"


@dataclass
class Plan:
    population: dict = field(default_factory=dict)   # path -> job dict
    data: dict = field(default_factory=dict)
    erm: dict = field(default_factory=dict)
    replica: dict = field(default_factory=dict)
    # experiment -> list of (path, index dict) for aggregation
    members: dict = field(default_factory=dict)


def _add(table: dict, path: str, job: dict) -> None:
    if path in table and table[path] != job:
        raise ConfigError(f"config error: two experiments define the job {path} with different parameters: {table[path]} vs {job}")
    table[path] = job


def plan(config: dict, results: str = "results") -> Plan:
    """All jobs of a validated config. Population sweeps are one job per (experiment, σ) over the ν
    grid; ERM one job per (setting, σ, λ, α, seed); replica one job per (setting, σ, λ) over the α grid
    (warm-started along α) plus one Bayes-optimal job per setting."""
    p = Plan()
    pops = dict(config["population"])
    for name, exp in config["erm"].items():  # population optimum at each ERM setting, for its panel
        auto = f"at_{name}"
        if auto in pops:
            raise ConfigError(f"config error: population.{auto}: name is reserved for the erm experiment {name!r}")
        pops[auto] = {"model": exp["model"], "L": exp["L"], "delta": exp["delta"], "nu": [exp["nu"]],
                      "sigmas": ["bayes", *exp["sigmas"]]}
    for name, exp in pops.items():
        for sigma in exp["sigmas"]:
            path = f"{results}/population/{name}/{sigma}.nc"
            _add(p.population, path, {"sigma": sigma, "model": exp["model"], "L": L_arg(exp["L"]),
                                      "delta": exp["delta"], "nu": [fmt(v) for v in exp["nu"]]})
            p.members.setdefault(("population", name), []).append(path)
    for name, exp in config["erm"].items():
        for alpha in exp["alphas"]:
            D, n = size(exp, alpha)
            for seed in exp["seeds"]:
                dpath = f"{results}/data/{setting_dir(exp)}/D{D}_n{n}_seed{seed}.zarr"
                data = {"model": exp["model"], "nu": fmt(exp["nu"]), "L": L_arg(exp["L"]), "delta": exp["delta"],
                        "D": D, "n": n, "teacher_seed": seeds(seed)["teacher_seed"],
                        "data_seed": seeds(seed)["data_seed"], "store": exp["store_data"]}
                if exp["store_data"]:
                    _add(p.data, dpath, data)
                for sigma in exp["sigmas"]:
                    for lam in exp["lams"]:
                        path = (f"{results}/erm/{setting_dir(exp)}/{sigma}/lam{fmt(lam)}/alpha{fmt(alpha)}/"
                                f"D{D}_n{n}_seed{seed}_{exp['init']}_{exp['optimizer']}.nc")
                        job = dict(data, sigma=sigma, lam=lam, alpha=alpha, test_seed=seeds(seed)["test_seed"],
                                   init_seed=seed, init=exp["init"], optimizer=exp["optimizer"],
                                   max_iter=exp["max_iter"], tol=exp["tol"], n_test=exp["n_test"],
                                   dtype=exp["dtype"], data_path=dpath if exp["store_data"] else None)
                        _add(p.erm, path, job)
                        p.members.setdefault(("erm", name), []).append(path)
    for name, exp in (config.get("replica") or {}).items():
        base = {"model": exp["model"], "nu": fmt(exp["nu"]), "L": L_arg(exp["L"]), "delta": exp["delta"],
                "alphas": [fmt(a) for a in exp["alphas"]], "n_samples": exp["n_samples"], "seed": exp["seed"]}
        stem = f"{results}/replica/{setting_dir(exp)}"
        for sigma in exp["sigmas"]:
            for lam in exp["lams"]:
                mc = f"_mc{exp['mc_seeds']}" if exp["mc_seeds"] > 1 else ""
                path = f"{stem}/{sigma}/lam{fmt(lam)}_n{exp['n_samples']}_seed{exp['seed']}{mc}.nc"
                _add(p.replica, path, dict(base, sigma=sigma, lam=lam, mc_seeds=exp["mc_seeds"]))
                p.members.setdefault(("replica", name), []).append(path)
        if exp["bayes_optimal"]:
            path = f"{stem}/bayes_optimal_n{exp['bayes_optimal_samples']}_seed{exp['seed']}.nc"
            _add(p.replica, path, dict(base, sigma="bayes_optimal", lam=None, n_samples=exp["bayes_optimal_samples"]))
            p.members.setdefault(("replica", name), []).append(path)
    return p
