"""The per-step map: what one step of a suite runs, measured by its profiled pass.

Per function of the repository under test: how many times one step calls it and its share of the
step's host time (inclusive). Per kernel family: how many launches per step and which lines of the
repository launched them. The map travels as the optional ``step_map`` section of a results file,
or on its own as a map file; both come back from runners and are untrusted, so `parse` validates
every field and says what is wrong in one `StepMapError` line naming the field.

Optionally (``lines``; maps made before it have none), per file of the repository, the lines that
ran during the measured steps, as sorted ranges of line numbers: at most `MAX_LINE_RANGES` ranges in
all, a recorder that would exceed it leaves whole files out. A file the map's ``lines`` does not name
was not recorded; it is not a file none of whose lines ran.

Paths are the repository's own, relative and in POSIX form: a map never names an absolute path,
a parent directory or an installed package.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal, TypeGuard

from bot.core.text import clip, printable

SCHEMA = 1
SOURCES: tuple[Literal["torch.profiler"], Literal["sys.monitoring"]] = ("torch.profiler", "sys.monitoring")
Source = Literal["torch.profiler", "sys.monitoring"]
MAX_FUNCTIONS = 5_000
MAX_KERNELS = 2_000
MAX_LAUNCH_SITES = 50
MAX_PATH_CHARS = 400
MAX_NAME_CHARS = 300
MAX_LINE = 10_000_000
MAX_LINE_RANGES = 20_000
_COMMIT = re.compile(r"^[0-9a-fA-F]{40}$")
_INSTALLED = frozenset(("site-packages", "dist-packages"))


class StepMapError(ValueError):
    """A map that cannot be used; the message is one line naming the field."""


@dataclass(frozen=True)
class FunctionEntry:
    """One function of the repository: where it is defined, calls per step, inclusive host share."""

    path: str
    function: str
    line: int
    calls_per_step: float
    host_share: float


@dataclass(frozen=True)
class LaunchSite:
    """A line of the repository that launched a kernel family, and how often per step."""

    path: str
    function: str
    line: int
    per_step: float


@dataclass(frozen=True)
class KernelEntry:
    """One kernel family (named as the kernel diff names it): launches per step and by whom, the
    most frequent launcher first."""

    family: str
    launches_per_step: float
    launched_by: tuple[LaunchSite, ...]


@dataclass(frozen=True)
class StepMap:
    """The map of one suite's step at one commit."""

    commit: str
    suite: str
    step: str
    steps: int
    source: Source
    functions: tuple[FunctionEntry, ...]
    kernels: tuple[KernelEntry, ...]
    # path: sorted ranges of the lines that ran; None: not recorded
    lines: dict[str, tuple[tuple[int, int], ...]] | None = field(default=None, hash=False)

    def ran(self, path: str, line: int) -> bool | None:
        """Whether line ``line`` of ``path`` ran during the measured steps; None when the map did
        not record that file's lines."""
        if self.lines is None or path not in self.lines:
            return None
        ranges = self.lines[path]
        index = bisect.bisect_right(ranges, (line, MAX_LINE + 1)) - 1
        return index >= 0 and ranges[index][0] <= line <= ranges[index][1]

    def function_at(self, path: str, qualname: str) -> FunctionEntry | None:
        """The entry of function ``qualname`` defined in ``path``, or None if the step never ran it."""
        for entry in self.functions:
            if entry.path == path and entry.function == qualname:
                return entry
        return None

    def kernel(self, family: str) -> KernelEntry | None:
        """The entry of kernel family ``family``, or None if the step launched none."""
        for entry in self.kernels:
            if entry.family == family:
                return entry
        return None

    def to_dict(self) -> dict[str, Any]:
        """The map as JSON-ready data, in the form `parse` reads back."""
        return {
            "schema": SCHEMA,
            "commit": self.commit,
            "suite": self.suite,
            "step": self.step,
            "steps": self.steps,
            "source": self.source,
            "functions": [
                {
                    "path": f.path,
                    "function": f.function,
                    "line": f.line,
                    "calls_per_step": f.calls_per_step,
                    "host_share": f.host_share,
                }
                for f in self.functions
            ],
            "kernels": [
                {
                    "family": k.family,
                    "launches_per_step": k.launches_per_step,
                    "launched_by": [
                        {"path": s.path, "function": s.function, "line": s.line, "per_step": s.per_step}
                        for s in k.launched_by
                    ],
                }
                for k in self.kernels
            ],
            **(
                {"lines": {path: [list(r) for r in ranges] for path, ranges in self.lines.items()}}
                if self.lines is not None
                else {}
            ),
        }


