"""Time passing on the database's clock, which judges leases, stale deliveries and the consumers
heard from (`bot.adapters.store.clock`): every time stored for deliveries and consumers is moved
back by as much, as if that long had passed since it was written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select, update

from bot.adapters.store.sql import SqlStore
from bot.adapters.store.tables import ConsumerRow, DeliveryRow

_TIMES = (
    (DeliveryRow, DeliveryRow.id, ("received_at", "started_at", "finished_at", "lease_expires_at")),
    (ConsumerRow, ConsumerRow.owner, ("started_at", "seen_at")),
)


def elapse(store: SqlStore, seconds: float) -> None:
    """``seconds`` pass (negative: go back) for everything stored about deliveries and consumers."""
    delta = timedelta(seconds=seconds)
    with store.engine.begin() as connection:
        for row_type, key, names in _TIMES:
            columns = [getattr(row_type, name) for name in names]
            for row in connection.execute(select(key, *columns)).all():
                moved = {
                    name: _utc(value) - delta
                    for name, value in zip(names, row[1:], strict=True)
                    if value is not None
                }
                if moved:
                    connection.execute(update(row_type).where(key == row[0]).values(**moved))


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
