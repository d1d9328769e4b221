"""`provenance.verify`: a worktree holds the commit it names, and its packages import from it."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from bot.core.config.schema import BenchConfig
from bot.core.config.suite_kinds.command import CommandSuite
from bot.runner import provenance
from bot.runner.suites import make_suite

PYTHON = shutil.which("python3") or sys.executable


def suite(env=None):
    config = BenchConfig(suites={"spin": CommandSuite(kind="command", command="true", env=env or {})})
    return make_suite("spin", config, python=PYTHON)


@pytest.fixture
def checkout(git_builder, tmp_path):
    """A worktree of a commit with a package at its root, a test folder and a docs folder."""
    sha = git_builder.commit(
        "engine",
        {
            "engine/__init__.py": "",
            "engine/pynccl.py": "SPINS = 1\n",
            "tests/__init__.py": "",
            "docs/index.md": "# engine\n",
        },
    )
    tree = tmp_path / "tree"
    git_builder.git("worktree", "add", "-q", "--detach", str(tree), sha)
    return tree, sha, git_builder


def test_a_clean_checkout_whose_package_imports_from_it_is_verified(checkout):
    tree, sha, _ = checkout
    checked = provenance.verify(tree, sha, suite(), "before the rounds")
    assert (checked.imported, checked.unverified) == (("engine",), ())
    assert checked.describe() == f"{sha[:10]} checked out unmodified, engine imported from it"
    (tree / "engine" / "__pycache__").mkdir()  # what Python writes there is not a change
    (tree / "engine" / "__pycache__" / "pynccl.cpython-311.pyc").write_bytes(b"\0")
    assert provenance.verify(tree, sha, suite(), "after the rounds") == checked


def test_a_checkout_that_moved_or_whose_tracked_files_changed_is_refused(checkout):
    tree, sha, builder = checkout
    (tree / "engine" / "pynccl.py").write_text("SPINS = 2\n")
    with pytest.raises(
        provenance.ProvenanceError,
        match=f"tracked files of the worktree {tree} "
        rf"\({sha[:10]}\) differ from the commit after the rounds",
    ):
        provenance.verify(tree, sha, suite(), "after the rounds")
    later = builder.commit("next", {"engine/server.py": "PORT = 2\n"})
    with pytest.raises(
        provenance.ProvenanceError,
        match=f"the worktree {tree} of {later[:10]} is at "
        f"{sha[:10]} before the rounds: something moved its checkout",
    ):
        provenance.verify(tree, later, suite(), "before the rounds")


def test_a_package_that_another_copy_shadows_is_refused(git_builder, tmp_path):
    """The engine's package lives under python/ and an installed copy (an editable install of the
    main checkout, say) is what the interpreter finds: every probe would measure that copy."""
    sha = git_builder.commit("layout", {"python/engine/__init__.py": "", "README.md": "x\n"})
    tree = tmp_path / "tree"
    git_builder.git("worktree", "add", "-q", "--detach", str(tree), sha)
    elsewhere = tmp_path / "main" / "python" / "engine"
    elsewhere.mkdir(parents=True)
    (elsewhere / "__init__.py").write_text("")
    with pytest.raises(provenance.ProvenanceError) as refused:
        provenance.verify(tree, sha, suite({"PYTHONPATH": str(elsewhere.parent)}), "before the rounds")
    message = str(refused.value)
    assert f"imports engine from {elsewhere / '__init__.py'}, not from the worktree of {sha[:10]}" in message
    assert "every run would measure that copy" in message


def test_packages_under_python_that_are_not_on_the_path_are_unverified_not_refused(git_builder, tmp_path):
    sha = git_builder.commit(
        "layout", {"python/engine/__init__.py": "", "python/tools/__init__.py": "", "README.md": "x\n"}
    )
    tree = tmp_path / "tree"
    git_builder.git("worktree", "add", "-q", "--detach", str(tree), sha)
    assert provenance.top_level_packages(tree) == ["engine"]
    checked = provenance.verify(tree, sha, suite(), "before the rounds")
    assert (checked.imported, checked.unverified) == ((), ("engine",))
    assert "engine not importable from its root: unverified" in checked.describe()
    on_path = provenance.verify(tree, sha, suite({"PYTHONPATH": str(tree / "python")}), "before the rounds")
    assert on_path.imported == ("engine",)


def test_an_interpreter_that_cannot_answer_is_an_error(checkout, tmp_path):
    tree, sha, _ = checkout
    broken = suite()
    broken.python = str(tmp_path / "no-such-python")
    with pytest.raises(
        provenance.ProvenanceError, match="cannot ask .*no-such-python where it imports engine"
    ):
        provenance.verify(tree, sha, broken, "before the rounds")


def test_without_a_python_of_its_own_the_messages_name_python3_the_interpreter_asked(
    git_builder, tmp_path, monkeypatch
):
    """A suite with no python runs python3 on PATH: the refusals say so, never "None"."""
    sha = git_builder.commit("layout", {"python/engine/__init__.py": "", "README.md": "x\n"})
    tree = tmp_path / "tree"
    git_builder.git("worktree", "add", "-q", "--detach", str(tree), sha)
    default = suite()
    default.python = None
    elsewhere = tmp_path / "main" / "python" / "engine"
    elsewhere.mkdir(parents=True)
    (elsewhere / "__init__.py").write_text("")
    shadowed = suite({"PYTHONPATH": str(elsewhere.parent)})
    shadowed.python = None
    with pytest.raises(provenance.ProvenanceError, match=r"^python3 imports engine from "):
        provenance.verify(tree, sha, shadowed, "before the rounds")

    def unstartable(*args, **kwargs):
        raise OSError("exec format error")

    monkeypatch.setattr(provenance.subprocess, "run", unstartable)
    with pytest.raises(
        provenance.ProvenanceError,
        match="^cannot ask python3 where it imports engine from: exec format error$",
    ):
        provenance.verify(tree, sha, default, "before the rounds")

    def failing(command, **kwargs):
        return subprocess.CompletedProcess(command, 1, "", "Traceback...\nImportError: broken site\n")

    monkeypatch.setattr(provenance.subprocess, "run", failing)
    with pytest.raises(
        provenance.ProvenanceError,
        match="^cannot ask python3 where it imports engine from: ImportError: broken site$",
    ):
        provenance.verify(tree, sha, default, "before the rounds")
