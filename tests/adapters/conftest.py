"""Fixtures shared by these tests (see tests/support/fixtures.py)."""

from tests.support.fixtures import *  # noqa: F403
