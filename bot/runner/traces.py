"""Reading the Kineto / Chrome trace files a profiled pass leaves behind (PyTorch's profiler, SGLang's
and vLLM's): find them, decompress them under a size cap, and hand their JSON to the core reader
(`bot.core.judge.kineto`), which also reads the per-step map's frames where the trace names them."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from bot.core.judge import kineto
from bot.core.judge.profile import Profile

MAX_TRACE_BYTES = 512 * 2**20  # decompressed; an engine's trace of a few steps is far smaller
TRACE_SUFFIXES = (".json", ".json.gz")


class TraceUnreadable(ValueError):
    """A trace file that is missing, too large or not a trace; one line."""


def read(path: Path, what: str) -> Profile:
    """The profile of the trace at ``path`` (``.json`` or ``.json.gz``)."""
    return read_traced(path, what).profile


def read_traced(path: Path, what: str) -> kineto.Traced:
    """The profile of the trace at ``path`` and, where it names the repository's frames, the
    per-step map's entries (`kineto.Traced`)."""
    try:
        raw = path.read_bytes() if path.stat().st_size <= MAX_TRACE_BYTES else None
    except OSError as error:
        raise TraceUnreadable(f"{path.name}: {error.strerror or error}") from None
    if raw is None:
        raise TraceUnreadable(f"{path.name}: larger than {MAX_TRACE_BYTES // 2**20} MiB")
    if raw[:2] == b"\x1f\x8b":
        raw = _gunzip(raw, path.name)
    try:
        return kineto.read(raw, path.name, what)
    except kineto.TraceError as error:
        raise TraceUnreadable(str(error)) from None


def _gunzip(raw: bytes, name: str) -> bytes:
    reader = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = reader.decompress(raw, MAX_TRACE_BYTES + 1)
    except (zlib.error, gzip.BadGzipFile) as error:
        raise TraceUnreadable(f"{name}: not a gzip file ({error})") from None
    if len(data) > MAX_TRACE_BYTES:
        raise TraceUnreadable(f"{name}: larger than {MAX_TRACE_BYTES // 2**20} MiB once decompressed")
    return data


def find(folder: Path, prefer: str = "") -> Path:
    """The trace a profiled pass wrote into ``folder`` (searched recursively): the newest whose name
    holds ``prefer`` (SGLang names rank 0's ``...TP-0...``), else the newest of all."""
    found = [p for p in folder.rglob("*") if p.is_file() and p.name.endswith(TRACE_SUFFIXES)]
    if not found:
        raise TraceUnreadable(f"no trace (*.json, *.json.gz) was written to {folder.name}/")
    preferred = [p for p in found if prefer and prefer in p.name] or found
    return max(preferred, key=lambda p: (p.stat().st_mtime, p.name))
