"""The chart library is vendored, not fetched from a CDN: the committed files are exactly those of
the pinned npm package, whose tarball has the pinned integrity hash (checked with `npm pack`;
without npm or the registry the check skips locally and fails in CI)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from bot.web.dashboard import pages
from tests.support.missing import skip_or_fail

VENDOR = Path(pages.__file__).parent / "static" / "vendor" / "uplot"
TEMPLATES = Path(pages.__file__).parent / "templates"


def provenance() -> dict:
    return json.loads((VENDOR / "provenance.json").read_text())


def test_the_provenance_names_the_package_its_version_and_integrity_and_every_file_is_there():
    note = provenance()
    assert (note["package"], note["version"]) == ("uplot", "1.6.32")
    assert note["integrity"].startswith("sha512-")
    assert sorted(note["files"]) == sorted(p.name for p in VENDOR.iterdir() if p.name != "provenance.json")
    assert (
        (VENDOR / "uPlot.iife.min.js")
        .read_text()
        .startswith("/*! https://github.com/leeoniya/uPlot (v1.6.32) */")
    )


def test_pages_load_scripts_and_styles_from_this_server_only():
    external = re.compile(r"<(?:script|link)\b[^>]*\b(?:src|href)=\"(?:https?:)?//", re.IGNORECASE)
    for template in TEMPLATES.glob("*.html"):
        assert not external.search(template.read_text()), template.name


def test_the_vendored_files_are_those_of_npm_pack(tmp_path):
    npm = shutil.which("npm")
    if npm is None:
        skip_or_fail("npm is not installed")
    note = provenance()
    try:
        packed = subprocess.run(
            [npm, "pack", f"{note['package']}@{note['version']}", "--silent"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        skip_or_fail("npm pack timed out (no registry?)")
    if packed.returncode != 0:
        skip_or_fail(f"npm pack failed: {packed.stderr.strip()[:300]}")
    tarball = tmp_path / packed.stdout.strip().splitlines()[-1]
    digest = base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
    assert f"sha512-{digest}" == note["integrity"], "the registry's tarball is not the pinned one"
    with tarfile.open(tarball) as archive:
        for name, member in note["files"].items():
            extracted = archive.extractfile(member)
            assert extracted is not None, member
            assert extracted.read() == (VENDOR / name).read_bytes(), (
                f"{name} differs from {member} of the package"
            )


@pytest.mark.parametrize("name", ["uPlot.iife.min.js", "uPlot.min.css"])
def test_the_app_serves_the_vendored_files(name):
    from flask import Flask

    from bot.web.dashboard.pages import bp

    app = Flask("probe")
    app.register_blueprint(bp)
    answer = app.test_client().get(f"/static/dashboard/vendor/uplot/{name}")
    assert answer.status_code == 200 and answer.data == (VENDOR / name).read_bytes()
