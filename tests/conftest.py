"""Fixtures shared by every test package."""

from __future__ import annotations

import os

import pytest

from tests.support.git_builder import IDENTITY, GitBuilder

# A local run ends with one line for what it skipped, and how to run it; python3 on PATH is an
# interpreter with nothing installed (the rounds' import path stays small: see the plugin).
pytest_plugins = ["tests.support.skip_summary", "tests.support.bare_python"]


@pytest.fixture
def git_builder(tmp_path, monkeypatch):
    """A fresh git repository with a fixed identity (never the machine's global config)."""
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.gitconfig of the machine leaks in
    root = tmp_path / "repo"
    root.mkdir()
    return GitBuilder(root, dict(os.environ))
