"""A per-step map from an engine's own torch-profiler trace (Chrome JSON with Python stacks: what
``torch.profiler.profile(with_stack=True)`` and the engines' ``--profile`` switches write) and the
repository at the traced commit, for a project that never ran perfbot's suites.

The profiler names each Python call ``FILE(LINE): NAME``: the file as the interpreter knew it,
shortened by the longest `sys.path` prefix, and the line where the function starts. `file_names`
lists those names; `candidates` the repository paths a name may be (its suffixes, with ``src/``
before each); the caller says which exist at the commit (`resolve`: name -> path). `annotate` then
names each call of a repository function by its path, definition line and qualified name (read
from the commit's source), as the profiled pass of perfbot's own suites does, and `build` makes the
map with `bot.core.judge.kineto` (steps: the trace's ``ProfilerStep#N`` windows, else the whole
trace as one). Calls into installed packages, or into a file the repository does not have, or whose
definition line names no function of the source, are left out.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from bot.core import stepmap
from bot.core.judge import kineto
from bot.core.stepmap import StepMap

_CALL = re.compile(r"^(?P<file>.+\.py)\((?P<line>\d+)\): (?P<name>.+)$")
_INSTALLED = ("site-packages/", "dist-packages/")


def is_trace(data: object) -> bool:
    """Whether ``data`` is a Chrome trace (a map file is not)."""
    return isinstance(data, Mapping) and isinstance(data.get("traceEvents"), list)


def file_names(data: Mapping[str, Any]) -> list[str]:
    """The Python files the trace's calls name, in order of first appearance."""
    names: dict[str, None] = {}
    for event in data.get("traceEvents", ()):
        found = _call(event)
        if found is not None:
            names.setdefault(found[0], None)
    return list(names)


def candidates(name: str) -> list[str]:
    """The repository paths a trace's file name may be, the longest first: the name's suffixes
    (an absolute name, or one shortened by a `sys.path` entry inside the repository), each also
    under ``src/`` (a package installed from a ``src`` layout); none for an installed package's."""
    posix = name.replace("\\", "/")
    if any(part in posix for part in _INSTALLED):
        return []
    parts = [p for p in posix.split("/") if p not in ("", ".")]
    if ".." in parts:
        return []
    found: list[str] = []
    for start in range(len(parts)):
        suffix = "/".join(parts[start:])
        found += [suffix, f"src/{suffix}"]
    return [p for p in dict.fromkeys(found) if stepmap.is_repository_path(p)]


def annotate(data: Mapping[str, Any], resolve: Mapping[str, str], read: Callable[[str], str | None]) -> int:
    """Name each call of a repository function in ``data`` (in place: ``perfbot.function`` in its
    args) from ``resolve`` (trace file name -> repository path) and the commit's source (``read``);
    how many calls were named."""
    scopes: dict[str, dict[int, str]] = {}
    named = 0
    for event in data.get("traceEvents", ()):
        found = _call(event)
        if found is None or found[0] not in resolve:
            continue
        path = resolve[found[0]]
        if path not in scopes:
            scopes[path] = _definitions(read(path))
        function = scopes[path].get(found[1])
        if function is None:
            continue
        args = event.setdefault("args", {})
        if isinstance(args, dict):
            args["perfbot.function"] = {"path": path, "line": found[1], "function": function}
            named += 1
    return named


def build(
    data: Mapping[str, Any],
    resolve: Mapping[str, str],
    read: Callable[[str], str | None],
    commit: str,
    what: str,
) -> StepMap:
    """The map of ``data`` at ``commit`` (`annotate`, then `kineto`); `stepmap.StepMapError` when
    no call of the trace is one of the repository's functions, or the trace is no profile."""
    if annotate(data, resolve, read) == 0:
        raise stepmap.StepMapError(
            "no Python call of the trace is a function of the repository at that commit "
            "(was it recorded with Python stacks, with_stack=True?)"
        )
    try:
        traced = kineto.traced(data, "trace", what)
    except kineto.TraceError as error:
        raise stepmap.StepMapError(str(error)) from None
    mapped = traced.step_map(commit, "trace")
    if mapped is None:
        raise stepmap.StepMapError("the trace's calls make no map")
    return mapped


def resolved(names: Iterable[str], exists: Callable[[list[str]], Iterable[str]]) -> dict[str, str]:
    """Each name's longest candidate that exists (``exists``: which of some paths the commit has)."""
    wanted = {name: candidates(name) for name in names}
    present = set(exists(sorted({c for found in wanted.values() for c in found})))
    return {
        name: next(c for c in found if c in present) for name, found in wanted.items() if present & set(found)
    }


def _call(event: object) -> tuple[str, int] | None:
    if not isinstance(event, Mapping) or event.get("cat") != "python_function":
        return None
    name = event.get("name")
    match = _CALL.match(name) if isinstance(name, str) else None
    return (match["file"], int(match["line"])) if match else None


def _definitions(source: str | None) -> dict[int, str]:
    """Each function's definition line (and its decorators' first line) -> its qualified name."""
    if source is None:
        return {}
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    found: dict[int, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                qualname = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    for line in (child.lineno, *(d.lineno for d in child.decorator_list)):
                        found.setdefault(line, qualname)
                visit(child, qualname + (".<locals>." if not isinstance(child, ast.ClassDef) else "."))
            else:
                visit(child, prefix)

    visit(tree, "")
    return found