def parse(data: object) -> StepMap:
    """The map in ``data``: a ``step_map`` section itself, or a whole results file holding one."""
    if isinstance(data, dict) and "step_map" in data:
        return _map(data["step_map"], "step_map")
    return _map(data, "")


def from_results(results: object) -> StepMap | None:
    """The map in a results file's ``step_map`` section; None when the file has none."""
    if not isinstance(results, dict) or results.get("step_map") is None:
        return None
    return _map(results["step_map"], "step_map")


def with_lines(step_map: StepMap, data: object) -> StepMap:
    """``step_map`` with the ``lines`` a recorder wrote (untrusted: checked as `parse` checks a
    map's own, `StepMapError` naming the field)."""
    return dataclasses.replace(step_map, lines=_lines(data, "lines"))


def is_repository_path(path: str) -> bool:
    """Whether ``path`` is fit to name a file of the repository under test: relative, POSIX,
    inside it, not an installed package."""
    if not path or len(path) > MAX_PATH_CHARS or printable(path) != path:
        return False
    if path.startswith("/") or "\\" in path or re.match(r"^[A-Za-z]:", path):
        return False
    parts = path.split("/")
    return all(part not in ("", ".", "..") for part in parts) and not _INSTALLED & set(parts)


def _map(data: object, where: str) -> StepMap:
    fields = _object(data, where)
    schema = fields.get("schema")
    if schema != SCHEMA or isinstance(schema, bool):
        raise StepMapError(f"{_at(where, 'schema')}: must be {SCHEMA}, got {_show(schema)}")
    commit = _text(fields, "commit", where, 40)
    if not _COMMIT.match(commit):
        raise StepMapError(f"{_at(where, 'commit')}: must be a 40-hex commit sha, got {_show(commit)}")
    source = fields.get("source")
    if source not in SOURCES:
        raise StepMapError(
            f"{_at(where, 'source')}: must be one of {', '.join(SOURCES)}, got {_show(source)}"
        )
    functions = _list(fields, "functions", where, MAX_FUNCTIONS)
    kernels = _list(fields, "kernels", where, MAX_KERNELS)
    parsed_functions = tuple(_function(f, _at(where, f"functions[{i}]")) for i, f in enumerate(functions))
    _unique([(f.path, f.function) for f in parsed_functions], _at(where, "functions"), "function")
    parsed_kernels = tuple(_kernel(k, _at(where, f"kernels[{i}]")) for i, k in enumerate(kernels))
    _unique([k.family for k in parsed_kernels], _at(where, "kernels"), "family")
    return StepMap(
        commit=commit.lower(),
        suite=_text(fields, "suite", where, 100),
        step=_text(fields, "step", where, 100),
        steps=_count(fields, "steps", where),
        source=source,
        functions=parsed_functions,
        kernels=parsed_kernels,
        lines=_lines(fields.get("lines"), _at(where, "lines")),
    )


