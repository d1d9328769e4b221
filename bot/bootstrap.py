"""The one place that builds the server's adapters from `Settings`: the SQL store, the huey queue
and the GitHub client factory, with the service's jobs bound to the queue. `perfbot serve` (the
web app and its embedded consumer) and `perfbot worker` start here; the rest sees only ports."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from alembic.util import CommandError
from huey.consumer import Consumer
from sqlalchemy.exc import DBAPIError

from bot.adapters.github_client import PyGithubFactory
from bot.adapters.github_oauth import GitHubSignIn
from bot.adapters.queue import HueyQueue
from bot.adapters.sqlite_files import WalCheckpoints
from bot.adapters.store import migrate as migrations
from bot.adapters.store.sessions import SqlSessionStore
from bot.adapters.store.sql import SqlStore, sqlite_file
from bot.service import benchmarks, jobs
from bot.service.ports import GitHubFactory
from bot.service.router import Router
from bot.service.routes import ROUTER
from bot.service.services import Services
from bot.settings import Settings


class SchemaNotMigrated(Exception):  # noqa: N818 - a state of the database, as StorageUnavailable
    """The database answered, but its schema could not be brought to this version's: a migration
    failed on what it found there (a column or table already there, a revision this version does
    not know, no right to create tables). Not `Transient`: waiting would not help, a person must."""


@dataclass(frozen=True)
class Runtime:
    """One process's adapters, and the services (its ports) that the handlers and the app see."""

    settings: Settings
    services: Services
    router: Router
    store: SqlStore
    queue: HueyQueue
    sessions: SqlSessionStore  # the dashboard's signed-in sessions, in the store's database

    def start_consumer(self, threads: int, periodic: bool = True) -> RunningConsumer:
        """Consume the queue on threads of this process (the process keeps its signal handlers),
        with its duties (`jobs.ConsumerDuties`: it takes over dead workers' deliveries first, and
        renews its leases while it runs); ``periodic``: this consumer also runs the sweep and
        enqueues the periodic tasks, which one consumer of the queue must do."""
        duties = jobs.ConsumerDuties(self.services, threads, periodic).start()
        consumer = self.queue.consumer(workers=threads, in_process=True, periodic=periodic)
        consumer.start()
        return RunningConsumer(consumer, duties)

    def close(self) -> None:
        self.store.engine.dispose()


@dataclass(frozen=True)
class RunningConsumer:
    consumer: Consumer
    duties: jobs.ConsumerDuties

    def stop(self, graceful: bool = True) -> None:
        self.consumer.stop(graceful=graceful)
        self.duties.stop()


def build(
    settings: Settings,
    github: GitHubFactory | None = None,
    router: Router = ROUTER,
    retry_delay: float | None = None,
) -> Runtime:
    """Connect (and migrate) the store, open the queue and bind the jobs to it; ``github``
    replaces the PyGithub factory (tests), ``retry_delay`` every retry's wait (tests; by default
    the jobs' backoff)."""
    store = connect(settings.database_url)
    try:  # a failed start leaves no connection open: the callers try again, each with a new engine
        queue = HueyQueue(settings.resolved_queue_url, retry_delay=retry_delay)
        services = Services(store=store, github=github or PyGithubFactory(settings), queue=queue,
                            sign_in=sign_in(settings))
        queue.bind(
            lambda delivery_id: jobs.process(delivery_id, services, router),
            lambda: jobs.housekeeping(services),
            lambda: benchmarks.scheduled(services),
        )
        return Runtime(settings, services, router, store, queue, SqlSessionStore(store.db))
    except BaseException:
        store.engine.dispose()
        raise


def sign_in(settings: Settings) -> GitHubSignIn | None:
    """Dashboard sign-in through the App's user authorization, when its client is configured."""
    if not (settings.sign_in_enabled and settings.oauth_client_id and settings.oauth_client_secret):
        return None
    return GitHubSignIn(settings.oauth_client_id, settings.oauth_client_secret, settings.github_web_url,
                        settings.github_api_url)


def migrate(settings: Settings) -> None:
    """Bring the database to the newest schema, once, before `perfbot serve` forks its workers."""
    connect(settings.database_url).engine.dispose()


def connect(url: str) -> SqlStore:
    """The store, its schema migrated: `StorageUnavailable` when the database cannot be used now,
    `SchemaNotMigrated` when a migration failed on the schema it found; no connection left open
    by either."""
    store = SqlStore.connect(url, migrate_schema=False)
    try:
        with store.db.usable():  # down, read-only, locked, full: StorageUnavailable
            try:
                migrations.upgrade(store.engine)
            except (DBAPIError, CommandError) as error:
                if not _schema_error(error):
                    raise
                _upgrade_again(store, error)
    except BaseException:
        store.engine.dispose()
        raise
    return store


def _upgrade_again(store: SqlStore, first: DBAPIError | CommandError) -> None:
    """Once more, for a process that migrated the same SQLite file at the same moment (its DDL is
    not transactional there): it is at the newest schema now, and nothing is left to do. Failing
    again, `SchemaNotMigrated`, saying why the first attempt failed."""
    try:
        migrations.upgrade(store.engine)
    except (DBAPIError, CommandError) as error:
        if not _schema_error(error):
            raise
        why = str(first.orig if isinstance(first, DBAPIError) else first).strip().splitlines()
        raise SchemaNotMigrated("the database's schema could not be migrated: "
                                f"{why[0] if why else type(first).__name__}") from first


# PostgreSQL's SQLSTATE classes of a statement wrong for the schema or data it met: syntax error or
# access rule violation (a duplicate column or table, no such column, permission denied), integrity
# constraint violation, data exception, feature not supported, dependent objects still exist.
_SCHEMA_SQLSTATE_CLASSES = ("42", "23", "22", "0A", "2B")


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


def wal_checkpoints(settings: Settings) -> WalCheckpoints:
    """Checkpoints of the SQLite files the server writes (store, embedded queue), for the process
    that supervises those writing them."""
    files = [sqlite_file(settings.database_url)]
    if settings.queue_embedded:
        files.append(settings.resolved_queue_url.removeprefix("sqlite:///"))
    return WalCheckpoints([f for f in files if f])
