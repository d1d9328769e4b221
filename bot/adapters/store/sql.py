"""`SqlStore`: the service's `Store` over SQLAlchemy, one adapter per aggregate on one database
(one short transaction per call, or one for a block of calls: `together`)."""

from __future__ import annotations

from contextlib import AbstractContextManager

from sqlalchemy import Engine

from bot.service.ports.store import Store

from . import migrate
from .benchmarks import SqlBenchmarks
from .config_problems import SqlConfigProblems
from .dashboard import SqlDashboard
from .database import Database, make_engine, sqlite_file
from .deliveries import SqlDeliveries
from .installations import SqlInstallations
from .liveness import SqlLiveness
from .reviews import SqlReviews
from .watch import SqlWatch
from .work import SqlWorkLog

__all__ = ["SqlStore", "make_engine", "sqlite_file"]


class SqlStore(Store):
    def __init__(self, engine: Engine):
        self.engine = engine
        self.db = Database(engine)
        self.deliveries = SqlDeliveries(self.db)
        self.installations = SqlInstallations(self.db)
        self.reviews = SqlReviews(self.db)
        self.benchmarks = SqlBenchmarks(self.db)
        self.work = SqlWorkLog(self.db)
        self.dashboard = SqlDashboard(self.db)
        self.liveness = SqlLiveness(self.db)
        self.watch = SqlWatch(self.db)
        self.config_problems = SqlConfigProblems(self.db)

    @classmethod
    def connect(cls, url: str, migrate_schema: bool = True) -> SqlStore:
        """The store on ``url``, its schema migrated unless ``migrate_schema`` is false:
        `StorageUnavailable` when the database cannot be used now, `SchemaNotMigrated` when a
        migration failed on the schema it found; no connection left open by either."""
        store = cls(make_engine(url))
        if migrate_schema:
            try:
                with store.db.usable():  # a database down or read-only: StorageUnavailable, no SIGBUS
                    migrate.upgrade(store.engine)
            except BaseException:
                store.engine.dispose()
                raise
        return store

    def ping(self) -> None:
        self.db.ping()

    def together(self) -> AbstractContextManager[None]:
        return self.db.together()
