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

Two ways in: `perfbot map` (and ``perfbot score --map``) read the commit's files from git; a suite's
profiled pass reads them from the side's worktree, checked out at the commit it measured
(`worktree`, `traced`, `read_traced`), so that the trace an engine's own profiler wrote there gives
the map the results file carries. `read` loads a trace file (``.json`` or gzip) under the runner's
size cap.
"""

from __future__ import annotations

import ast
import json
import re
import zlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from bot.core import stepmap
from bot.core.judge import kineto
from bot.core.stepmap import StepMap

from .traces import MAX_TRACE_BYTES, TraceUnreadable

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
    suite: str = "trace",
) -> StepMap:
    """The map of ``data`` at ``commit`` (`annotate`, then `kineto`); `stepmap.StepMapError` when
    no call of the trace is one of the repository's functions, or the trace is no profile."""
    if annotate(data, resolve, read) == 0:
        raise stepmap.StepMapError(
            "no Python call of the trace is a function of the repository at that commit "
            "(was it recorded with Python stacks, with_stack=True?)"
        )
    try:
        found = kineto.traced(data, "trace", what)
    except kineto.TraceError as error:
        raise stepmap.StepMapError(str(error)) from None
    mapped = found.step_map(commit, suite)
    if mapped is None:
        raise stepmap.StepMapError("the trace's calls make no map")
    return mapped


def traced(data: Mapping[str, Any], root: Path, source: str, what: str) -> kineto.Traced:
    """What a trace says (`kineto.traced`: its profile, and the map's entries where one of its calls
    is a function of the worktree at ``root``), its calls named by the worktree's files; a trace
    whose calls some other means named already (perfbot's own workloads) is read as it is."""
    if is_trace(data) and not _named(data):
        exists, read_file = worktree(root)
        annotate(data, resolved(file_names(data), exists), read_file)
    return kineto.traced(data, source, what)


def read_traced(path: Path, root: Path, what: str) -> kineto.Traced:
    """`traced` of the trace file at ``path`` (`read`): what `bot.runner.traces.read_traced` gives,
    with the map's entries where the trace's Python calls are the worktree's; `TraceUnreadable` in
    one line for a file that is no trace."""
    data = read(path)
    try:
        return traced(data, root, path.name, what)
    except kineto.TraceError as error:
        raise TraceUnreadable(str(error)) from None


def worktree(root: Path) -> tuple[Callable[[list[str]], list[str]], Callable[[str], str | None]]:
    """Which of some paths are files of the worktree at ``root``, and a file's text: a path that
    leads outside it (through a link) is none of its files."""
    top = root.resolve()

    def inside(path: str) -> Path | None:
        where = (top / path).resolve()
        return where if where.is_relative_to(top) and where.is_file() else None

    def exists(paths: list[str]) -> list[str]:
        return [p for p in paths if inside(p) is not None]

    def read_file(path: str) -> str | None:
        where = inside(path)
        try:
            return where.read_text(errors="replace") if where is not None else None
        except OSError:
            return None

    return exists, read_file


def read(path: Path) -> Any:
    """The parsed JSON of the trace file at ``path`` (``.json``, or gzip whatever its name), at
    most `MAX_TRACE_BYTES` once decompressed; `TraceUnreadable` in one line otherwise."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_TRACE_BYTES + 1)
    except OSError as error:
        raise TraceUnreadable(f"{path.name}: {error.strerror or error}") from None
    too_large = TraceUnreadable(f"{path.name}: larger than {MAX_TRACE_BYTES // 2**20} MiB")
    if len(raw) > MAX_TRACE_BYTES:
        raise too_large
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, MAX_TRACE_BYTES + 1)
        except zlib.error as error:
            raise TraceUnreadable(f"{path.name}: not a gzip file ({error})") from None
        if len(raw) > MAX_TRACE_BYTES:
            raise too_large
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise TraceUnreadable(f"{path.name}: not a JSON trace") from None


def resolved(names: Iterable[str], exists: Callable[[list[str]], Iterable[str]]) -> dict[str, str]:
    """Each name's longest candidate that exists (``exists``: which of some paths the commit has)."""
    wanted = {name: candidates(name) for name in names}
    present = set(exists(sorted({c for found in wanted.values() for c in found})))
    return {
        name: next(c for c in found if c in present) for name, found in wanted.items() if present & set(found)
    }


def _named(data: Mapping[str, Any]) -> bool:
    return any(
        isinstance(e, Mapping) and isinstance(e.get("args"), Mapping) and "perfbot.function" in e["args"]
        for e in data.get("traceEvents", ())
    )


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
