"""The `Deliveries` port over SQL: each delivery claimed once, leased to one worker at a time."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import bindparam, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from bot.service.records import Delivery
from bot.service.storage import Deliveries

from .database import Database, now, table
from .tables import DeliveryRow

PENDING, DONE, FAILED = "pending", "done", "failed"

# The statements of the per-delivery hot path, built once (building them costs more than SQLite).
_CLAIM = insert(table(DeliveryRow)).returning(DeliveryRow.id)
_START = (
    update(table(DeliveryRow))
    .where(
        DeliveryRow.id == bindparam("delivery_id"),
        DeliveryRow.status == PENDING,
        or_(DeliveryRow.started_at.is_(None), DeliveryRow.started_at < bindparam("expired")),
    )
    .values(started_at=bindparam("now"), attempts=DeliveryRow.attempts + 1)
    .returning(
        DeliveryRow.id,
        DeliveryRow.hook_id,
        DeliveryRow.guid,
        DeliveryRow.event,
        DeliveryRow.action,
        DeliveryRow.payload,
        DeliveryRow.attempts,
    )
)
_FINISH = (
    update(table(DeliveryRow))
    .where(DeliveryRow.id == bindparam("delivery_id"))
    .values(status=bindparam("status"), finished_at=bindparam("now"), error=bindparam("error"))
)


class SqlDeliveries(Deliveries):
    def __init__(self, db: Database):
        self.db = db

    def claim(self, hook_id, guid, event, action, payload) -> int | None:
        values = dict(hook_id=hook_id, guid=guid, event=event, action=action, payload=payload,
                      status=PENDING, attempts=0, received_at=now())
        try:
            with self.db.transaction() as connection:
                return connection.execute(_CLAIM, values).scalar_one()
        except IntegrityError:
            return None

    def start(self, delivery_id, now, lease_s) -> Delivery | None:
        values = dict(delivery_id=delivery_id, now=now, expired=now - timedelta(seconds=lease_s))
        with self.db.transaction() as connection:
            row = connection.execute(_START, values).one_or_none()
        return None if row is None else Delivery(*row)

    def finish(self, delivery_id, status, error=None) -> None:
        with self.db.transaction() as connection:
            connection.execute(_FINISH, dict(delivery_id=delivery_id, status=status, now=now(), error=error))

    def release(self, delivery_id, error) -> None:
        with self.db.session() as session:
            session.execute(update(DeliveryRow).where(DeliveryRow.id == delivery_id)
                            .values(started_at=None, error=error[:2000]))

    def stale(self, now, older_than_s) -> list[int]:
        cutoff = now - timedelta(seconds=older_than_s)
        query = (
            select(DeliveryRow.id)
            .where(
                DeliveryRow.status == PENDING,
                or_(
                    DeliveryRow.started_at < cutoff,
                    DeliveryRow.started_at.is_(None) & (DeliveryRow.received_at < cutoff),
                ),
            )
            .order_by(DeliveryRow.id)
        )
        with self.db.session() as session:
            return list(session.scalars(query))

    def prune(self, now, drop_payload_after_s, forget_after_s) -> int:
        finished = DeliveryRow.status != PENDING
        drop = (
            update(DeliveryRow)
            .where(
                finished,
                DeliveryRow.received_at < now - timedelta(seconds=drop_payload_after_s),
                func.length(DeliveryRow.payload) > 0,
            )
            .values(payload=b"")
        )
        forget = delete(DeliveryRow).where(
            finished, DeliveryRow.received_at < now - timedelta(seconds=forget_after_s))
        with self.db.transaction() as connection:
            connection.execute(drop)
            return connection.execute(forget).rowcount

    def counts(self) -> dict[str, int]:
        query = select(DeliveryRow.status, func.count()).group_by(DeliveryRow.status)
        with self.db.session() as session:
            return {status: count for status, count in session.execute(query)}
