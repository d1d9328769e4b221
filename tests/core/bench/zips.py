"""Zip archives for tests: what `actions/upload-artifact` makes, and what an attacker could upload."""

from __future__ import annotations

import io
import stat
import zipfile


def archive(
    files: dict[str, bytes | str], *, links: dict[str, str] | None = None, folders: tuple[str, ...] = ()
) -> bytes:
    """A zip of regular ``files`` (names used as they are, even ``../x`` or ``/etc/x``), symbolic
    ``links`` (name -> target) and empty ``folders``."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in files.items():
            zf.writestr(name, content)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
        for name in folders:
            zf.writestr(zipfile.ZipInfo(name.rstrip("/") + "/"), b"")
    return out.getvalue()


def bomb(uncompressed: int, name: str = "results.json") -> bytes:
    """A small archive that expands to ``uncompressed`` bytes."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf,
        zf.open(name, "w", force_zip64=True) as entry,
    ):
        chunk = b"\0" * (1 << 20)
        for _ in range(uncompressed >> 20):
            entry.write(chunk)
    return out.getvalue()


def lying_sizes(name: str, content: bytes, claimed: int) -> bytes:
    """An archive whose central directory claims a smaller size than the entry expands to."""
    data = bytearray(archive({name: content}))
    real = len(content).to_bytes(4, "little")
    fake = claimed.to_bytes(4, "little")
    return bytes(data.replace(real, fake))
