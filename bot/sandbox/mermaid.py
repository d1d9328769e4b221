"""Mermaid for the sandbox's thread page: GitHub draws a comment's ```mermaid blocks (the bot's
round charts) with it, so the sandbox's page does too. The npm registry's release, pinned by its
SHA-256, is fetched once with `npm pack` into a cache beside the sandbox's folder and served by the
stand-in; where it cannot be had (no npm, no registry), the page shows each chart's source and
says why, as GitHub would without JavaScript."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tarfile
from pathlib import Path

VERSION = "11.17.2"
SHA256 = "6ad2f42c3fc26bbf9e45cbb6d11898972573ea52b33a5f4ff51952899f950ffd"  # of mermaid-VERSION.tgz
SCRIPT = "mermaid.min.js"
FETCH_TIMEOUT_S = 90


class Unavailable(RuntimeError):
    """Mermaid is neither cached nor fetchable (no npm, no registry, a checksum that differs)."""


def script(cache: Path) -> Path:
    """The path of mermaid.min.js in ``cache``/mermaid-VERSION, fetched the first time."""
    folder = cache / f"mermaid-{VERSION}"
    found, archive = folder / SCRIPT, folder / f"mermaid-{VERSION}.tgz"
    if found.is_file() and archive.is_file() and _digest(archive) == SHA256:
        return found
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable("npm is not installed")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        packed = subprocess.run(
            # Offline, npm would retry for minutes before it gave up: once, and briefly.
            [npm, "pack", "--silent", "--fetch-retries=0", "--fetch-timeout=20000", f"mermaid@{VERSION}"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=FETCH_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise Unavailable(f"npm pack mermaid@{VERSION} took over {FETCH_TIMEOUT_S} s") from None
    if packed.returncode != 0 or not archive.is_file():
        raise Unavailable(f"npm pack mermaid@{VERSION} failed: {packed.stderr.strip()[-200:]}")
    digest = _digest(archive)
    if digest != SHA256:
        archive.unlink()
        raise Unavailable(f"mermaid-{VERSION}.tgz has SHA-256 {digest}, not the pinned {SHA256}")
    with tarfile.open(archive) as files:
        member = files.extractfile("package/dist/mermaid.min.js")
        if member is None:
            raise Unavailable(f"mermaid-{VERSION}.tgz holds no package/dist/mermaid.min.js")
        found.write_bytes(member.read())
    return found


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
