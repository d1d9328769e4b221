"""Read which package versions a change to a dependency manifest moves, and from what to what.

Pins are read from the lines a hunk removes and adds, in the forms engines write them:

- requirement specifiers (requirements files, ``pyproject.toml``, ``setup.py``, ``pip install``
  lines of Dockerfiles): ``torch==2.8.0``, ``"flashinfer-python>=0.2.5"``, ``torch = "2.8"``;
- ``NAME_VERSION`` / ``NAME_REVISION`` settings: ``ARG CUDA_VERSION=12.8.1``,
  ``ENV TORCH_VERSION 2.8.0``, ``set(CUTLASS_REVISION "v3.9.2")``;
- base images, ``FROM nvidia/cuda:12.8.1-devel-ubuntu22.04``, and PyTorch's wheel index
  (``.../whl/cu128``, read as the CUDA version);
- CMake ``FetchContent`` pins, ``GIT_TAG <sha>``, named by their ``FetchContent_Declare``.

Only real pins count: a comment (``# torch==2.8.0 breaks X``) and a reference to a setting
(``"$CUDA_VERSION" = "12.8"`` in a shell test, ``${TORCH_VERSION}``) pin nothing.

A package whose removed and added pins differ is a `VersionChange`. Names are normalised as pip
does (lower case, ``-``/``_``/``.`` runs as one ``-``) so that rules can name them once.
All patterns run under RE2: manifest lines come from pull requests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from bot.core.config import patterns
from bot.core.risk.diff import FileChange, Hunk

_REQUIREMENT = patterns.regex(
    r"(?:^|[\s\"',\[(])([A-Za-z][A-Za-z0-9._-]*)\s*(?:\[[^\]\n]*\])?\s*"
    r"(?:(===|==|~=|>=|<=|!=|>|<)\s*(v?\d[^\s,;\"'\])#]*)|(@)\s*([^\s,;\"'\])#]+))"
)
_TOML_PIN = patterns.regex(r"^\s*([A-Za-z][A-Za-z0-9._-]*)\s*=\s*[\"']([\^~<>=!]*\d[^\"']*)[\"']")
_SETTING = patterns.regex(
    r"(?:^|[^\w${])([A-Za-z][A-Za-z0-9_]*?)_(?:VERSION|REVISION|GIT_TAG)\b[\"']?"
    r"(?:\s*[=:]\s*|\s+)[\"']?(v?\d[\w.+-]*)"
)
_IMAGE = patterns.regex(
    r"(?i)(?:^\s*FROM\s+(?:--platform=\S+\s+)?|\b)"
    r"((?:[\w.-]+/)*(?:cuda|pytorch|sglang|vllm-openai|vllm)):(v?\d[\w.+-]*)"
)
_WHEEL_INDEX = patterns.regex(r"/whl/(?:nightly/|test/)?(cu\d+|rocm[\d.]+)\b")
_GIT_TAG = patterns.regex(r"^\s*GIT_TAG\s+[\"']?([\w.+-]+)")
_DECLARE = patterns.regex(r"FetchContent_Declare\(\s*([\w.-]+)?")
_DECLARED_NAME = patterns.regex(r"^\s*([\w.-]+)")
# A comment: from a ``#`` that starts the line or follows a blank (a URL's ``#egg=`` stays).
_COMMENT = patterns.regex(r"(?:^|\s)#.*")
_SEPARATORS = re.compile(r"[-_.]+")
_HEX = re.compile(r"^[0-9a-f]{16,40}$")
# A group that every match of its pattern sets is read as ``m.group(n)`` (text); one that may be
# left unset (an alternative, an optional group) as ``m[n]`` (text or None).


@dataclass(frozen=True, slots=True)
class VersionChange:
    """``name`` pinned at ``old`` before the change and ``new`` after it (at new-side ``line``)."""

    name: str
    old: str
    new: str
    line: int

    def describe(self) -> str:
        return f"{self.name} {self.old} -> {self.new}"


def normalise(name: str) -> str:
    return _SEPARATORS.sub("-", name.lower())


def version_changes(change: FileChange) -> list[VersionChange]:
    """Packages whose pinned version the change moves, in the order their new pins appear."""
    removed: dict[str, list[str]] = {}
    added: dict[str, list[tuple[str, int]]] = {}
    stem = normalise(PurePosixPath(change.path).stem)
    for hunk in change.hunks:
        declared: str | None = None
        for index, text in enumerate(hunk.texts):
            declared = _declared(hunk, index, declared)
            kind = hunk.types[index]
            if kind not in "+-":
                continue
            for name, version in _pins(_COMMENT.sub("", text), declared or stem):
                if kind == "-":
                    removed.setdefault(name, []).append(version)
                else:
                    added.setdefault(name, []).append((version, hunk.line_number(index)))
    found: list[VersionChange] = []
    seen: set[tuple[str, str, str]] = set()
    for name, news in added.items():
        for old, (new, line) in zip(removed.get(name, ()), news, strict=False):
            if old != new and (name, old, new) not in seen:
                seen.add((name, old, new))
                found.append(VersionChange(name, _short(old), _short(new), line))
    found.sort(key=lambda v: v.line)
    return found


def _pins(text: str, fallback: str) -> list[tuple[str, str]]:
    """(normalised name, version) of every pin on one line."""
    found = []
    for match in _REQUIREMENT.finditer(text):
        # One of the two alternatives matched: an operator and a version, or ``@`` and a URL.
        operator, version = (match.group(2), match.group(3)) if match[2] else (match.group(4), match.group(5))
        found.append(
            (normalise(match.group(1)), version if operator in ("==", "===", "@") else operator + version)
        )
    if not found:
        found += [(normalise(m.group(1)), m.group(2)) for m in _TOML_PIN.finditer(text)]
    found += [(normalise(m.group(1)), m.group(2)) for m in _SETTING.finditer(text)]
    found += [(normalise(m.group(1)), m.group(2)) for m in _IMAGE.finditer(text)]
    found += [("cuda", m.group(1)) for m in _WHEEL_INDEX.finditer(text)]
    tag = _GIT_TAG.search(text)
    if tag:
        found.append((fallback, tag.group(1)))
    return found


def _declared(hunk: Hunk, index: int, current: str | None) -> str | None:
    """The name of the ``FetchContent_Declare`` that line ``index`` sits in, if seen."""
    match = _DECLARE.search(hunk.texts[index])
    if match is None:
        return current
    declared = match[1]
    if declared:
        return normalise(declared)
    following = hunk.texts[index + 1] if index + 1 < len(hunk.texts) else ""
    name = _DECLARED_NAME.search(following)
    return normalise(name.group(1)) if name else current


def _short(version: str) -> str:
    """A commit sha cut to 12 characters; a URL to its last part; anything else as it is."""
    if _HEX.match(version):
        return version[:12]
    if "://" in version:
        return version.rstrip("/").rsplit("/", 1)[-1][:60]
    return version[:60]
