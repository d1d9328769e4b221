"""Turn unified-diff text into per-file changes, tolerating damaged input.

unidiff does the parsing. The text is split into one section per file first, so a malformed
file (a truncated hunk, a hand-edited count) costs only that file a lenient re-read instead
of failing the whole diff, and memory stays bounded by the largest file, not the whole diff.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import operator
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from unidiff import PatchedFile, PatchSet
from unidiff.constants import (  # type: ignore[attr-defined]  # the index pattern is newer than its stubs
    RE_DIFF_GIT_HEADER,
    RE_DIFF_GIT_INDEX,
    RE_HUNK_HEADER,
    RE_NO_NEWLINE_MARKER,
    RE_SOURCE_FILENAME,
    RE_TARGET_FILENAME,
)
from unidiff.errors import UnidiffParseError
from unidiff.patch import Hunk as UnidiffHunk
from unidiff.patch import PatchInfo

_PLAIN_HEADER = re.compile(r"^--- .*\n\+\+\+ ", re.MULTILINE)
_FIRST = operator.itemgetter(0)
_REST = operator.itemgetter(slice(1, None))
_NOT_BODY = re.compile(r"[^ +\-\\]")
_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@ ?(.*)$")
_GIT_PATHS = re.compile(r"^diff --git (?:\"?a/)?(.+?)\"? (?:\"?b/)?(.+?)\"?$")


@dataclass(slots=True)
class Hunk:
    """One hunk: its lines' text and a one-character type per line.

    Types are ' ' (context), '+', '-', or '\\' for "No newline at end of file" markers, which
    occupy no line number on either side.
    """

    source_start: int
    target_start: int
    section: str
    texts: list[str]
    types: str
    _offsets: list[int] | None = field(default=None, repr=False)
    # Derived once, on demand, and never compared: scoring asks for them several times per hunk.
    _joined: str | None = field(default=None, repr=False, compare=False)
    _code: tuple[tuple[str, ...], list[int], list[str]] | None = field(
        default=None, repr=False, compare=False
    )

    def offsets(self) -> list[int]:
        """Start offset of each line inside ``joined()``; computed once, on demand."""
        if self._offsets is None:
            self._offsets = [0, *itertools.accumulate(map(len, self.texts))]
        return self._offsets

    def joined(self) -> str:
        """The hunk's lines as one text; computed once (a hunk is not changed once parsed)."""
        if self._joined is None:
            self._joined = "".join(self.texts)
        return self._joined

    def lines_of(self, kinds: str) -> list[str]:
        """The texts of the lines whose type is one of ``kinds`` (" -": the old side), in order."""
        return list(itertools.compress(self.texts, self._mask(kinds)))

    def indices_of(self, kinds: str) -> list[int]:
        """The indices of the lines whose type is one of ``kinds``, in order."""
        return list(itertools.compress(range(len(self.texts)), self._mask(kinds)))

    def _mask(self, kinds: str) -> bytes:
        # One byte per line, 1 where its type is one of ``kinds``: `itertools.compress` then
        # picks the lines in C instead of a loop over every line of the hunk.
        if len(self.types) != len(self.texts):
            raise ValueError(f"a hunk of {len(self.texts)} lines with {len(self.types)} line types")
        return self.types.encode("ascii", "replace").translate(_type_mask(kinds))

    def code_changes(self, markers: tuple[str, ...]) -> tuple[list[int], list[str]]:
        """The added and removed lines that hold code (not blank, not only a comment starting
        with one of ``markers``): their indices, and their text stripped; computed once per
        ``markers`` (a hunk belongs to one file, so to one set of them)."""
        found = self._code
        if found is None or found[0] != markers:
            starts = markers or ("\0",)
            changed = self._mask("+-")
            # Not blank and not a comment, decided for every changed line in C (maps, no loop).
            stripped = list(map(str.strip, itertools.compress(self.texts, changed)))
            comment = map(operator.methodcaller("startswith", starts), stripped)
            code = list(map(operator.and_, map(bool, stripped), map(operator.not_, comment)))
            found = self._code = (
                markers,
                list(itertools.compress(itertools.compress(range(len(self.texts)), changed), code)),
                list(itertools.compress(stripped, code)),
            )
        return found[1], found[2]

    def line_at(self, offset: int) -> int:
        """Index of the line holding character ``offset`` of ``joined()``."""
        return bisect.bisect_right(self.offsets(), offset) - 1

    def line_number(self, index: int) -> int:
        """The file line number of line ``index``: new-side for ' '/'+', old-side for '-'."""
        kind = self.types[index]
        before = self.types[:index]
        if kind == "-":
            return self.source_start + before.count(" ") + before.count("-")
        return self.target_start + before.count(" ") + before.count("+")


