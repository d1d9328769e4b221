"""Where a change sits in the code: the function (``def`` or ``class``) that each line of a hunk
belongs to.

A hunk is cut into segments at the definitions it shows; what comes before the first one belongs
to the function that encloses the hunk's first change in the file's new text (when a checkout
gives it), else to the one git names in the hunk header.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.core.risk.diff import Hunk

# The changed file's new text as lines (None: not available), read at most once and only if a
# hunk asks for it.
SourceLines = Callable[[], list[str] | None]

_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)")
# Over whole files: a pattern that starts with a literal lets `re` jump between candidates,
# many times faster than one that starts with `^` or an alternation.
_DEF_KEYWORDS = (re.compile(r"def[ \t]+(\w+)"), re.compile(r"class[ \t]+(\w+)"))
_HEADER_DEF = re.compile(r"(?:def|class)\s+(\w+)")
_HEADER_CALL = re.compile(r"(\w+)\s*\(")


@dataclass(frozen=True, slots=True)
class Segment:
    """Lines ``start``..``end`` of a hunk that sit in one function (``name``; None: at module
    level, or not known)."""

    name: str | None
    start: int
    end: int


def definitions(text: str) -> list[tuple[int, str, str]]:
    """(offset of the line, the line, the name) of each ``def``/``class`` that starts a line."""
    found = []
    for keyword in _DEF_KEYWORDS:
        for match in keyword.finditer(text):
            line = text.rfind("\n", 0, match.start()) + 1
            if text[line : match.start()].strip() in ("", "async"):
                found.append((line, match[0], match[1]))
    found.sort()
    return found


def segments(hunk: Hunk, defs: Sequence[tuple[int, str, str]], lines: SourceLines) -> list[Segment]:
    """The hunk cut at the definitions ``defs`` (hunk-relative offsets, as `definitions` gives)."""
    bounds: list[tuple[int, str | None]] = [(0, _header_function(hunk, lines))]
    for offset, _, name in defs:
        index = hunk.line_at(offset)
        if index == 0:
            bounds[0] = (0, name)
        else:
            bounds.append((index, name))
    ends = [start for start, _ in bounds[1:]] + [len(hunk.types)]
    return [Segment(function, start, end) for (start, function), end in zip(bounds, ends, strict=True)]


def _first_changed(types: str, start: int, end: int) -> int | None:
    plus, minus = types.find("+", start, end), types.find("-", start, end)
    found = [i for i in (plus, minus) if i >= 0]
    return min(found) if found else None


def _header_function(hunk: Hunk, lines: SourceLines) -> str | None:
    text = lines()
    if text is not None:
        start = _first_changed(hunk.types, 0, len(hunk.types))
        if start is not None:
            # Where the change sits in the new file (a deletion: the line that now follows it); only
            # context lines come before the first change.
            name = enclosing_function(text, hunk.target_start + hunk.types.count(" ", 0, start))
            if name:
                return name
    match = _HEADER_DEF.search(hunk.section) or _HEADER_CALL.search(hunk.section)
    return match[1] if match else None


def enclosing_function(lines: list[str], line_number: int) -> str | None:
    """Name of the innermost ``def``/``class`` that holds 1-based ``line_number``."""
    if not 1 <= line_number <= len(lines):
        return None
    target = lines[line_number - 1]
    indent = _indent(target) if target.strip() else None
    for text in reversed(lines[: line_number - 1]):
        match = _DEF.match(text)
        if match and (indent is None or len(match[1].expandtabs()) < indent):
            return match[2]
        if text.strip() and not text.lstrip().startswith(("#", "@", ")")) and indent is not None:
            indent = min(indent, _indent(text))
    return None


def _indent(text: str) -> int:
    """The indentation of a line in columns, tabs expanded (as `_DEF`'s is measured)."""
    expanded = text.expandtabs()
    return len(expanded) - len(expanded.lstrip())
