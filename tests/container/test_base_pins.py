"""The images' bases are pinned by digest: a tag alone (`debian:bookworm-slim`) can be moved by
whoever controls the registry to other contents, a digest cannot. Read from the Dockerfiles
themselves, so this runs without a container engine; CI's build passes its own BASE (a Debian
made with debootstrap), which an argument still allows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PINNED = re.compile(r"[a-z0-9./-]+(:[\w.-]+)?@sha256:[0-9a-f]{64}")


def bases(dockerfile: Path) -> list[str]:
    """What each FROM starts from, an ARG's default in place of ${ARG}; stages of the same file left out."""
    text = dockerfile.read_text()
    defaults = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.M))
    stages: set[str] = set()
    found = []
    for image, stage in re.findall(r"^FROM (\S+)(?: AS (\S+))?$", text, re.M | re.I):
        named = re.fullmatch(r"\$\{?(\w+)\}?", image)
        image = defaults.get(named.group(1), image) if named else image
        if image not in stages:
            found.append(image)
        if stage:
            stages.add(stage)
    return found


@pytest.mark.parametrize("name", ["Dockerfile", "runner.Dockerfile"])
def test_every_base_image_is_pinned_by_digest(name):
    found = bases(ROOT / name)
    assert found, f"no FROM in {name}"
    assert [image for image in found if not PINNED.fullmatch(image)] == []


def test_ci_builds_the_server_image_on_a_base_of_its_own():
    script = (ROOT / "tests/container/build_and_run.sh").read_text()
    assert '--build-arg "BASE=$BASE"' in script