@functools.cache
def _type_mask(kinds: str) -> bytes:
    """A `bytes.translate` table: 1 for the line types in ``kinds``, 0 for every other byte."""
    return bytes(1 if chr(code) in kinds else 0 for code in range(256))


@dataclass(slots=True)
class FileChange:
    """The change to one file. ``path`` is the new path (the old one for a deletion)."""

    path: str
    old_path: str | None
    status: str  # added | deleted | modified | renamed | copied
    is_binary: bool
    added: int
    removed: int
    hunks: list[Hunk]
    damaged: str | None = None  # why the lenient reader was needed, if it was


@dataclass(slots=True)
class ParsedDiff:
    files: list[FileChange]
    warnings: list[str]


def decode(data: bytes | str) -> str:
    """Text of a diff as read from a file or a pipe: UTF-8, bad bytes replaced, LF line ends."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    return text


def parse(data: bytes | str) -> ParsedDiff:
    """Parse a unified diff (git or plain) into file changes; never raises for bad text."""
    text = decode(data)
    files: list[FileChange] = []
    warnings: list[str] = []
    for section in split_sections(text):
        try:
            files.extend(_quick(section) or _from_unidiff(PatchSet(section)))
        except UnidiffParseError as error:
            change = _lenient(section, str(error))
            if change is not None:
                files.append(change)
                warnings.append(f"{change.path}: {change.damaged}; scored from the lines present")
    nameless = [f for f in files if not f.path.strip()]
    if nameless:
        files = [f for f in files if f.path.strip()]
        warnings.append(f"{len(nameless)} file header(s) without a path were skipped")
    if text.strip() and not files:
        warnings.append("no file changes found in the input (is it a unified diff?)")
    return ParsedDiff(files, warnings)


def split_sections(text: str) -> list[str]:
    """Split diff text into one chunk per file (git headers, else ``---``/``+++`` pairs)."""
    starts = _line_starts(text, "diff --git ")
    if not starts:
        starts = [m.start() for m in _PLAIN_HEADER.finditer(text)]
    if not starts:
        return [text] if text.strip() else []
    bounds = [*starts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def _line_starts(text: str, prefix: str) -> list[int]:
    """Offsets of the lines that begin with ``prefix`` (str.find: far faster than a regex)."""
    found = [0] if text.startswith(prefix) else []
    needle = "\n" + prefix
    at = text.find(needle)
    while at >= 0:
        found.append(at + 1)
        at = text.find(needle, at + 1)
    return found


def _status(patched: PatchedFile) -> str:
    if patched.is_added_file:
        return "added"
    if patched.is_removed_file:
        return "deleted"
    if patched.is_rename:
        return "copied" if patched.patch_info and _is_copy(patched.patch_info) else "renamed"
    return "modified"


def _is_copy(patch_info: Iterable[str]) -> bool:
    return any(str(line).startswith("copy from ") for line in patch_info)


def _quick(section: str) -> list[FileChange] | None:
    """The common case, fast: unidiff reads and checks the headers and hunk counts
    (``metadata_only``), and the hunk bodies are sliced straight from the text, instead of
    unidiff building an object per line. None when the section is anything but plain
    (several files, blank or foreign lines in a body): the full parse then takes it.

    Most sections need not even be walked by unidiff line by line: `_from_headers` has it read
    the file header alone, and the hunks are checked here exactly as unidiff would check them."""
    headers = _line_starts(section, "@@ ")
    patched = _from_headers(section, headers)
    if patched is not None:
        found = _sliced(section, headers, patched, whole=True)
        if found is not None:
            return found
    patch = PatchSet(section, metadata_only=True)
    if len(patch) != 1:
        return None
    patched = patch[0]
    if len(headers) != len(patched):
        return None
    return _sliced(section, headers, patched, whole=False)


def _from_headers(section: str, headers: list[int]) -> PatchedFile | None:
    """The file of a section as unidiff's ``metadata_only`` parse of the whole section would
    give it, from its header alone and its hunk headers (`_sliced` with ``whole`` then checks
    the bodies as that parse would); None where that is not sure (no hunks, a header that does
    not end with the ``+++`` line, a hunk header unidiff would not read as one)."""
    if not headers:
        return None
    header = section[: headers[0]]
    if not header.startswith("+++ ", header.rfind("\n", 0, len(header) - 1) + 1):
        return None
    patched = _plain_git_header(header)
    if patched is None:
        patch = PatchSet(header, metadata_only=True)
        if len(patch) != 1:
            return None
        patched = patch[0]
    for start in headers:
        end = section.find("\n", start)
        match = RE_HUNK_HEADER.match(section[start : end if end >= 0 else len(section)])
        if match is None:
            return None
        # As unidiff reads a hunk header: a length left out is 1.
        lengths = [1 if match[group] is None else int(match[group]) for group in (2, 4)]
        patched.append(UnidiffHunk(int(match[1]), lengths[0], int(match[3]), lengths[1], match[5]))
    return patched


def _plain_git_header(header: str) -> PatchedFile | None:
    """The file of the commonest header (``diff --git``, ``index`` with a mode, ``---``, ``+++``),
    built as unidiff's parse builds it, line by line with unidiff's own patterns, without its
    parser's set-up; None for any other header (unidiff reads it)."""
    lines = header.split("\n")
    if len(lines) != 5 or lines[4]:
        return None
    git = RE_DIFF_GIT_HEADER.match(lines[0])
    index = RE_DIFF_GIT_INDEX.match(lines[1])
    source = RE_SOURCE_FILENAME.match(lines[2])
    target = RE_TARGET_FILENAME.match(lines[3])
    if git is None or index is None or source is None or target is None:
        return None
    if target["filename"] != git["target"]:
        return None  # unidiff refuses a target that is not the git header's: it reads it and says so
    info = PatchInfo()
    info.append(lines[0] + "\n")
    info.append(lines[1] + "\n")  # the ``---`` and ``+++`` lines are no patch info
    patched = PatchedFile(info, git["source"], git["target"], source["timestamp"], target["timestamp"])
    # What unidiff 1.0 also records (its type stubs predate them): the modes, where the file starts.
    vars(patched).update(source_mode=index["mode"], target_mode=index["mode"], diff_line_no=1)
    return patched


