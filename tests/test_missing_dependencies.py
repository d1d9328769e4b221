"""A missing module or service skips a test locally and fails it in CI."""

from __future__ import annotations

import pytest

from tests.support import missing


def test_a_missing_module_skips_locally(monkeypatch):
    monkeypatch.setattr(missing, "IN_CI", False)
    with pytest.raises(pytest.skip.Exception, match="no_such_module_xyz is not installed"):
        missing.importorskip("no_such_module_xyz")


def test_a_missing_module_fails_in_ci(monkeypatch):
    monkeypatch.setattr(missing, "IN_CI", True)
    with pytest.raises(
        pytest.fail.Exception, match="no_such_module_xyz is not installed.*CI must provide it"
    ):
        missing.importorskip("no_such_module_xyz")


def test_an_installed_module_is_returned():
    assert missing.importorskip("json").dumps([]) == "[]"
