"""Read a results artifact (a zip archive from a GPU runner) as untrusted input.

Nothing is written to disk. Only regular files at the top level named ``*.json`` or ``*.md`` are
read; entries in folders, links, and anything else are skipped and named. Every read is capped, so
that a zip bomb (small archive, huge contents, or entries claiming false sizes) stops at the cap
instead of filling memory. A JSON file is also capped by what parsing it would cost: each value
becomes a Python object of 30 to 70 bytes (an empty object ``{}`` of 2 bytes: 72), so a file of
millions of tiny values, within the byte caps and compressing to a few KB, would cost whoever
parses it close to a GB; one of over `MAX_JSON_VALUES` values is skipped before anyone does.
"""

from __future__ import annotations

import io
import re
import stat
import zipfile
import zlib
from dataclasses import dataclass, field

from bot.core.text import clip, printable

MAX_ENTRIES = 64
MAX_FILE_BYTES = 32 * 2**20
MAX_TOTAL_BYTES = 64 * 2**20
# A results file holds rounds of a few dozen metrics and, profiled, a step map of some thousand
# kernels: tens of thousands of values. Parsed, a million cost about 70 MB at worst.
MAX_JSON_VALUES = 1_000_000
_CHUNK = 2**20
_READABLE = re.compile(r"[A-Za-z0-9._-]{1,120}\.(?:json|md)")


class ArtifactError(ValueError):
    """The artifact cannot be read at all; the message is one line."""


@dataclass(frozen=True)
class Artifact:
    """The readable files by name, and what was skipped (each a short line naming the entry)."""

    files: dict[str, bytes]
    skipped: tuple[str, ...] = field(default=())


def read(data: bytes, max_file: int = MAX_FILE_BYTES, max_total: int = MAX_TOTAL_BYTES) -> Artifact:
    """The top-level ``*.json``/``*.md`` files of a zip archive, each read up to ``max_file`` bytes
    and all together up to ``max_total``."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError):
        raise ArtifactError("the artifact is not a readable zip archive") from None
    with archive:
        entries = archive.infolist()
        if len(entries) > MAX_ENTRIES:
            raise ArtifactError(f"the artifact holds {len(entries)} entries; at most {MAX_ENTRIES} are read")
        files: dict[str, bytes] = {}
        skipped: list[str] = []
        total = 0
        for entry in entries:
            why = _unreadable(entry)
            if why is not None:
                skipped.append(f"{_name(entry.filename)}: {why}")
                continue
            try:
                content = _read_capped(archive, entry, min(max_file, max_total - total))
            except _TooManyValues:
                skipped.append(f"{_name(entry.filename)}: holds over {MAX_JSON_VALUES:,} JSON values")
                continue
            except _TooLarge:
                limit = min(max_file, max_total - total)
                skipped.append(f"{_name(entry.filename)}: larger than {limit:,} bytes uncompressed")
                if limit < max_file:
                    break
                continue
            except (zipfile.BadZipFile, zlib.error, RuntimeError, NotImplementedError, EOFError, OSError):
                skipped.append(f"{_name(entry.filename)}: cannot be decompressed")
                continue
            total += len(content)
            files[entry.filename] = content
    return Artifact(files, tuple(skipped))


def json_values(content: bytes) -> int:
    """At least as many as the values, keys and containers the JSON text holds (every one but the
    first follows a ``,``, ``:``, ``[`` or ``{``), counted without parsing it; a comma or colon
    inside a string counts too, which only errs on the safe side."""
    return content.count(b",") + content.count(b":") + content.count(b"[") + content.count(b"{") + 1


class _TooLarge(Exception):
    pass


class _TooManyValues(Exception):
    pass


def _unreadable(entry: zipfile.ZipInfo) -> str | None:
    """Why an entry is skipped, or None for a regular top-level results or summary file."""
    if entry.is_dir():
        return "a folder"
    kind = stat.S_IFMT(entry.external_attr >> 16)  # archives made off Unix carry no file type
    if kind and kind != stat.S_IFREG:
        return "not a regular file (a link or a device)"
    if "/" in entry.filename or "\\" in entry.filename or entry.filename.startswith(".."):
        return "not at the top level of the artifact"
    if not _READABLE.fullmatch(entry.filename):
        return "not a *.json or *.md file"
    if entry.flag_bits & 0x1:
        return "encrypted"
    return None


def _read_capped(archive: zipfile.ZipFile, entry: zipfile.ZipInfo, limit: int) -> bytes:
    """The entry's bytes, never more than ``limit`` read (whatever size its header claims); a JSON
    file's read stops as soon as it holds over `MAX_JSON_VALUES` values (`_TooManyValues`)."""
    if entry.file_size > limit:
        raise _TooLarge
    counted = entry.filename.endswith(".json")
    chunks, size, values = [], 0, 1
    with archive.open(entry) as stream:
        while chunk := stream.read(min(_CHUNK, limit + 1 - size)):
            size += len(chunk)
            if size > limit:
                raise _TooLarge
            if counted:
                values += json_values(chunk) - 1
                if values > MAX_JSON_VALUES:
                    raise _TooManyValues
            chunks.append(chunk)
    return b"".join(chunks)


def _name(name: str) -> str:
    return clip(printable(name), 80)