def _sliced(section: str, headers: list[int], patched: PatchedFile, whole: bool) -> list[FileChange] | None:
    """The hunks of ``section`` sliced from its text, with unidiff's metadata of them; None if a
    body is not plain. ``whole``: the metadata came from `_from_headers`, so the body must also be
    what unidiff's parse of the whole section would accept, hunk by hunk, with nothing after."""
    hunks = []
    for number, meta in enumerate(patched):
        start = section.find("\n", headers[number]) + 1 or len(section)
        end = headers[number + 1] if number + 1 < len(headers) else len(section)
        lines = section[start:end].split("\n")
        if lines[-1] == "":
            lines.pop()
        try:  # each line's first character, picked in C; a blank line has none
            types = "".join(map(_FIRST, lines))
        except IndexError:
            types = "".join([line[:1] or "?" for line in lines])
        if number == len(headers) - 1:
            # What follows the last hunk (a format-patch signature, a blank line) is not in it.
            keep = _hunk_length(types, meta.source_length, meta.target_length)
            if whole and keep < len(types):
                return None
            lines, types = lines[:keep], types[:keep]
        context = types.count(" ")
        if (
            _NOT_BODY.search(types)
            or context + types.count("-") != meta.source_length
            or context + types.count("+") != meta.target_length
        ):
            return None
        if whole and not _unidiff_would_close(lines, types):
            return None
        hunks.append(
            Hunk(
                meta.source_start,
                meta.target_start,
                meta.section_header,
                list(map(operator.add, map(_REST, lines), itertools.repeat("\n"))),  # line[1:] + "\n", in C
                types,
            )
        )
    return [_change(patched, hunks)]


