"""`SqlSessionStore`: the dashboard's `SessionStore` port over SQLAlchemy, in the same database as
the rest of the store (table `dashboard_sessions`), one short transaction per call."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from sqlalchemy import delete, insert, select, update

from bot.service.ports.sessions import DashboardSession, SessionStore

from .database import Database
from .tables import DashboardSessionRow as Row


class SqlSessionStore(SessionStore):
    def __init__(self, db: Database):
        self.db = db

    def create(self, key: str, session: DashboardSession) -> None:
        with self.db.transaction() as connection:
            connection.execute(
                insert(Row).values(
                    key=key,
                    login=session.login,
                    private_repos=json.dumps(sorted(session.private_repos)),
                    created_at=session.created_at,
                    checked_at=session.checked_at,
                    expires_at=session.expires_at,
                )
            )

    def get(self, key: str) -> DashboardSession | None:
        with self.db.usable(), self.db.engine.connect() as connection:
            row = connection.execute(select(Row).where(Row.key == key)).one_or_none()
        if row is None:
            return None
        return DashboardSession(
            login=row.login,
            private_repos=frozenset(json.loads(row.private_repos)),
            created_at=_utc(row.created_at),
            checked_at=_utc(row.checked_at),
            expires_at=_utc(row.expires_at),
        )

    def recheck(self, key: str, private_repos: frozenset[str], checked_at: datetime) -> None:
        with self.db.transaction() as connection:
            connection.execute(
                update(Row)
                .where(Row.key == key)
                .values(private_repos=json.dumps(sorted(private_repos)), checked_at=checked_at)
            )

    def delete(self, key: str) -> None:
        with self.db.transaction() as connection:
            connection.execute(delete(Row).where(Row.key == key))

    def delete_expired(self, now: datetime) -> int:
        with self.db.transaction() as connection:
            return connection.execute(delete(Row).where(Row.expires_at <= now)).rowcount


def _utc(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; everything stored is UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
