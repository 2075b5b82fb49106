"""Config load and validation for the Snakemake workflow (no science here).

``validate`` checks a config dict against the config schema (package data
``slrpipe/resources/config.schema.yaml``, linked from ``workflow/schemas/``) and fills its
defaults — the schema's own, and those of the parameters a command or a library option shares,
from ``slrpipe.vocabulary.DEFAULTS`` — plus the rules JSON Schema cannot express (NaN/inf,
cross-references), and raises ``ConfigError`` with one line naming the field and the allowed
range. The schema's σ name lists and shared defaults are not in the file: :func:`load_schema`
sets them from the σ registry (:mod:`slrpipe.sigmas`) and ``DEFAULTS``. The job tables of a validated config are :mod:`slrpipe.workflow`'s.
"""

from __future__ import annotations

import copy
import math
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

from slrpipe import sigmas
from slrpipe.figures import REGISTRY as FIGURES
from slrpipe.vocabulary import BAYES, DEFAULTS, RS, RSB1, UNCONFIGURED

#: the config schema, package data (workflow/schemas/config.schema.yaml links to it)
SCHEMA = resources.files("slrpipe") / "resources" / "config.schema.yaml"
KINDS = ("population", "erm", "replica", "length")


class ConfigError(ValueError):
    """A config value out of its allowed range; the message is one line naming the field."""


def _path_str(path) -> str:
    return ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in path).replace(".[", "[")


def _describe(err: jsonschema.ValidationError) -> str:
    where = _path_str(err.absolute_path) or "<top level>"
    desc = err.schema.get("description") if isinstance(err.schema, dict) else None
    if err.validator == "oneOf" and desc:
        return f"config error: {where}: {err.instance!r} is not valid; allowed: {desc}"
    msg = err.message
    if (
        err.validator
        in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "type", "enum", "minItems", "uniqueItems")
        and desc
    ):
        msg += f" ({desc})"
    return f"config error: {where}: {msg}"


def _non_finite(node, path=()):
    """(path, value) of the first NaN anywhere, or ∞ anywhere but a ν."""
    if isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        if isinstance(node, float) and (math.isnan(node) or (math.isinf(node) and "nu" not in path)):
            return path, node
        return None
    for k, v in items:
        hit = _non_finite(v, (*path, k))
        if hit:
            return hit
    return None


#: the name lists of the schema that the σ registry supplies (``x-registry`` of a ``$defs`` entry):
#: every registered σ, those the replica solver supports (``Sigma.replica``), and every σ then
#: the population oracle's name
REGISTRY_ENUMS = {
    "sigmas": lambda: sigmas.names(),
    "replica_sigmas": lambda: tuple(s for s in sigmas.names() if sigmas.get(s).replica),
    "sigmas_or_bayes": lambda: (*sigmas.names(), BAYES),
}


def load_schema(schema_path=SCHEMA) -> dict:
    """The config schema as a dict, each ``$defs`` entry marked ``x-registry: <list>`` given the
    ``enum`` of :data:`REGISTRY_ENUMS` at this call (a σ registered since import included), and the
    defaults of ``slrpipe.vocabulary.DEFAULTS`` set on its properties: ``DEFAULTS[section]`` on
    ``$defs[section]`` (nested dicts on nested properties), ``DEFAULTS["law"]`` on every section
    that has the parameter (the sections of ``UNCONFIGURED`` on none).

    Raises:
        ValueError: an ``x-registry`` name not in :data:`REGISTRY_ENUMS`.
        KeyError: a default for a property the schema does not have.
    """
    schema_path = Path(schema_path) if isinstance(schema_path, str) else schema_path
    schema = yaml.safe_load(schema_path.read_text())
    for name, node in schema["$defs"].items():
        source = node.pop("x-registry", None)
        if source is None:
            continue
        if source not in REGISTRY_ENUMS:
            raise ValueError(f"$defs.{name}.x-registry: {source!r}; allowed: {sorted(REGISTRY_ENUMS)}")
        node["enum"] = list(REGISTRY_ENUMS[source]())
    defs = schema["$defs"]
    for section, values in DEFAULTS.items():
        if section in UNCONFIGURED:
            continue
        if section == "law":
            for name, value in values.items():
                for sub in defs.values():
                    if name in sub.get("properties", {}):
                        _set_defaults(sub, {name: value})
        else:
            _set_defaults(defs[section], values)
    return schema