def _unidiff_would_close(lines: list[str], types: str) -> bool:
    """Whether unidiff's parse reads a hunk of these (counted, plain) lines as one: it ends the
    hunk at its last counted line, so a marker line after that must be a "No newline" marker,
    and a hunk of no counted line it would not end at all."""
    if types[-1:] in (" ", "+", "-"):
        return True  # the commonest: the hunk ends with a counted line, nothing follows it
    last = max(types.rfind(" "), types.rfind("+"), types.rfind("-"))
    return last >= 0 and all(RE_NO_NEWLINE_MARKER.match(line) for line in lines[last + 1 :])


def _hunk_length(types: str, source_length: int, target_length: int) -> int:
    """How many of the lines typed ``types`` a hunk of those lengths spans (with the
    "No newline" markers that close it)."""
    context = types.count(" ")
    old, new = context + types.count("-"), context + types.count("+")
    if old < source_length or new < target_length:
        return len(types)  # never complete: all of it
    if old == source_length and new == target_length:
        # Complete at its last counted line (the common case: nothing follows), then its markers.
        end = max(types.rfind(" "), types.rfind("-"), types.rfind("+")) + 1
        rest = types[end:]
        return end + len(rest) - len(rest.lstrip("\\"))
    old = new = 0
    for index, kind in enumerate(types):
        if old >= source_length and new >= target_length and kind != "\\":
            return index
        if kind in " -":
            old += 1
        if kind in " +":
            new += 1
    return len(types)


def _change(patched: PatchedFile, hunks: list[Hunk]) -> FileChange:
    status = _status(patched)
    old = _strip_prefix(patched.source_file) if status in ("renamed", "copied") else None
    # Counted from the type strings: unidiff's own counts walk every line object again.
    added = sum(h.types.count("+") for h in hunks)
    removed = sum(h.types.count("-") for h in hunks)
    return FileChange(patched.path, old, status, patched.is_binary_file, added, removed, hunks)


def _from_unidiff(patch: PatchSet) -> list[FileChange]:
    changes = []
    for patched in patch:
        hunks = [
            Hunk(
                hunk.source_start,
                hunk.target_start,
                hunk.section_header,
                [line.value for line in hunk],
                "".join([line.line_type for line in hunk]),
            )
            for hunk in patched
        ]
        changes.append(_change(patched, hunks))
    return changes


def _strip_prefix(path: str | None) -> str | None:
    if path and path[:2] in ("a/", "b/"):
        return path[2:]
    return path


def _lenient(section: str, why: str) -> FileChange | None:
    """Read a damaged file section line by line, ignoring hunk counts."""
    lines = [line + "\n" for line in section.split("\n")]
    path = old = None
    hunks: list[Hunk] = []
    current: Hunk | None = None
    kinds: list[str] = []
    for line in lines:
        header = _HUNK_HEADER.match(line.rstrip("\n"))
        if header:
            _close(current, kinds, hunks)
            kinds = []
            current = Hunk(int(header[1]), int(header[2]), header[3], [], "")
        elif current is not None and line[:1] in ("+", "-", " "):
            current.texts.append(line[1:])
            kinds.append(line[0])
        elif current is None:
            path, old = _header_path(line, path, old)
    _close(current, kinds, hunks)
    if path is None:
        return None
    added = sum(h.types.count("+") for h in hunks)
    removed = sum(h.types.count("-") for h in hunks)
    status = "renamed" if old and old != path else "modified"
    return FileChange(
        path,
        old if status == "renamed" else None,
        status,
        False,
        added,
        removed,
        hunks,
        damaged=f"malformed diff ({why})",
    )


def _close(current: Hunk | None, kinds: list[str], hunks: list[Hunk]) -> None:
    if current is not None:
        current.types = "".join(kinds)
        hunks.append(current)


def _header_path(line: str, path: str | None, old: str | None) -> tuple[str | None, str | None]:
    line = line.rstrip("\n")
    if line.startswith("+++ ") and not line.startswith("+++ /dev/null"):
        return _strip_prefix(line[4:].split("\t")[0]), old
    if line.startswith("--- ") and not line.startswith("--- /dev/null"):
        source = _strip_prefix(line[4:].split("\t")[0])
        return path or source, source
    match = _GIT_PATHS.match(line)
    if match:
        return match[2], match[1]
    return path, old
