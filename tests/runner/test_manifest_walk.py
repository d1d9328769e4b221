"""The integrity manifest read by GNU find (fast, before every round) is the one Python's walk reads:
every entry, the same type, mode, size, times and inode, the same folders left out; and where find
cannot answer, Python's walk answers."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from bot.runner import integrity

pytestmark = pytest.mark.skipif(shutil.which("find") is None, reason="no find on this machine")


def tree(root: Path) -> Path:
    (root / "pkg" / "__pycache__").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0" * 10)
    (root / "name with spaces.txt").write_text("a")
    (root / "new\nline.py").write_text("b")
    (root / os.fsdecode(b"not-utf8-\xff.py")).write_text("c")
    (root / "link").symlink_to("pkg/mod.py")
    (root / "dangling").symlink_to("nowhere")
    os.mkfifo(root / "fifo")
    (root / "setuid").write_text("d")
    os.chmod(root / "setuid", 0o4755)
    (root / "lib" / "site-packages" / "hidden").mkdir(parents=True)  # a skipped name, anywhere
    (root / "lib" / "site-packages" / "hidden" / "hook.pth").write_text("import os\n")
    (root / "skip[me]*" / "inside").mkdir(parents=True)  # a skipped path with wildcard characters
    (root / "skipme").mkdir()  # not skipped: the pattern is taken literally
    (root / "site-packages").write_text("a file of a skipped folder's name is kept\n")
    return root


def test_find_reads_the_same_manifest_as_python(tmp_path):
    root = tree(tmp_path / "t")
    names = frozenset(integrity._OTHER_ENVIRONMENTS)
    paths = frozenset({str(root / "skip[me]*")})
    found = integrity._found(root, names, paths)
    assert found is not None, "GNU find answered"
    assert found == integrity._walked(root, names, paths)
    assert "lib/site-packages" not in found and "skip[me]*" not in found and "skipme" in found
    assert "new\nline.py" in found and "site-packages" in found
    whole = integrity.manifest(root, names, [str(root / "skip[me]*")])
    assert whole[""] == integrity._entry(root.lstat()) and set(whole) == {"", *found}


def test_find_reads_an_interpreter_s_site_packages_as_python_does():
    root = Path(site.getsitepackages()[0])
    names = frozenset(integrity._OTHER_ENVIRONMENTS)
    assert integrity._found(root, names, frozenset()) == integrity._walked(root, names, frozenset())


def test_a_change_is_seen_through_find(tmp_path):
    root = tree(tmp_path / "t")
    before = integrity.manifest(root)
    (root / "pkg" / "mod.py").write_text("x = 2\n")  # same size: mtime and ctime tell
    assert integrity.changes(before, integrity.manifest(root)) == ["changed pkg/mod.py"]


def test_where_find_fails_python_walks(tmp_path, monkeypatch):
    root = tree(tmp_path / "t")
    expected = integrity._walked(root, frozenset(), frozenset())
    real = subprocess.run

    def broken(argv, **kwargs):
        return real([sys.executable, "-c", "import sys; sys.exit(1)"], **kwargs)

    monkeypatch.setattr(integrity.subprocess, "run", broken)
    assert integrity._found(root, frozenset(), frozenset()) is None
    assert {k: v for k, v in integrity.manifest(root).items() if k} == expected
