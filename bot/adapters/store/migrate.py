"""Bring a database to the newest schema with the packaged Alembic migrations, and tell a
migration refused by the schema it found (`SchemaNotMigrated`: a person must look) from a database
that cannot be used now (the driver's errors, which the store reports as `StorageUnavailable`)."""

from __future__ import annotations

import sqlite3

from alembic import command
from alembic.config import Config
from alembic.util import CommandError
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from bot.service.failures import SchemaNotMigrated

# Any constant works; it only has to be the same in every replica that migrates at start-up.
_PG_LOCK = 0x70657266
# PostgreSQL's SQLSTATE classes of a statement wrong for the schema or data it met: syntax error or
# access rule violation (a duplicate column or table, no such column, permission denied), integrity
# constraint violation, data exception, feature not supported, dependent objects still exist.
_SCHEMA_SQLSTATE_CLASSES = ("42", "23", "22", "0A", "2B")


def upgrade(engine: Engine) -> None:
    """Apply every migration not yet applied; safe to call from several replicas at once.

    A migration the schema refuses is tried once more, for a process that migrated the same
    SQLite file at the same moment (its DDL is not transactional there): it is at the newest
    schema now, and nothing is left to do. Refused again, `SchemaNotMigrated`, saying why the
    first attempt was."""
    try:
        _upgrade(engine)
    except (DBAPIError, CommandError) as first:
        if not _schema_error(first):
            raise
        try:
            _upgrade(engine)
        except (DBAPIError, CommandError) as error:
            if not _schema_error(error):
                raise
            why = str(first.orig if isinstance(first, DBAPIError) else first).strip().splitlines()
            raise SchemaNotMigrated(
                f"the database's schema could not be migrated: {why[0] if why else type(first).__name__}"
            ) from first


def _upgrade(engine: Engine) -> None:
    config = Config()
    config.set_main_option("script_location", "bot.adapters.store:migrations")
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK})
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def _schema_error(error: DBAPIError | CommandError) -> bool:
    """The migration failed on the schema it met (its SQL was refused), not on a database away,
    locked, full or read-only: alembic's own errors (a revision it does not know), SQLite's
    generic SQL error or a constraint, PostgreSQL's classes of a refused statement."""
    if isinstance(error, CommandError):
        return True
    if error.connection_invalidated:
        return False
    orig = error.orig
    if isinstance(orig, sqlite3.Error):
        code = getattr(orig, "sqlite_errorcode", None)
        return code is not None and code & 0xFF in (sqlite3.SQLITE_ERROR, sqlite3.SQLITE_CONSTRAINT)
    sqlstate = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    return isinstance(sqlstate, str) and sqlstate[:2] in _SCHEMA_SQLSTATE_CLASSES
