"""Mermaid, the library GitHub renders ```mermaid blocks of comments with, for the browser test that
looks at the PR comment's chart: the npm registry's release, pinned by its SHA-256 and kept in
.cache (never part of perfbot itself, which only writes the diagram's text)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERSION = "11.17.2"
SHA256 = "6ad2f42c3fc26bbf9e45cbb6d11898972573ea52b33a5f4ff51952899f950ffd"
CACHE = ROOT / ".cache" / f"mermaid-{VERSION}"
SCRIPT = CACHE / "mermaid.min.js"


class MissingMermaid(RuntimeError):
    """Mermaid is not in the cache and could not be fetched (no npm, no registry, wrong checksum)."""


def ensure() -> Path:
    """The path of mermaid.min.js, fetched with `npm pack` the first time."""
    if SCRIPT.is_file():
        return SCRIPT
    npm = shutil.which("npm")
    if npm is None:
        raise MissingMermaid("npm is not installed (apt-get install npm)")
    CACHE.mkdir(parents=True, exist_ok=True)
    packed = subprocess.run(
        [npm, "pack", "--silent", f"mermaid@{VERSION}"],
        cwd=CACHE,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    archive = CACHE / f"mermaid-{VERSION}.tgz"
    if packed.returncode != 0 or not archive.is_file():
        raise MissingMermaid(f"npm pack mermaid@{VERSION} failed: {packed.stderr.strip()[-300:]}")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != SHA256:
        raise MissingMermaid(f"mermaid-{VERSION}.tgz has SHA-256 {digest}, expected {SHA256}")
    with tarfile.open(archive) as packed_files:
        member = packed_files.extractfile("package/dist/mermaid.min.js")
        if member is None:
            raise MissingMermaid(f"mermaid-{VERSION}.tgz holds no package/dist/mermaid.min.js")
        SCRIPT.write_bytes(member.read())
    return SCRIPT
