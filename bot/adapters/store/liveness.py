"""The `Liveness` port over SQL: the row `/healthz` writes, and the running queue consumers, each
seen by the database's clock (`clock.db_now`), as the leases are, not by its own."""

from __future__ import annotations

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from bot.service.ports.store import ConsumerSeen, Liveness

from .clock import db_now
from .database import Database, utc
from .tables import ConsumerRow, WriteProbeRow


class SqlLiveness(Liveness):
    def __init__(self, db: Database):
        self.db = db

    def probe(self) -> None:
        with self.db.transaction() as connection:
            connection.execute(update(WriteProbeRow).where(WriteProbeRow.id == 1).values(written_at=db_now()))

    def beat(self, owner, started_at, periodic, threads) -> None:
        values = dict(seen_at=db_now(), started_at=started_at, periodic=periodic, threads=threads)
        with self.db.transaction() as connection:
            mine = update(ConsumerRow).where(ConsumerRow.owner == owner)
            if connection.execute(mine.values(**values)).rowcount:
                return
        try:
            with self.db.transaction() as connection:
                connection.execute(insert(ConsumerRow).values(owner=owner, **values))
        except IntegrityError:  # another thread of the owner inserted it meanwhile
            pass

    def stopped(self, owner) -> None:
        with self.db.transaction() as connection:
            connection.execute(delete(ConsumerRow).where(ConsumerRow.owner == owner))

    def consumers(self, seen_within_s) -> list[ConsumerSeen]:
        query = (
            select(ConsumerRow)
            .where(ConsumerRow.seen_at >= db_now(-float(seen_within_s)))
            .order_by(ConsumerRow.owner)
        )
        with self.db.session() as session:
            rows = list(session.scalars(query))
        return [
            ConsumerSeen(
                owner=row.owner,
                started_at=utc(row.started_at) or row.started_at,
                seen_at=utc(row.seen_at) or row.seen_at,
                periodic=row.periodic,
                threads=row.threads,
            )
            for row in rows
        ]

    def forget(self, unseen_for_s) -> int:
        unseen = ConsumerRow.seen_at < db_now(-float(unseen_for_s))
        with self.db.transaction() as connection:
            return connection.execute(delete(ConsumerRow).where(unseen)).rowcount
