"""Source fingerprints of workflow steps, so Snakemake reruns a job when code it imports changes.

Snakemake notices edits to a rule's own shell/run code but not to the Python modules the rule's
command imports. Each rule therefore carries, in ``params``, a hash of the source files of the
``slrpipe`` modules its command imports (static, transitive closure over ``import`` statements,
including imports inside functions), so editing ``slrpipe.theory.population`` changes the
fingerprint of the population rule and of nothing that does not import it. The hash is over the
code only (the syntax tree without docstrings; comments never reach it), so editing documentation
reruns nothing.
"""

from __future__ import annotations

import ast
import hashlib
from functools import cache
from pathlib import Path

PACKAGE = "slrpipe"
ROOT = Path(__file__).resolve().parent


def module_file(name: str) -> Path | None:
    """Source file of module ``name`` (``slrpipe.x.y``) inside this package, or None."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = ROOT.joinpath(*parts[1:])
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _name_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = [PACKAGE, *rel.parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache  # the steps' closures overlap: each file is parsed once per process
def _analyse(path: Path) -> tuple[frozenset[str], bytes]:
    """(the ``slrpipe`` modules ``path`` imports, its code without docstrings as text: :func:`_code`),
    from one parse."""
    tree = ast.parse(path.read_text(), filename=str(path))
    me = _name_of(path)
    pkg = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names)  # `from pkg import submodule`
    imports = frozenset(n for n in found if n.split(".")[0] == PACKAGE)
    for node in ast.walk(tree):  # then strip the docstrings (after the imports were read)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
    return imports, ast.dump(tree, include_attributes=False).encode()


def _direct_imports(path: Path) -> frozenset[str]:
    return _analyse(path)[0]


def closure(modules, exclude=()) -> list[Path]:
    """Source files of ``modules`` and every ``slrpipe`` module they import, transitively.

    Parent packages' ``__init__.py`` count (importing ``a.b`` runs ``a/__init__.py``). Modules whose
    name starts with an entry of ``exclude`` are left out together with what only they import.
    """
    seen: dict[Path, None] = {}
    todo = list(modules)
    while todo:
        name = todo.pop()
        if any(name == e or name.startswith(e + ".") for e in exclude):
            continue
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            f = module_file(".".join(parts[:i]))
            if f is not None and f not in seen:
                seen[f] = None
                todo.extend(_direct_imports(f))
    return sorted(seen)


def _code(path: Path) -> bytes:
    """The module's syntax tree without docstrings, as text: what runs, not how it is documented."""
    return _analyse(path)[1]


def fingerprint(modules, exclude=()) -> str:
    """Short sha256 over the code (:func:`_code`) of ``closure(modules, exclude)`` (paths relative
    to the package)."""
    h = hashlib.sha256()
    for f in closure(modules, exclude):
        h.update(str(f.relative_to(ROOT)).encode())
        h.update(_code(f))
    return h.hexdigest()[:16]