def _lines(data: object, where: str) -> dict[str, tuple[tuple[int, int], ...]] | None:
    """The ``lines`` field: absent or null in a map made without it."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise StepMapError(f"{where}: must be a JSON object, got {_kind(data)}")
    found: dict[str, tuple[tuple[int, int], ...]] = {}
    total = 0
    for path, ranges in data.items():
        at = f"{where}[{_show(path)}]"
        if not is_repository_path(path):
            raise StepMapError(
                f"{at}: must name a path relative to the repository, outside installed packages"
            )
        if not isinstance(ranges, list):
            raise StepMapError(f"{at}: must be an array of [first, last] line ranges, got {_kind(ranges)}")
        total += len(ranges)
        if total > MAX_LINE_RANGES:
            raise StepMapError(f"{where}: more than {MAX_LINE_RANGES} line ranges")
        parsed: list[tuple[int, int]] = []
        for i, pair in enumerate(ranges):
            if (
                not isinstance(pair, list)
                or len(pair) != 2
                or not all(_is_int(n) and 1 <= n <= MAX_LINE for n in pair)
                or pair[0] > pair[1]
            ):
                raise StepMapError(f"{at}[{i}]: must be [first, last], lines 1-{MAX_LINE}, got {_show(pair)}")
            if parsed and pair[0] <= parsed[-1][1]:
                raise StepMapError(f"{at}[{i}]: ranges must be sorted and apart, got {_show(pair)}")
            parsed.append((pair[0], pair[1]))
        found[path] = tuple(parsed)
    return found


def _function(data: object, where: str) -> FunctionEntry:
    fields = _object(data, where)
    share = _number(fields, "host_share", where)
    if share > 1:
        raise StepMapError(f"{_at(where, 'host_share')}: must be at most 1, got {_show(share)}")
    return FunctionEntry(
        path=_path(fields, where),
        function=_text(fields, "function", where, MAX_NAME_CHARS),
        line=_line(fields, where),
        calls_per_step=_number(fields, "calls_per_step", where),
        host_share=share,
    )


def _kernel(data: object, where: str) -> KernelEntry:
    fields = _object(data, where)
    sites = _list(fields, "launched_by", where, MAX_LAUNCH_SITES)
    launched_by = tuple(_site(s, _at(where, f"launched_by[{i}]")) for i, s in enumerate(sites))
    _unique([(s.path, s.function, s.line) for s in launched_by], _at(where, "launched_by"), "line")
    return KernelEntry(
        family=_text(fields, "family", where, MAX_NAME_CHARS),
        launches_per_step=_number(fields, "launches_per_step", where),
        launched_by=launched_by,
    )


def _site(data: object, where: str) -> LaunchSite:
    fields = _object(data, where)
    return LaunchSite(
        path=_path(fields, where),
        function=_text(fields, "function", where, MAX_NAME_CHARS),
        line=_line(fields, where),
        per_step=_number(fields, "per_step", where),
    )


def _object(data: object, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise StepMapError(f"{where or 'map'}: must be a JSON object, got {_kind(data)}")
    return data


def _list(fields: dict[str, Any], key: str, where: str, limit: int) -> list[Any]:
    value = fields.get(key)
    if not isinstance(value, list):
        raise StepMapError(f"{_at(where, key)}: must be an array, got {_kind(value)}")
    if len(value) > limit:
        raise StepMapError(f"{_at(where, key)}: more than {limit} entries")
    return value


def _text(fields: dict[str, Any], key: str, where: str, limit: int) -> str:
    value = fields.get(key)
    if not isinstance(value, str) or not value:
        raise StepMapError(f"{_at(where, key)}: must be a non-empty string, got {_kind(value)}")
    if len(value) > limit:
        raise StepMapError(f"{_at(where, key)}: longer than {limit} characters")
    if printable(value) != value:
        raise StepMapError(f"{_at(where, key)}: holds control or invisible characters")
    return value


def _path(fields: dict[str, Any], where: str) -> str:
    value = _text(fields, "path", where, MAX_PATH_CHARS)
    if not is_repository_path(value):
        raise StepMapError(
            f"{_at(where, 'path')}: must be a path relative to the repository, "
            f"outside installed packages, got {_show(value)}"
        )
    return value


def _line(fields: dict[str, Any], where: str) -> int:
    value = fields.get("line")
    if not _is_int(value) or not 0 <= value <= MAX_LINE:
        raise StepMapError(f"{_at(where, 'line')}: must be an integer 0-{MAX_LINE}, got {_show(value)}")
    return value


def _count(fields: dict[str, Any], key: str, where: str) -> int:
    value = fields.get(key)
    if not _is_int(value) or not 1 <= value <= 10**9:
        raise StepMapError(f"{_at(where, key)}: must be an integer 1-{10**9}, got {_show(value)}")
    return value


def _number(fields: dict[str, Any], key: str, where: str) -> float:
    value = fields.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StepMapError(f"{_at(where, key)}: must be a number, got {_kind(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or number < 0:
        raise StepMapError(f"{_at(where, key)}: must be a finite number >= 0, got {_show(value)}")
    return number


def _unique(keys: list[Any], where: str, what: str) -> None:
    seen: set[Any] = set()
    for key in keys:
        if key in seen:
            raise StepMapError(f"{where}: {what} {_show(key)} appears twice")
        seen.add(key)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _at(where: str, key: str) -> str:
    if not where:
        return key
    return f"{where}{key}" if key.startswith("[") else f"{where}.{key}"


def _kind(value: object) -> str:
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        type(None): "nothing",
    }.get(type(value), "a number")


def _show(value: object) -> str:
    """A piece of untrusted input fit for a one-line message."""
    try:
        text = repr(value)
    except ValueError:  # an integer too long for repr (sys.get_int_max_str_digits)
        text = "a very long integer"
    return clip(printable(text), 41)
