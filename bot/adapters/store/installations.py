"""The `Installations` port over SQL: the watched repositories and their visibility."""

from __future__ import annotations

from sqlalchemy import Connection, delete, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from bot.service.ports.store import Installations
from bot.service.records import Repository

from .database import Database, now, table
from .tables import RepositoryRow


def _upsert_repository(dialect: str):
    upsert = (postgresql_insert if dialect == "postgresql" else sqlite_insert)(table(RepositoryRow))
    changed = {c: upsert.excluded[c] for c in ("full_name", "installation_id", "updated_at", "private")}
    return upsert.on_conflict_do_update(index_elements=[RepositoryRow.id], set_=changed)


class SqlInstallations(Installations):
    def __init__(self, db: Database):
        self.db = db
        self._upsert = _upsert_repository(db.dialect)

    def replace(self, installation_id, repos) -> None:
        with self.db.transaction() as connection:
            connection.execute(delete(RepositoryRow).where(RepositoryRow.installation_id == installation_id))
            self._merge(connection, installation_id, repos)

    def add(self, installation_id, repos) -> None:
        with self.db.transaction() as connection:
            self._merge(connection, installation_id, repos)

    def _merge(self, connection: Connection, installation_id: int | None, repos: list[Repository]) -> None:
        if repos:
            stamp = now()
            rows = [
                dict(
                    id=r.id,
                    full_name=r.full_name,
                    installation_id=installation_id,
                    updated_at=stamp,
                    private=r.private,
                )
                for r in repos
            ]
            connection.execute(self._upsert, rows)

    def remove_repositories(self, installation_id, repo_ids) -> None:
        with self.db.session() as session:
            session.execute(
                delete(RepositoryRow).where(
                    RepositoryRow.installation_id == installation_id, RepositoryRow.id.in_(repo_ids)
                )
            )

    def remove(self, installation_id) -> None:
        with self.db.session() as session:
            session.execute(delete(RepositoryRow).where(RepositoryRow.installation_id == installation_id))

    def repositories(self) -> list[Repository]:
        with self.db.session() as session:
            rows = session.scalars(select(RepositoryRow).order_by(RepositoryRow.full_name))
            return [Repository(r.id, r.full_name, r.installation_id, r.private) for r in rows]
