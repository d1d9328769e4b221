"""The `WorkLog` port over SQL: work keys, every push of a pull request's head and when it was
pushed, fork approvals, acknowledgements."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from bot.service.ports.store import WorkLog
from bot.service.records import Ack

from .database import Database, now, utc
from .tables import AckRow, ApprovalRow, PullPushRow, WorkKeyRow


class SqlWorkLog(WorkLog):
    def __init__(self, db: Database):
        self.db = db

    def claim(self, key) -> bool:
        try:
            with self.db.session() as session:
                session.add(WorkKeyRow(key=key, created_at=now()))
        except IntegrityError:
            return False
        return True

    def done(self, key) -> bool:
        with self.db.session() as session:
            return session.get(WorkKeyRow, key) is not None

    def prune(self, now, older_than_s) -> int:
        with self.db.transaction() as connection:
            cutoff = now - timedelta(seconds=older_than_s)
            return connection.execute(delete(WorkKeyRow).where(WorkKeyRow.created_at < cutoff)).rowcount

    def add_ack(self, ack, work_key) -> bool:
        try:
            with self.db.session() as session:
                session.add(WorkKeyRow(key=work_key, created_at=now()))
                session.add(
                    AckRow(
                        repo=ack.repo,
                        number=ack.number,
                        head_sha=ack.head_sha,
                        user=ack.user,
                        reason=ack.reason,
                        comment_id=ack.comment_id,
                        created_at=ack.created_at,
                    )
                )
        except IntegrityError:
            return False
        return True

    def acks(self, repo, number) -> list[Ack]:
        query = select(AckRow).where(AckRow.repo == repo, AckRow.number == number).order_by(AckRow.id)
        with self.db.session() as session:
            return [
                Ack(
                    repo=r.repo,
                    number=r.number,
                    head_sha=r.head_sha,
                    user=r.user,
                    reason=r.reason,
                    comment_id=r.comment_id,
                    created_at=utc(r.created_at) or now(),
                )
                for r in session.scalars(query)
            ]

    def record_push(self, repo, number, head_sha, pushed_at) -> None:
        try:
            with self.db.session() as session:
                session.add(
                    PullPushRow(repo=repo, number=number, head_sha=head_sha, pushed_at=_utc(pushed_at))
                )
        except IntegrityError:
            pass  # the same push again: a replayed or redelivered event

    def pushes_before(self, repo, number, before) -> list[tuple[str, datetime]]:
        query = (
            select(PullPushRow.head_sha, PullPushRow.pushed_at)
            .where(
                PullPushRow.repo == repo, PullPushRow.number == number, PullPushRow.pushed_at < _utc(before)
            )
            .order_by(PullPushRow.pushed_at, PullPushRow.id)
        )
        with self.db.session() as session:
            return [(sha, utc(at) or at) for sha, at in session.execute(query)]

    def approve(self, repo, number, head_sha, by) -> None:
        try:
            with self.db.session() as session:
                session.add(
                    ApprovalRow(repo=repo, number=number, head_sha=head_sha, approved_by=by, created_at=now())
                )
        except IntegrityError:
            pass  # approved before: an approval is a fact about the commit, not about who said it first

    def approved(self, repo, number, head_sha) -> bool:
        query = select(ApprovalRow.id).where(
            ApprovalRow.repo == repo, ApprovalRow.number == number, ApprovalRow.head_sha == head_sha
        )
        with self.db.session() as session:
            return session.scalar(query) is not None


def _utc(value: datetime) -> datetime:
    """``value`` in UTC (a naive one is taken as UTC): SQLite keeps no offset, so a time stored or
    compared with another offset would be read hours off."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