def _set_defaults(sub: dict, values: dict) -> None:
    for name, value in values.items():
        if name not in sub.get("properties", {}):
            raise KeyError(f"slrpipe.vocabulary.DEFAULTS: the config schema has no property {name!r} there")
        if isinstance(value, dict):
            _set_defaults(sub["properties"][name], value)
        else:
            sub["properties"][name]["default"] = value


def _filling_defaults(validator_class):
    """``validator_class`` that also sets each missing property's ``default`` (a copy) before
    validating it (jsonschema's FAQ recipe, as ``snakemake.utils.validate(set_default=True)``)."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        for prop, sub in properties.items():
            if "default" in sub:
                instance.setdefault(prop, copy.deepcopy(sub["default"]))
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


def validate(config: dict, schema_path=SCHEMA) -> dict:
    """Validate ``config`` in place against :func:`load_schema` and fill the schema's defaults;
    returns it.

    Raises:
        ConfigError: the first violation, as one line ``config error: <field path>: <what is allowed>``
            (a σ outside the registry: the registered names listed).
    """
    hit = _non_finite(config)
    if hit:  # JSON Schema's range keywords let NaN and ∞ through
        where, v = hit
        raise ConfigError(
            f"config error: {_path_str(where)}: {v} is not allowed; allowed: a finite number "
            "(∞ only for a ν of model max)"
        )
    schema = load_schema(schema_path)
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(config))
    if errors:
        raise ConfigError(_describe(jsonschema.exceptions.best_match(errors)))
    # a ladder sizes every α by its own D: a sqrt_nD beside it is a contradiction — except the
    # schema's default, which validation fills in (a config is validated again by each command)
    default = schema["$defs"]["erm"]["properties"]["sqrt_nD"]["default"]
    for name, exp in (config.get("erm") or {}).items():
        if isinstance(exp.get("D"), list) and exp.get("sqrt_nD", default) != default:
            raise ConfigError(
                f"config error: erm.{name}.sqrt_nD: not allowed with a D ladder (D = {exp['D']}); "
                "allowed: either D or sqrt_nD"
            )
    errors = list(_filling_defaults(jsonschema.Draft202012Validator)(schema).iter_errors(config))
    if errors:  # a default outside its own range: the schema's error, named as a config's
        raise ConfigError(_describe(jsonschema.exceptions.best_match(errors)))
    _cross_checks(config)
    return config


def _cross_checks(config: dict) -> None:
    for kind in KINDS:
        for name, exp in config[kind].items():
            nus = exp["nu"] if isinstance(exp["nu"], list) else [exp["nu"]]
            if exp["model"] == "spiked" and any(math.isinf(v) for v in nus):
                raise ConfigError(
                    f"config error: {kind}.{name}.nu: ν = inf is allowed for model max only; spiked needs finite ν ≥ 0"
                )
            if not name.replace("_", "").replace("-", "").isalnum():
                raise ConfigError(
                    f"config error: {kind}.{name}: experiment names may use letters, digits, '_' and '-' only"
                )
    for name, exp in config["erm"].items():
        for D in ladder(exp) or []:
            off = [a for a in exp["alphas"] if abs(a * D - round(a * D)) > 1e-9 * max(1.0, a * D)]
            if off:  # n = αD exactly, so the realised α of every D is the config's α (one alpha coordinate)
                raise ConfigError(
                    f"config error: erm.{name}.alphas: α·D must be an integer at every D of the ladder; "
                    f"α = {off} at D = {D} is not"
                )
    for fig, names in config["figures"].items():
        if fig not in FIGURES:
            raise ConfigError(f"config error: figures.{fig}: unknown figure; allowed: {sorted(FIGURES)}")
        kind = FIGURES[fig]
        for name in names:
            if name not in config[kind]:
                raise ConfigError(
                    f"config error: figures.{fig}: {name!r} is not a {kind} experiment; allowed: {sorted(config[kind])}"
                )
    for name, exp in config["length"].items():
        extra = sorted((set(exp["target_sigmas"]) | set(exp["var_sigmas"])) - set(exp["sigmas"]))
        if extra:
            raise ConfigError(
                f"config error: length.{name}.target_sigmas/var_sigmas: {extra} not in sigmas; allowed: {exp['sigmas']}"
            )
        if exp["target_sigmas"] and exp["target_risk"] is None:
            raise ConfigError(
                f"config error: length.{name}.target_risk: needed by target_sigmas; allowed: a number in (0, 1)"
            )
        if exp["var_sigmas"] and (exp["var_L_max"] is None or not exp["var_nu"]):
            raise ConfigError(f"config error: length.{name}.var_sigmas: needs var_L_max and a non-empty var_nu")
        if exp["model"] == "spiked" and any(math.isinf(v) for v in exp["var_nu"]):
            raise ConfigError(f"config error: length.{name}.var_nu: ν = inf is allowed for model max only")
    for name, exp in config["replica"].items():
        if exp["erm"] and exp["erm"] not in config["erm"]:
            raise ConfigError(
                f"config error: replica.{name}.erm: {exp['erm']!r} is not an erm experiment; allowed: {sorted(config['erm'])}"
            )
        if exp["bayes_optimal"] and exp["model"] == "max" and not (exp["nu"] == 0 or math.isinf(exp["nu"])):
            raise ConfigError(
                f"config error: replica.{name}.bayes_optimal: for model max needs nu = 0 or inf (got {exp['nu']}); "
                "set bayes_optimal: false"
            )
        if RSB1 in exp["ansatz"]:
            _check_rsb1(name, exp)


def _check_rsb1(name: str, exp: dict) -> None:
    """The 1RSB options of replica experiment ``name``: each job starts from the RS sweep at its
    (σ, λ, α), so rs is solved too and rsb1.alphas lie on the RS grid; the batches of the outer
    samples are whole antithetic pairs."""
    if RS not in exp["ansatz"]:
        raise ConfigError(
            f"config error: replica.{name}.ansatz: rsb1 starts from the RS sweep; allowed: [rs] or [rs, rsb1]"
        )
    opts = exp["rsb1"]
    off = [a for a in opts["alphas"] or () if not any(math.isclose(a, b, rel_tol=1e-12) for b in exp["alphas"])]
    if off:
        raise ConfigError(
            f"config error: replica.{name}.rsb1.alphas: {off} not on the RS grid; allowed: values of alphas {exp['alphas']}"
        )
    grid = opts["s_grid"]
    if any(b <= a for a, b in zip(grid, grid[1:])):
        raise ConfigError(f"config error: replica.{name}.rsb1.s_grid: {grid} must be strictly ascending")
    if opts["s_max_rows"] < len(grid):
        raise ConfigError(
            f"config error: replica.{name}.rsb1.s_max_rows: {opts['s_max_rows']} is fewer than the {len(grid)} values of s_grid"
        )
    if opts["n_outer"] % (2 * opts["batches"]):
        raise ConfigError(
            f"config error: replica.{name}.rsb1.batches: {opts['batches']} does not divide n_outer/2 = "
            f"{opts['n_outer'] / 2:g}; allowed: a divisor of it, at least 2"
        )


def ladder(exp: dict) -> list[int] | None:
    """The D ladder of an ERM experiment (``D`` given as a list; sorted ascending), else None."""
    return sorted(exp["D"]) if isinstance(exp.get("D"), list) else None
