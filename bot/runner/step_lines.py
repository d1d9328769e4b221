"""Which lines of the repository under test ran during a profiled pass's measured steps: recorded
by the workload around those steps, written next to its report, read back into the per-step map's
``lines`` (`bot.core.stepmap`).

Standard library only, so a workload that runs as a lone file can load it by path. It traces with
`sys.settrace` (every Python from 3.8; `sys.monitoring` of 3.12 would be cheaper, and is not used so
that one way is measured and tested): a call into a file outside the repository's folders, or
inside an installed package, is not traced line by line, which keeps the cost to the repository's
own code (measured in docs/performance.md). Only the main thread is traced.

The file holds ``{"lines": {path: [[first, last], ...]}}``: per file, sorted ranges of line
numbers; at most `MAX_RANGES` ranges in all. Files that would pass the cap are left out whole
(the smallest are kept first), never cut, so that a file the record names lists every line that ran.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from types import FrameType
from typing import Any

FILE = "step_lines.json"
MAX_RANGES = 20_000  # the map's own cap (`bot.core.stepmap.MAX_LINE_RANGES`)
_INSTALLED = frozenset(("site-packages", "dist-packages"))


class LineRecorder:
    """Records the repository's lines that run between `start` and `stop` (or inside ``with``)."""

    def __init__(self, roots: Iterable[str | Path]):
        self.roots = [Path(root).resolve() for root in roots]
        self.ran: dict[str, set[int]] = {}
        self._paths: dict[str, str | None] = {}  # code file name -> repository path (None: not ours)
        self._previous: Any = None

    def __enter__(self) -> LineRecorder:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._previous = sys.gettrace()
        sys.settrace(self._call)

    def stop(self) -> None:
        sys.settrace(self._previous)

    def ranges(self) -> dict[str, list[list[int]]]:
        """The recorded lines, per repository path, as sorted ranges; whole files left out past
        `MAX_RANGES` (the ones with the fewest ranges kept first)."""
        per_file = {path: compact(lines) for path, lines in self.ran.items()}
        kept: dict[str, list[list[int]]] = {}
        total = 0
        for path in sorted(per_file, key=lambda p: (len(per_file[p]), p)):
            if total + len(per_file[path]) > MAX_RANGES:
                break
            total += len(per_file[path])
            kept[path] = per_file[path]
        return dict(sorted(kept.items()))

    def write(self, folder: str | Path) -> Path:
        """Write the record as `FILE` in ``folder``; its path."""
        target = Path(folder) / FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".part")
        partial.write_text(json.dumps({"lines": self.ranges()}))
        partial.replace(target)
        return target

    def _path(self, name: str) -> str | None:
        if name not in self._paths:
            self._paths[name] = self._resolve(name)
        return self._paths[name]

    def _resolve(self, name: str) -> str | None:
        if not os.path.isabs(name) or not os.path.isfile(name):
            return None
        resolved = Path(name).resolve()
        if _INSTALLED & set(resolved.parts):
            return None
        for root in self.roots:
            if root in resolved.parents:
                return resolved.relative_to(root).as_posix()
        return None

    def _call(self, frame: FrameType, event: str, arg: object) -> Any:
        path = self._path(frame.f_code.co_filename)
        if path is None:
            return None  # not the repository's: no line events for this frame
        lines = self.ran.setdefault(path, set())

        def line(frame: FrameType, event: str, arg: object) -> Any:
            if event == "line":
                lines.add(frame.f_lineno)
            return line

        return line


def compact(lines: Iterable[int]) -> list[list[int]]:
    """Line numbers as sorted ``[first, last]`` ranges of consecutive numbers."""
    found: list[list[int]] = []
    for number in sorted(set(lines)):
        if found and number == found[-1][1] + 1:
            found[-1][1] = number
        else:
            found.append([number, number])
    return found


def read(folder: str | Path) -> object | None:
    """The ``lines`` a workload wrote in ``folder`` (unchecked: `bot.core.stepmap` validates it),
    or None when it wrote none or the file cannot be read as JSON."""
    try:
        data = json.loads((Path(folder) / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("lines") if isinstance(data, dict) else None
