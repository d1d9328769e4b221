"""One database shared by the store's aggregates: the engine (SQLite with WAL, or PostgreSQL),
short transactions, and the writer lock that queues SQLite's writers across threads and processes.
A database that cannot be reached or written raises the service's `StorageUnavailable`, whatever
the driver's own error was.

How long a call waits for a SQLite file that someone else is writing (a backup, a `sqlite3` shell
inside a transaction, another writer waiting on those) is the caller's to say: the intake and
`/healthz` run under a short `bot.service.deadline`, which bounds both the wait for the writer
lock and SQLite's busy timeout; any other call (a consumer's) waits up to `WAIT_S`.

`Database.together` makes the calls of a block one transaction, one hold of the writer lock: a
queue consumer takes a delivery's lease, does its few rows of work and finishes it that way, where
three holds each kept the intake waiting for the lock."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from datetime import UTC, datetime

from sqlalchemy import URL, Connection, Engine, Table, create_engine, event, make_url, text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from bot.service import deadline
from bot.service.failures import StorageUnavailable

from ..sqlite_files import (
    AUTOCHECKPOINT_PAGES,
    GuardedConnection,
    WriterLock,
    check_writable,
    lock_file_beside,
)
from .tables import Base

WAIT_S = 30.0  # the longest any call waits for a locked SQLite file; the intake's deadline is far shorter

# The transaction of this thread's `Database.together` block, and whose: a context variable, since
# each thread (and each asyncio task) runs its own calls.
_TOGETHER: ContextVar[tuple[Database, Connection] | None] = ContextVar("perfbot_together", default=None)


def table(row: type[Base]) -> Table:
    """The table of a declarative class (whose ``__table__`` SQLAlchemy types loosely)."""
    return Base.metadata.tables[row.__tablename__]


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite gets WAL, and threads share its connections."""
    if url.startswith("sqlite"):
        engine = create_engine(
            url, connect_args={"timeout": WAIT_S, "check_same_thread": False, "factory": GuardedConnection}
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
    cursor.close()


def sqlite_file(url: str | URL) -> str | None:
    """The file of a SQLite database URL; None for another database, or one in memory or by URI."""
    url = make_url(url)
    database = url.database if url.get_backend_name() == "sqlite" else None
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return database


def now() -> datetime:
    """This process's clock: for what no other process compares (never a lease: `clock.db_now`)."""
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
        self.name = os.path.basename(self._file) if self._file else self.dialect  # says which, not where

    @contextmanager
    def session(self) -> Iterator[Session]:
        joined = self._joined()
        if joined is not None:
            # The block's transaction is committed or rolled back by `together`, never by this session.
            joining = Session(bind=joined, expire_on_commit=False, join_transaction_mode="rollback_only")
            with joining as session:
                yield session
                session.flush()
            return
        with self._writing(deadline.left(WAIT_S)), self.usable(), self._sessions.begin() as session:
            self._busy_timeout(session.connection(), deadline.left(WAIT_S))  # what the lock left
            yield session

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        joined = self._joined()
        if joined is not None:
            yield joined
            return
        with self._writing(deadline.left(WAIT_S)), self.usable(), self.engine.begin() as connection:
            self._busy_timeout(connection, deadline.left(WAIT_S))  # what the lock left
            yield connection

    @contextmanager
    def together(self) -> Iterator[None]:
        """Every `session` and `transaction` of this thread within the block joins one transaction,
        under one hold of the writer lock: committed when the block ends, rolled back whole when
        it raises. Inside another such block, it is that one."""
        if self._joined() is not None:
            yield
            return
        with self.transaction() as connection:
            token = _TOGETHER.set((self, connection))
            try:
                yield
            finally:
                _TOGETHER.reset(token)

    def _joined(self) -> Connection | None:
        current = _TOGETHER.get()
        return current[1] if current is not None and current[0] is self else None

    def ping(self) -> None:
        with self.usable(), self.engine.connect() as connection:
            connection.execute(text("SELECT 1"))

    @contextmanager
    def usable(self) -> Iterator[None]:
        """Refuse before any connection is touched (opened, used or closed) while the SQLite file
        cannot be written: its WAL index would SIGBUS the process (`sqlite_files`). Called once
        the writer lock is held, so that the check is as close to the use as it can be."""
        if self._file is not None:
            check_writable(self._file)
        with _unavailable_as_such(self.name):
            yield

    def _writing(self, wait_s: float) -> AbstractContextManager[object]:
        if isinstance(self._writer, WriterLock):
            return self._writer.within(wait_s)
        return self._writer

    def _busy_timeout(self, connection: Connection, wait_s: float) -> None:
        """SQLite waits for another process's write lock at most ``wait_s`` (in 100 ms steps: a
        pooled connection keeps its setting, and most calls ask for the same as the last)."""
        if self.dialect != "sqlite":
            return
        wanted = max(1, int(wait_s * 10)) * 100
        if connection.info.get("busy_timeout_ms") != wanted:
            connection.exec_driver_sql(f"PRAGMA busy_timeout={wanted}")
            connection.info["busy_timeout_ms"] = wanted


@contextmanager
def _unavailable_as_such(name: str) -> Iterator[None]:
    """The driver's errors of a database that is down, restarting, locked, full or read-only as
    `StorageUnavailable` (transient: the caller may try again); a broken constraint stays itself."""
    try:
        yield
    except OperationalError as error:
        raise StorageUnavailable(f"the database {name} is unavailable: {_first_line(error.orig)}") from error
    except DBAPIError as error:
        if not error.connection_invalidated:
            raise
        problem = _first_line(error.orig)
        raise StorageUnavailable(f"the database {name} connection broke: {problem}") from error


def _first_line(error: BaseException | None) -> str:
    text = str(error or "").strip()
    return text.splitlines()[0] if text else type(error).__name__


def _writer_lock(engine: Engine) -> WriterLock | nullcontext:
    if engine.dialect.name != "sqlite":
        return nullcontext()
    database = sqlite_file(engine.url)
    return WriterLock(lock_file_beside(database) if database else None)
