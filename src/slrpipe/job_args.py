"""The command-line form of a job record: a typed options record ↔ its command line.

A record (:mod:`slrpipe.jobs`) is a frozen dataclass whose fields carry their command-line metadata
(:func:`arg`: help, and optionally ``parse`` and ``choices``). A Snakemake rule's command line is
:func:`argv` of its record (nothing hand-listed); the command's options are generated from the
record's class (:func:`add_arguments`) and rebuild it from its parsed arguments
(:func:`from_namespace`), so a parameter has one declaration — the record's field — from config to
result file. Field ``x_y`` is the option ``--x-y``; values are written by :func:`text` (floats by
``repr``: an exact round trip; length laws by :func:`slrpipe.lengths.format_L`; sequences
comma-joined; ``None`` left out) and read by the field's parser (``metadata["parse"]``, else its
annotated type); a boolean is a bare flag, written where it differs from its default (``--x-y``
for true, ``--no-x-y`` for a field true by default). A batch record's members travel as one JSON
argument (:func:`members_json`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import shlex
from dataclasses import MISSING, field

from slrpipe.lengths import format_L, parse_L

#: fields a record carries but no command line does (where the result goes is the rule's ``--out``)
NOT_ARGUMENTS = ("out",)


# ------------------------------------------------------------------------------ text and parsers
def text(value) -> str:
    """The command-line text of one field value (see the module docstring).

    Raises:
        TypeError: a value of a type no command reads (a nested dict other than a length law).
    """
    if isinstance(value, bool):
        raise TypeError("booleans are flags, not values")
    if isinstance(value, dict):
        return format_L(value)
    if isinstance(value, (list, tuple)):
        return ",".join(text(v) for v in value)
    if isinstance(value, float):
        return "inf" if math.isinf(value) else repr(value)
    if isinstance(value, (int, str)):
        return str(value)
    raise TypeError(f"no command-line form for {type(value).__name__}: {value!r}")


def parse_nu(text: str) -> float:
    """'inf' or a float ≥ 0 (ν, the signal strength); NaN and negative values are refused.

    Raises:
        ValueError: one line naming nu.
    """
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"nu: must be a number ≥ 0 or inf, got {text!r}") from None
    if not (v >= 0):
        raise ValueError(f"nu: must be ≥ 0 or inf, got {text}")
    return v


def _comma_list(text: str, convert, name: str, expected: str) -> list:
    """The non-empty comma-separated list ``text``, each item through ``convert``.

    Raises:
        ValueError: one line naming ``name`` (an item ``convert`` refuses, or no item)."""
    try:
        vals = [convert(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"{name}: a comma list of {expected} expected, got {text!r}") from None
    if not vals:
        raise ValueError(f"{name}: empty, got {text!r}")
    return vals


def parse_grid(text: str) -> list[float]:
    """A comma-separated list of numbers (a grid of α, λ or s), non-empty.

    Raises:
        ValueError: one line naming the grid.
    """
    return _comma_list(text, float, "grid", "numbers")


def parse_nu_grid(text: str) -> list[float]:
    """A non-empty comma-separated list of ν (each as :func:`parse_nu`).

    Raises:
        ValueError: one line naming nu.
    """
    return _comma_list(text, parse_nu, "nu", "numbers ≥ 0 or inf")


def parse_lengths(text: str) -> list[int]:
    """A non-empty comma-separated list of fixed lengths L ≥ 1.

    Raises:
        ValueError: one line naming L.
    """
    vals = _comma_list(text, int, "L", "integers ≥ 1")
    if min(vals) < 1:
        raise ValueError(f"L: a comma list of integers ≥ 1 expected, got {text!r}")
    return vals


def typed(parse):
    """``parse`` as an argparse ``type``: its ValueError's one-line message becomes argparse's error
    message (``slrpipe <step>: error: argument --x: <message>``, exit status 2)."""

    def convert(text):
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


# --------------------------------------------------------------------------- record <-> command line
def option(name: str) -> str:
    """The option of field ``name``: ``--x-y`` for ``x_y``."""
    return "--" + name.replace("_", "-")


def argv(record) -> list[str]:
    """``['--name', 'value', …]`` for every field of a job record (dataclass) that is set.

    A nested record (a ``members`` tuple of records) is written as one JSON argument.

    Raises:
        ValueError: a field None whose default is not (the command would read its default instead).
    """
    out = []
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if f.name in NOT_ARGUMENTS:
            continue
        if value is None:
            if f.default not in (None, MISSING):
                raise ValueError(f"{f.name}: None has no command line (the command would read {f.default!r})")
            continue
        flag = option(f.name)
        if isinstance(value, bool):
            if value != f.default:
                out.append(flag if value else "--no-" + flag[2:])
        elif f.metadata.get("json"):
            out += [flag, members_json(record)]
        else:
            out += [flag, text(value)]
    return out


def command_line(record) -> str:
    """:func:`argv` as one shell-quoted string (what a rule puts into its shell command)."""
    return shlex.join(argv(record))


#: the parser of a field whose metadata names none, by its annotated type (``X`` or ``X | None``)
_PARSERS = {"float": float, "int": int, "str": str}


def add_arguments(p, cls, *, optional=()) -> None:
    """One option per field of the job record ``cls`` (added to the subparser ``p``): ``--x-y`` with
    the field's parser (``metadata["parse"]``, else its annotated type), ``choices`` and ``help``
    from its metadata, its default, required where it has none; a boolean a flag (``--no-x-y`` where
    its default is true); a ``members`` field (``metadata["json"]``: the member record) the
    ``--members`` / ``--members-file`` pair (:func:`add_members_arguments`). ``optional``: fields
    made optional with default None (the command fills them, e.g. ``train`` from a stored set).
    :data:`NOT_ARGUMENTS` are left to the command.

    Raises:
        TypeError: a field whose metadata names no parser and whose type has none in ``_PARSERS``;
            a boolean without a default.
    """
    for f in dataclasses.fields(cls):
        if f.name in NOT_ARGUMENTS:
            continue
        meta, default = f.metadata, f.default
        if meta.get("json"):
            add_members_arguments(p, meta["json"])
            continue
        help_ = meta.get("help", "")
        if f.type == "bool":
            if default is MISSING:
                raise TypeError(f"{cls.__name__}.{f.name}: a flag needs a default (the value its absence means)")
            flag = option(f.name) if default is not True else "--no-" + option(f.name)[2:]
            p.add_argument(flag, dest=f.name, action="store_false" if default is True else "store_true", help=help_)
            continue
        parse = meta.get("parse")
        if parse is None:
            base = f.type.split("|")[0].strip()
            if base not in _PARSERS:
                raise TypeError(f"{cls.__name__}.{f.name}: no command-line parser for type {f.type!r}")
            parse = _PARSERS[base]
        kw = {"dest": f.name, "type": parse if parse in _PARSERS.values() else typed(parse), "help": help_}
        if "choices" in meta:
            kw["choices"] = meta["choices"]
        if f.name in optional:
            kw["default"] = None
        elif default is MISSING:
            kw["required"] = True
        else:
            kw["default"] = default
            if default is not None:
                kw["help"] = f"{help_} (default {text(default)})".lstrip()
        p.add_argument(option(f.name), **kw)


def from_namespace(cls, ns, **overrides):
    """The record of type ``cls`` from parsed arguments (fields missing from ``ns`` keep their default)."""
    kw = {f.name: getattr(ns, f.name) for f in dataclasses.fields(cls) if hasattr(ns, f.name)}
    kw.update(overrides)
    return cls(**kw)


def defaults(cls) -> dict:
    """{field: default} of the fields of record ``cls`` that have one."""
    return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not MISSING}


def members_json(batch) -> str:
    """The members of a batch record (:class:`~slrpipe.jobs.TrainBatchJob`,
    :class:`~slrpipe.jobs.PopulationBatchJob`) as the JSON text that ``--members`` carries and a
    batch's manifest file holds (the workflow passes the file, ``--members-file``: a batch's JSON
    can exceed what one command line should carry)."""
    return json.dumps([_jsonable(v) for v in batch.members], separators=(",", ":"))


def _jsonable(record) -> dict:
    return {k: (format_L(v) if k == "L" else v) for k, v in dataclasses.asdict(record).items() if v is not None}


def members_from_json(cls, text: str) -> list:
    """The ``cls`` records of a batch command's ``--members`` (the JSON :func:`argv` writes for a
    batch record), each with its ``out``.

    Raises:
        ValueError: not a JSON list of ``cls`` records with an ``out`` each.
    """
    try:
        jobs = [cls(**{**m, "L": parse_L(str(m["L"]))}) for m in json.loads(text)]
    except (json.JSONDecodeError, TypeError, KeyError) as exc:
        raise ValueError(f"members: a JSON list of {cls.__name__} records expected ({exc})") from None
    if not jobs or any(j.out is None for j in jobs):
        raise ValueError("members: every record needs its 'out' path")
    return jobs


def add_members_arguments(p, cls) -> None:
    """The mutually exclusive ``--members`` (JSON text) / ``--members-file`` (a file of that text)
    of a batch command, one of them required (added to its subparser ``p``)."""
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--members", help=f"JSON list of {cls.__name__} records (slrpipe.jobs), each with 'out'")
    g.add_argument("--members-file", help="a file holding that JSON list (the workflow's batch manifest)")


def members_of(cls, args) -> list:
    """The ``cls`` records of a batch command's parsed ``--members`` or ``--members-file``.

    Raises:
        ValueError: not a JSON list of ``cls`` records with an ``out`` each, or an unreadable file.
    """
    if args.members is not None:
        return members_from_json(cls, args.members)
    try:
        with open(args.members_file, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise ValueError(f"members-file: cannot read {args.members_file!r} ({exc.strerror})") from None
    return members_from_json(cls, text)


def arg(help: str, default=MISSING, **metadata):
    """A record field with its command-line metadata: ``help``, and optionally ``parse`` (text →
    value; default: the annotated type) and ``choices``."""
    return field(default=default, metadata={"help": help, **metadata})
