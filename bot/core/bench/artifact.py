"""Read a results artifact (a zip archive from a GPU runner) as untrusted input.

Nothing is written to disk. Only regular files at the top level named ``*.json`` or ``*.md`` are
read; entries in folders, links, and anything else are skipped and named. Every read is capped, so
that a zip bomb (small archive, huge contents, or entries claiming false sizes) stops at the cap
instead of filling memory.
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


class _TooLarge(Exception):
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
    """The entry's bytes, never more than ``limit`` read (whatever size its header claims)."""
    if entry.file_size > limit:
        raise _TooLarge
    with archive.open(entry) as stream:
        content = stream.read(limit + 1)
    if len(content) > limit:
        raise _TooLarge
    return content


def _name(name: str) -> str:
    return clip(printable(name), 80)
