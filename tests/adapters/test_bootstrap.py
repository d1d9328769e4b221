"""`bot.bootstrap.build` and `migrate`: a start that fails part-way leaves no connection of the store
open (the worker and the web workers try again every few seconds, each time with a new engine)."""

from __future__ import annotations

import pytest
from sqlalchemy import event
from sqlalchemy.pool import Pool

from bot import bootstrap
from bot.service.failures import QueueUnavailable
from bot.settings import Settings


@pytest.fixture
def open_connections():
    """How many DBAPI connections the engines made since the fixture started are holding open now."""
    opened: set[int] = set()
    listeners = {"connect": lambda dbapi_connection, _record: opened.add(id(dbapi_connection)),
                 "close": lambda dbapi_connection, _record: opened.discard(id(dbapi_connection)),
                 "close_detached": lambda dbapi_connection: opened.discard(id(dbapi_connection))}
    for name, listener in listeners.items():
        event.listen(Pool, name, listener)
    yield lambda: len(opened)
    for name, listener in listeners.items():
        event.remove(Pool, name, listener)


def test_a_queue_that_cannot_be_opened_leaves_no_connection_of_the_store_open(database_url, tmp_path,
                                                                              open_connections):
    settings = Settings.from_env({"PERFBOT_DATABASE_URL": database_url,
                                  "PERFBOT_QUEUE_URL": f"sqlite:///{tmp_path / 'no-such-dir' / 'huey.db'}"})
    for _ in range(3):  # the worker's retries
        with pytest.raises(QueueUnavailable):
            bootstrap.build(settings)
    assert open_connections() == 0, "each attempt's engine is disposed"


def test_a_built_runtime_holds_its_connections_until_closed(database_url, tmp_path, open_connections):
    runtime = bootstrap.build(Settings.from_env({"PERFBOT_DATABASE_URL": database_url,
                                                 "PERFBOT_QUEUE_URL": f"sqlite:///{tmp_path / 'huey.db'}"}))
    runtime.store.ping()
    assert open_connections() >= 1
    runtime.close()
    assert open_connections() == 0
