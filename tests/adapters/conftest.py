"""Fixtures shared by these tests (see tests/support/fixtures.py)."""

import pytest

from tests.support.fixtures import *  # noqa: F403


@pytest.fixture
def chattr(tmp_path):
    """``chattr(flags, *paths)``: set file attributes (root, on a filesystem with them); skips
    where that cannot be done, and clears what it set when the test ends."""
    import subprocess

    probe = tmp_path / ".chattr-probe"
    probe.write_text("x")
    if subprocess.run(["chattr", "+i", str(probe)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not possible here (needs root and an ext4-like filesystem)")
    subprocess.run(["chattr", "-i", str(probe)], check=True)
    probe.unlink()
    marked: set[str] = set()

    def run(flags: str, *paths: str) -> None:
        subprocess.run(["chattr", flags, *paths], check=True)
        marked.update(paths)

    yield run
    subprocess.run(["chattr", "-i", *marked], capture_output=True)
