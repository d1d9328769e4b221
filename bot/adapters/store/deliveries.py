"""The `Deliveries` port over SQL: each delivery claimed once, leased to one worker at a time
under a lease its owner renews; failures kept with their kind for `/healthz` and the dashboard.

Every time a lease is judged or written by (taken, renewed, run out, released, found stale, how
long the oldest waits) is the database's (`db_now`), never a caller's: the workers' clocks may
disagree by more than a lease."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Float, and_, bindparam, delete, exists, func, insert, or_, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import aliased

from bot.service.failures import SubjectBusy
from bot.service.ports.store import Deliveries, DeliveryHealth, FailedDelivery
from bot.service.records import Delivery

from .clock import db_now
from .database import Database, now, table, utc
from .tables import DeliveryRow

PENDING, DONE, FAILED = "pending", "done", "failed"
UNNAMED = "a worker that gave no name"  # holds its lease until it runs out: never judged dead
_NOW = db_now()
_LEASE_ENDS = db_now(bindparam("lease_s", type_=Float))

# The statements of the per-delivery hot path, built once (building them costs more than SQLite).
_CLAIM = insert(table(DeliveryRow)).values(received_at=_NOW).returning(DeliveryRow.id)
_START = (
    update(table(DeliveryRow))
    .where(
        DeliveryRow.id == bindparam("delivery_id"),
        DeliveryRow.status == PENDING,
        # Not held, or held under a lease that ran out. A released delivery (no owner) may be
        # taken before its retry time: only the sweep waits for that.
        or_(
            DeliveryRow.lease_owner.is_(None),
            DeliveryRow.lease_expires_at.is_(None),
            DeliveryRow.lease_expires_at < _NOW,
        ),
    )
    .values(
        started_at=_NOW,
        attempts=DeliveryRow.attempts + 1,
        lease_owner=bindparam("owner"),
        lease_expires_at=_LEASE_ENDS,
    )
    .returning(
        DeliveryRow.id,
        DeliveryRow.hook_id,
        DeliveryRow.guid,
        DeliveryRow.event,
        DeliveryRow.action,
        DeliveryRow.payload,
        DeliveryRow.attempts,
        DeliveryRow.error,
    )
)
_SUBJECT_HELD = (
    select(DeliveryRow.id)
    .where(
        DeliveryRow.subject == bindparam("subject"),
        DeliveryRow.status == PENDING,
        DeliveryRow.id != bindparam("delivery_id"),
        DeliveryRow.lease_owner.is_not(None),
        DeliveryRow.lease_expires_at >= _NOW,
    )
    .limit(1)
)
# Two starts of one subject's deliveries must not both find the other not held: on PostgreSQL a
# transaction-scoped advisory lock on the subject serializes them (SQLite has one writer at a time).
_LOCK_SUBJECT = text("SELECT pg_advisory_xact_lock(hashtext(:subject))")
_OTHER = aliased(DeliveryRow)
# SQLite, where one writer at a time makes it safe: the start and the subject's check in one statement.
# Its pull request is free: no other delivery of it is held under a live lease.
_SUBJECT_FREE = or_(
    DeliveryRow.subject.is_(None),
    ~exists().where(
        _OTHER.subject == DeliveryRow.subject,
        _OTHER.status == PENDING,
        _OTHER.id != DeliveryRow.id,
        _OTHER.lease_owner.is_not(None),
        _OTHER.lease_expires_at >= _NOW,
    ),
)
_START_UNLESS_BUSY = _START.where(_SUBJECT_FREE)
_STARTABLE = select(DeliveryRow.subject).where(
    DeliveryRow.id == bindparam("delivery_id"),
    DeliveryRow.status == PENDING,
    or_(
        DeliveryRow.lease_owner.is_(None),
        DeliveryRow.lease_expires_at.is_(None),
        DeliveryRow.lease_expires_at < _NOW,
    ),
)
_FINISH = (
    update(table(DeliveryRow))
    .where(DeliveryRow.id == bindparam("delivery_id"), DeliveryRow.status == PENDING)
    .values(
        status=bindparam("status"),
        finished_at=_NOW,
        error=bindparam("error"),
        failure=bindparam("failure"),
        lease_expires_at=None,
    )
)
_FINISH_HELD = _FINISH.where(DeliveryRow.lease_owner == bindparam("owner"))


class SqlDeliveries(Deliveries):
    def __init__(self, db: Database):
        self.db = db

    def claim(self, hook_id, guid, event, action, payload, repo=None, subject=None) -> int | None:
        values = dict(
            hook_id=hook_id,
            guid=guid,
            event=event,
            action=action,
            payload=payload,
            status=PENDING,
            attempts=0,
            repo=repo,
            subject=subject,
        )
        try:
            with self.db.transaction() as connection:
                return connection.execute(_CLAIM, values).scalar_one()
        except IntegrityError:
            return None

    def start(self, delivery_id, lease_s, owner="") -> Delivery | None:
        values = dict(delivery_id=delivery_id, owner=owner or UNNAMED, lease_s=float(lease_s))
        with self.db.transaction() as connection:
            if self.db.dialect == "postgresql":
                # Only one that could start waits for its pull request: a finished or held one's
                # copy ends here rather than polling until the pull request is free.
                candidate = connection.execute(_STARTABLE, {"delivery_id": delivery_id}).first()
                if candidate is not None and candidate.subject is not None:
                    connection.execute(_LOCK_SUBJECT, {"subject": candidate.subject})
                    self._refuse_if_busy(connection, candidate.subject, delivery_id)
                row = connection.execute(_START, values).one_or_none() if candidate is not None else None
            else:
                row = connection.execute(_START_UNLESS_BUSY, values).one_or_none()
                if row is None:  # done, held, or its subject busy: only the last is worth a retry
                    startable = {"delivery_id": delivery_id}
                    subject = connection.execute(_STARTABLE, startable).scalar_one_or_none()
                    if subject is not None:
                        self._refuse_if_busy(connection, subject, delivery_id)
        if row is None:
            return None
        return Delivery(
            id=row.id,
            hook_id=row.hook_id,
            guid=row.guid,
            event=row.event,
            action=row.action,
            payload=row.payload,
            attempts=row.attempts,
            error=row.error,
        )

    @staticmethod
    def _refuse_if_busy(connection, subject, delivery_id) -> None:
        held = {"subject": subject, "delivery_id": delivery_id}
        if connection.execute(_SUBJECT_HELD, held).first() is not None:
            raise SubjectBusy(subject)

    def renew(self, owner, delivery_ids, lease_s) -> int:
        if not delivery_ids:
            return 0
        statement = (
            update(DeliveryRow)
            .where(
                DeliveryRow.id.in_(delivery_ids),
                DeliveryRow.lease_owner == owner,
                DeliveryRow.status == PENDING,
            )
            .values(lease_expires_at=db_now(float(lease_s)))
        )
        with self.db.transaction() as connection:
            return connection.execute(statement).rowcount

    def finish(self, delivery_id, status, error=None, owner=None, failure=None) -> bool:
        values = dict(delivery_id=delivery_id, status=status, error=error, failure=failure)
        statement = _FINISH if owner is None else _FINISH_HELD
        if owner is not None:
            values["owner"] = owner
        with self.db.transaction() as connection:
            return connection.execute(statement, values).rowcount == 1

    def release(self, delivery_id, error, retry_at=None, owner=None, failure=None) -> None:
        # ``retry_at`` is on the caller's clock: what is left until then is added to the database's.
        wait_s = 0.0 if retry_at is None else (retry_at - now()).total_seconds()
        held = [DeliveryRow.lease_owner == owner] if owner is not None else []
        statement = (
            update(DeliveryRow)
            .where(DeliveryRow.id == delivery_id, DeliveryRow.status == PENDING, *held)
            .values(lease_owner=None, lease_expires_at=db_now(wait_s), error=error[:2000], failure=failure)
        )
        with self.db.transaction() as connection:
            connection.execute(statement)

    def holders(self) -> list[str]:
        query = (
            select(DeliveryRow.lease_owner)
            .distinct()
            .where(DeliveryRow.status == PENDING, DeliveryRow.lease_owner.is_not(None))
        )
        with self.db.session() as session:
            return sorted(session.scalars(query))

    def release_holder(self, owner) -> list[int]:
        held = and_(DeliveryRow.status == PENDING, DeliveryRow.lease_owner == owner)
        statement = (
            update(DeliveryRow)
            .where(held)
            .values(lease_owner=None, lease_expires_at=_NOW)
            .returning(DeliveryRow.id)
        )
        with self.db.transaction() as connection:
            return sorted(connection.execute(statement).scalars())

    def stale(self, older_than_s) -> list[int]:
        cutoff = db_now(-float(older_than_s))
        query = (
            select(DeliveryRow.id)
            .where(
                DeliveryRow.status == PENDING,
                or_(
                    # held under a lease nobody renewed: its worker died elsewhere
                    DeliveryRow.lease_owner.is_not(None) & (DeliveryRow.lease_expires_at < _NOW),
                    # released for a retry that should have been taken by now
                    DeliveryRow.lease_owner.is_(None) & (DeliveryRow.lease_expires_at < cutoff),
                    # never taken (before leases had owners: taken at started_at)
                    DeliveryRow.lease_expires_at.is_(None)
                    & func.coalesce(DeliveryRow.started_at, DeliveryRow.received_at).__lt__(cutoff),
                ),
                # one waiting for its pull request has its own retry (`SubjectBusy`): a copy would
                # start another chain of them at every sweep for as long as the other one runs
                _SUBJECT_FREE,
            )
            .order_by(DeliveryRow.id)
        )
        with self.db.transaction() as connection:
            found = list(connection.execute(query).scalars())
            # Those nobody holds are due again only after another `older_than_s`: a backlog is
            # not flooded with copies of its own jobs at every sweep.
            if found:
                unheld = and_(DeliveryRow.id.in_(found), DeliveryRow.lease_owner.is_(None))
                connection.execute(update(DeliveryRow).where(unheld).values(lease_expires_at=_NOW))
            return found

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
            finished, DeliveryRow.received_at < now - timedelta(seconds=forget_after_s)
        )
        with self.db.transaction() as connection:
            connection.execute(drop)
            return connection.execute(forget).rowcount

    def counts(self) -> dict[str, int]:
        query = select(DeliveryRow.status, func.count()).group_by(DeliveryRow.status)
        with self.db.session() as session:
            return {status: count for status, count in session.execute(query)}

    def health(self, failed_within_s) -> DeliveryHealth:
        since = db_now(-float(failed_within_s))
        failed = select(func.count()).where(DeliveryRow.status == FAILED, DeliveryRow.finished_at >= since)
        retrying = select(func.count()).where(
            DeliveryRow.status == PENDING, DeliveryRow.attempts > 0, DeliveryRow.lease_owner.is_(None)
        )
        oldest = select(func.min(DeliveryRow.received_at)).where(DeliveryRow.status == PENDING)
        with self.db.session() as session:
            row = session.execute(
                select(
                    failed.scalar_subquery(),
                    retrying.scalar_subquery(),
                    oldest.scalar_subquery(),
                    since,
                    _NOW,
                )
            ).one()
        oldest_at, since_at, now_at = utc(row[2]), utc(row[3]) or row[3], utc(row[4]) or row[4]
        last = next(iter(self.failures(1)), None)
        return DeliveryHealth(
            failed=row[0],
            retrying=row[1],
            oldest_pending_s=None if oldest_at is None else max(0.0, (now_at - oldest_at).total_seconds()),
            last_failure=last if last and last.finished_at and last.finished_at >= since_at else None,
        )

    def failures(self, limit, repos=None) -> list[FailedDelivery]:
        query = select(
            DeliveryRow.id,
            DeliveryRow.guid,
            DeliveryRow.event,
            DeliveryRow.action,
            DeliveryRow.repo,
            DeliveryRow.failure,
            DeliveryRow.error,
            DeliveryRow.attempts,
            DeliveryRow.finished_at,
        ).where(DeliveryRow.status == FAILED)
        if repos is not None:
            query = query.where(DeliveryRow.repo.in_(sorted(repos)))
        query = query.order_by(DeliveryRow.finished_at.desc(), DeliveryRow.id.desc()).limit(limit)
        with self.db.session() as session:
            rows = session.execute(query).all()
        return [
            FailedDelivery(
                id=r.id,
                guid=r.guid,
                event=r.event,
                action=r.action,
                repo=r.repo,
                failure=r.failure,
                error=r.error,
                attempts=r.attempts,
                finished_at=utc(r.finished_at),
            )
            for r in rows
        ]
