"""Fixtures shared by these tests (see tests/support/fixtures.py)."""

from __future__ import annotations

from tests.support.fixtures import *  # noqa: F403
