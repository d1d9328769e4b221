"""`bot.bootstrap.build` and `migrate`: a start that fails part-way leaves no connection of the store
open (the worker and the web workers try again every few seconds, each time with a new engine),
and a schema migration that fails on what it finds is said to be that, not an unavailable database."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import event, text
from sqlalchemy.pool import Pool

from bot import bootstrap
from bot.adapters.store.database import make_engine
from bot.service.failures import QueueUnavailable, SchemaNotMigrated, StorageUnavailable, Transient
from bot.settings import Settings


@pytest.fixture
def open_connections():
    """How many DBAPI connections the engines made since the fixture started are holding open now."""
    opened: set[int] = set()
    listeners = {
        "connect": lambda dbapi_connection, _record: opened.add(id(dbapi_connection)),
        "close": lambda dbapi_connection, _record: opened.discard(id(dbapi_connection)),
        "close_detached": lambda dbapi_connection: opened.discard(id(dbapi_connection)),
    }
    for name, listener in listeners.items():
        event.listen(Pool, name, listener)
    yield lambda: len(opened)
    for name, listener in listeners.items():
        event.remove(Pool, name, listener)


def test_a_queue_that_cannot_be_opened_leaves_no_connection_of_the_store_open(
    database_url, tmp_path, open_connections
):
    settings = Settings.from_env(
        {
            "PERFBOT_DATABASE_URL": database_url,
            "PERFBOT_QUEUE_URL": f"sqlite:///{tmp_path / 'no-such-dir' / 'huey.db'}",
        }
    )
    for _ in range(3):  # the worker's retries
        with pytest.raises(QueueUnavailable):
            bootstrap.build(settings)
    assert open_connections() == 0, "each attempt's engine is disposed"


def test_a_built_runtime_holds_its_connections_until_closed(database_url, tmp_path, open_connections):
    runtime = bootstrap.build(
        Settings.from_env(
            {"PERFBOT_DATABASE_URL": database_url, "PERFBOT_QUEUE_URL": f"sqlite:///{tmp_path / 'huey.db'}"}
        )
    )
    runtime.store.ping()
    assert open_connections() >= 1
    runtime.close()
    assert open_connections() == 0


def sqlite_with_a_conflicting_column(tmp_path) -> str:
    """A SQLite database at the schema before 0006, with a column 0006 adds already there."""
    url = f"sqlite:///{tmp_path / 'perfbot.db'}"
    engine = make_engine(url)
    config = Config()
    config.set_main_option("script_location", "bot.adapters.store:migrations")
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0005")
        connection.execute(text("ALTER TABLE deliveries ADD COLUMN subject VARCHAR(220)"))
    engine.dispose()
    return url


@pytest.mark.parametrize("start", [bootstrap.build, bootstrap.migrate])
def test_a_migration_that_fails_on_the_schema_it_finds_is_no_unavailable_database(
    tmp_path, open_connections, start
):
    settings = Settings.from_env(
        {
            "PERFBOT_DATABASE_URL": sqlite_with_a_conflicting_column(tmp_path),
            "PERFBOT_QUEUE_URL": f"sqlite:///{tmp_path / 'huey.db'}",
        }
    )
    with pytest.raises(SchemaNotMigrated) as raised:
        start(settings)
    assert not isinstance(raised.value, Transient), "waiting would not help: not tried again"
    assert str(raised.value) == "the database's schema could not be migrated: duplicate column name: subject"
    assert open_connections() == 0


def test_a_database_that_cannot_be_reached_is_still_unavailable(tmp_path):
    settings = Settings.from_env(
        {
            "PERFBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'no-such-dir' / 'perfbot.db'}",
            "PERFBOT_QUEUE_URL": f"sqlite:///{tmp_path / 'huey.db'}",
        }
    )
    with pytest.raises(StorageUnavailable):
        bootstrap.build(settings)


def test_a_database_newer_than_this_version_cannot_be_migrated(tmp_path):
    url = f"sqlite:///{tmp_path / 'perfbot.db'}"
    bootstrap.migrate(Settings.from_env({"PERFBOT_DATABASE_URL": url}))
    engine = make_engine(url)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with pytest.raises(SchemaNotMigrated, match="could not be migrated: .*9999"):
        bootstrap.migrate(Settings.from_env({"PERFBOT_DATABASE_URL": url}))
