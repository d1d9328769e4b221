"""Fixtures shared by these tests (see tests/support/fixtures.py), and the test GitHub App's key."""

from tests.emulator.conftest import app_key  # noqa: F401
from tests.support.fixtures import *  # noqa: F403
