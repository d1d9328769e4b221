"""Fixtures shared by these tests (see tests/support/fixtures.py), and the store they run on."""

import pytest

from bot.adapters.store.sql import SqlStore
from tests.support.fixtures import *  # noqa: F403


@pytest.fixture
def sqlite_store(tmp_path):
    """The real store on a fresh SQLite file: handlers are tested on the rules they meet in production."""
    store = SqlStore.connect(f"sqlite:///{tmp_path / 'perfbot.db'}")
    yield store
    store.engine.dispose()
