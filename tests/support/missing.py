"""What a test does when something it needs is missing: skip on a developer's machine, fail in CI
(CI=true), where `.ci/run` installs and starts everything and a skip would hide a broken set-up."""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def skip_or_fail(reason: str) -> NoReturn:
    if IN_CI:
        pytest.fail(f"{reason} (CI must provide it)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def importorskip(name: str) -> ModuleType:
    """`pytest.importorskip` that fails under CI."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        skip_or_fail(f"{name} is not installed ({error})")
