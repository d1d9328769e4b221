"""One database shared by the store's aggregates: the engine (SQLite with WAL, or PostgreSQL),
short transactions, and the writer lock that queues SQLite's writers across threads and processes.
A database that cannot be reached or written raises the service's `StorageUnavailable`, whatever
the driver's own error was."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime

from sqlalchemy import URL, Connection, Engine, Table, create_engine, event, make_url, text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from bot.service.failures import StorageUnavailable

from ..sqlite_files import AUTOCHECKPOINT_PAGES, WriterLock, check_writable, lock_file_beside
from .tables import Base


def table(row: type[Base]) -> Table:
    """The table of a declarative class (whose ``__table__`` SQLAlchemy types loosely)."""
    return Base.metadata.tables[row.__tablename__]


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite gets WAL and a busy timeout so threads can share it."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def sqlite_file(url: str | URL) -> str | None:
    """The file of a SQLite database URL; None for another database, or one in memory or by URI."""
    url = make_url(url)
    database = url.database if url.get_backend_name() == "sqlite" else None
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return database


def now() -> datetime:
    return datetime.now(UTC)


def utc(value: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; everything stored is UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


class Database:
    """The engine and its transactions. Every write goes through `session` or `transaction`, which
    hold the writer lock on SQLite: one writer at a time, and a writer that finds the file locked
    would otherwise sleep in growing steps (up to 100 ms)."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.dialect = engine.dialect.name
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._writer = _writer_lock(engine)
        self._file = sqlite_file(engine.url) if self.dialect == "sqlite" else None

    @contextmanager
    def session(self) -> Iterator[Session]:
        with self.usable(), self._writer, self._sessions.begin() as session:
            yield session

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        with self.usable(), self._writer, self.engine.begin() as connection:
            yield connection

    def ping(self) -> None:
        with self.usable(), self.engine.connect() as connection:
            connection.execute(text("SELECT 1"))

    @contextmanager
    def usable(self) -> Iterator[None]:
        """Refuse before any connection is touched (opened, used or closed) while the SQLite file
        cannot be written: its WAL index would SIGBUS the process (`sqlite_files`)."""
        if self._file is not None:
            check_writable(self._file)
        with _unavailable_as_such():
            yield


@contextmanager
def _unavailable_as_such() -> Iterator[None]:
    """The driver's errors of a database that is down, restarting, locked, full or read-only as
    `StorageUnavailable` (transient: the caller may try again); a broken constraint stays itself."""
    try:
        yield
    except OperationalError as error:
        raise StorageUnavailable(f"the database is unavailable: {_first_line(error.orig)}") from error
    except DBAPIError as error:
        if not error.connection_invalidated:
            raise
        raise StorageUnavailable(f"the database connection broke: {_first_line(error.orig)}") from error


def _first_line(error: BaseException | None) -> str:
    text = str(error or "").strip()
    return text.splitlines()[0] if text else type(error).__name__


def _writer_lock(engine: Engine) -> WriterLock | nullcontext:
    if engine.dialect.name != "sqlite":
        return nullcontext()
    database = sqlite_file(engine.url)
    return WriterLock(lock_file_beside(database) if database else None)
