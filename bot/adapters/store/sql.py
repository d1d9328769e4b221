"""`SqlStore`: the service's `Store` port over SQLAlchemy (one short transaction per call)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime, timedelta

from sqlalchemy import (
    URL,
    Connection,
    Engine,
    Table,
    bindparam,
    create_engine,
    delete,
    event,
    func,
    insert,
    make_url,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from bot.service.ports import (
    Ack,
    BenchRequest,
    BenchResult,
    Delivery,
    Merge,
    Reason,
    Repository,
    Review,
    Store,
)

from ..sqlite_files import AUTOCHECKPOINT_PAGES, WriterLock, lock_file_beside
from . import migrate
from .dashboard import DashboardQueries
from .tables import (
    AckRow,
    ApprovalRow,
    Base,
    BenchRequestRow,
    BenchResultRow,
    DeliveryRow,
    MergeRow,
    MetricPointRow,
    RepositoryRow,
    ReviewRow,
    WorkKeyRow,
)

PENDING, DONE, FAILED = "pending", "done", "failed"


def _table(row: type[Base]) -> Table:
    """The table of a declarative class (whose ``__table__`` SQLAlchemy types loosely)."""
    return Base.metadata.tables[row.__tablename__]


# The statements of the per-delivery hot path, built once (building them costs more than SQLite).
_CLAIM = insert(_table(DeliveryRow)).returning(DeliveryRow.id)
_START = (
    update(_table(DeliveryRow))
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
    update(_table(DeliveryRow))
    .where(DeliveryRow.id == bindparam("delivery_id"))
    .values(status=bindparam("status"), finished_at=bindparam("now"), error=bindparam("error"))
)


def _upsert_repository(dialect: str):
    upsert = (postgresql_insert if dialect == "postgresql" else sqlite_insert)(_table(RepositoryRow))
    changed = {c: upsert.excluded[c] for c in ("full_name", "installation_id", "updated_at", "private")}
    return upsert.on_conflict_do_update(index_elements=[RepositoryRow.id], set_=changed)


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite gets WAL and a busy timeout so threads can share it."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _writer_lock(engine: Engine) -> WriterLock | nullcontext:
    if engine.dialect.name != "sqlite":
        return nullcontext()
    database = sqlite_file(engine.url)
    return WriterLock(lock_file_beside(database) if database else None)


def sqlite_file(url: str | URL) -> str | None:
    """The file of a SQLite database URL; None for another database, or one in memory or by URI."""
    url = make_url(url)
    database = url.database if url.get_backend_name() == "sqlite" else None
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return database


def _now() -> datetime:
    return datetime.now(UTC)


def _utc(value: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; everything stored is UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


class SqlStore(DashboardQueries, Store):
    def __init__(self, engine: Engine):
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        # SQLite has one writer at a time, and a writer that finds the file locked sleeps in
        # growing steps (up to 100 ms): queue the threads and processes sharing it on a lock instead.
        self._writer = _writer_lock(engine)
        self._upsert_repo = _upsert_repository(engine.dialect.name)

    @classmethod
    def connect(cls, url: str, migrate_schema: bool = True) -> SqlStore:
        engine = make_engine(url)
        if migrate_schema:
            migrate.upgrade(engine)
        return cls(engine)

    @contextmanager
    def _session(self) -> Iterator[Session]:
        with self._writer, self._sessions.begin() as session:
            yield session

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        with self._writer, self.engine.begin() as connection:
            yield connection

    # deliveries

    def claim_delivery(self, hook_id, guid, event, action, payload) -> int | None:
        values = dict(
            hook_id=hook_id,
            guid=guid,
            event=event,
            action=action,
            payload=payload,
            status=PENDING,
            attempts=0,
            received_at=_now(),
        )
        try:
            with self._transaction() as connection:
                return connection.execute(_CLAIM, values).scalar_one()
        except IntegrityError:
            return None

    def start_delivery(self, delivery_id, now, lease_s) -> Delivery | None:
        values = dict(delivery_id=delivery_id, now=now, expired=now - timedelta(seconds=lease_s))
        with self._transaction() as connection:
            row = connection.execute(_START, values).one_or_none()
        return None if row is None else Delivery(*row)

    def finish_delivery(self, delivery_id, status, error=None) -> None:
        with self._transaction() as connection:
            connection.execute(_FINISH, dict(delivery_id=delivery_id, status=status, now=_now(), error=error))

    def release_delivery(self, delivery_id, error) -> None:
        with self._session() as session:
            session.execute(
                update(DeliveryRow)
                .where(DeliveryRow.id == delivery_id)
                .values(started_at=None, error=error[:2000])
            )

    def stale_deliveries(self, now, older_than_s) -> list[int]:
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
        with self._session() as session:
            return list(session.scalars(query))

    def prune_deliveries(self, now, drop_payload_after_s, forget_after_s) -> int:
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
        with self._transaction() as connection:
            connection.execute(drop)
            return connection.execute(forget).rowcount

    def delivery_counts(self) -> dict[str, int]:
        query = select(DeliveryRow.status, func.count()).group_by(DeliveryRow.status)
        with self._session() as session:
            return {status: count for status, count in session.execute(query)}

    # repositories

    def replace_installation(self, installation_id, repos) -> None:
        with self._transaction() as connection:
            connection.execute(delete(RepositoryRow).where(RepositoryRow.installation_id == installation_id))
            self._merge_repos(connection, installation_id, repos)

    def add_repositories(self, installation_id, repos) -> None:
        with self._transaction() as connection:
            self._merge_repos(connection, installation_id, repos)

    def _merge_repos(self, connection: Connection, installation_id: int, repos: list[Repository]) -> None:
        if repos:
            now = _now()
            rows = [
                dict(id=r.id, full_name=r.full_name, installation_id=installation_id, updated_at=now,
                     private=r.private)
                for r in repos
            ]
            connection.execute(self._upsert_repo, rows)

    def remove_repositories(self, installation_id, repo_ids) -> None:
        with self._session() as session:
            session.execute(
                delete(RepositoryRow).where(
                    RepositoryRow.installation_id == installation_id, RepositoryRow.id.in_(repo_ids)
                )
            )

    def remove_installation(self, installation_id) -> None:
        with self._session() as session:
            session.execute(delete(RepositoryRow).where(RepositoryRow.installation_id == installation_id))

    def repositories(self) -> list[Repository]:
        with self._session() as session:
            rows = session.scalars(select(RepositoryRow).order_by(RepositoryRow.full_name))
            return [Repository(r.id, r.full_name, r.installation_id, r.private) for r in rows]

    # reviews and merges

    def save_review(self, review) -> None:
        with self._session() as session:
            row = _pull_request_row(session, ReviewRow, review.repo, review.number)
            row.head_sha, row.score, row.level = review.head_sha, review.score, review.level
            row.comment_id, row.updated_at = review.comment_id, _now()

    def review_for(self, repo, number) -> Review | None:
        with self._session() as session:
            row = session.scalar(select(ReviewRow).where(ReviewRow.repo == repo, ReviewRow.number == number))
            if row is None:
                return None
            return Review(row.repo, row.number, row.head_sha, row.score, row.level, row.comment_id)

    def record_merge(self, merge) -> None:
        with self._session() as session:
            row = _pull_request_row(session, MergeRow, merge.repo, merge.number)
            row.title, row.merge_sha, row.head_sha = merge.title, merge.merge_sha, merge.head_sha
            row.score, row.level, row.merged_at = merge.score, merge.level, merge.merged_at
            row.author, row.url = merge.author, merge.url
            row.top_reason = merge.reasons[0].text if merge.reasons else None
            row.reasons = json.dumps(
                [{"rule": r.rule, "weight": r.weight, "reason": r.text} for r in merge.reasons]
            )
            self.derive_merge(session, row)

    def merges(self, repo=None) -> list[Merge]:
        query = select(MergeRow).order_by(MergeRow.merged_at.desc(), MergeRow.id.desc())
        if repo is not None:
            query = query.where(MergeRow.repo == repo)
        with self._session() as session:
            return [
                Merge(r.repo, r.number, r.title, r.merge_sha, r.head_sha, r.score, r.level, _utc(r.merged_at),
                      r.author, r.url, _reasons(r.reasons))
                for r in session.scalars(query)
            ]

    # benchmarks

    def open_bench_request(self, request) -> tuple[BenchRequest, bool]:
        now = _now()
        row = BenchRequestRow(
            correlation_id=request.correlation_id, repo=request.repo,
            installation_id=request.installation_id, number=request.number, base_sha=request.base_sha,
            head_sha=request.head_sha, suites=json.dumps(list(request.suites)), rounds=request.rounds,
            max_rounds=request.max_rounds, trigger=request.trigger, requested_by=request.requested_by,
            comment_id=request.comment_id, status=request.status, run_id=request.run_id,
            run_url=request.run_url, check_run_id=request.check_run_id, conclusion=request.conclusion,
            error=request.error, created_at=request.created_at, updated_at=now,
            completed_at=request.completed_at)
        try:
            with self._session() as session:
                session.add(row)
                session.flush()
                return _bench_request(row), True
        except IntegrityError:
            existing = self.bench_request(request.correlation_id)
            if existing is None:  # the unique key was not the correlation id: not a replay
                raise
            return existing, False

    def bench_request(self, correlation_id) -> BenchRequest | None:
        with self._session() as session:
            row = session.scalar(_request_by_id(correlation_id))
            return None if row is None else _bench_request(row)

    def update_bench_request(self, request) -> None:
        with self._session() as session:
            _update_request(session, request)

    def bench_requests(self, repo, number) -> list[BenchRequest]:
        at = BenchRequestRow.number.is_(None) if number is None else BenchRequestRow.number == number
        query = (select(BenchRequestRow).where(BenchRequestRow.repo == repo, at)
                 .order_by(BenchRequestRow.id.desc()))
        with self._session() as session:
            return [_bench_request(row) for row in session.scalars(query)]

    def last_command(self, repo, *, user=None, number=None) -> datetime | None:
        query = select(func.max(BenchRequestRow.created_at)).where(
            BenchRequestRow.repo == repo, BenchRequestRow.trigger == "command")
        if user is not None:
            query = query.where(BenchRequestRow.requested_by == user)
        if number is not None:
            query = query.where(BenchRequestRow.number == number)
        with self._session() as session:
            return _utc(session.scalar(query))

    def complete_bench_request(self, request, results, points, work_key) -> bool:
        now = _now()
        try:
            with self._session() as session:
                session.add(WorkKeyRow(key=work_key, created_at=now))
                session.flush()
                row = _update_request(session, request)
                for result in results:
                    stored = BenchResultRow(
                        request_id=row.id, repo=row.repo, number=row.number, suite=result.suite,
                        base_sha=result.base_sha, head_sha=result.head_sha, verdict=result.verdict,
                        headline_metric=result.headline_metric, headline_change=result.headline_change,
                        comparison=result.comparison, on_default_branch=result.on_default_branch,
                        created_at=now)
                    session.add(stored)
                    session.flush()
                    session.add_all(
                        MetricPointRow(result_id=stored.id, repo=row.repo, suite=p.suite, metric=p.metric,
                                       unit=p.unit, better=p.better, sha=p.sha, value=p.value,
                                       measured_at=now)
                        for p in points if p.suite == result.suite)
        except IntegrityError:
            if self.work_done(work_key):
                return False
            raise
        return True

    def bench_results(self, request_id) -> list[BenchResult]:
        query = (select(BenchResultRow).where(BenchResultRow.request_id == request_id)
                 .order_by(BenchResultRow.id))
        with self._session() as session:
            return [BenchResult(r.suite, r.base_sha, r.head_sha, r.verdict, r.headline_metric,
                                r.headline_change, r.comparison, r.on_default_branch)
                    for r in session.scalars(query)]

    def claim_work(self, key) -> bool:
        try:
            with self._session() as session:
                session.add(WorkKeyRow(key=key, created_at=_now()))
        except IntegrityError:
            return False
        return True

    def work_done(self, key) -> bool:
        with self._session() as session:
            return session.get(WorkKeyRow, key) is not None

    def prune_work(self, now, older_than_s) -> int:
        with self._transaction() as connection:
            cutoff = now - timedelta(seconds=older_than_s)
            return connection.execute(delete(WorkKeyRow).where(WorkKeyRow.created_at < cutoff)).rowcount

    def add_ack(self, ack, work_key) -> bool:
        try:
            with self._session() as session:
                session.add(WorkKeyRow(key=work_key, created_at=_now()))
                session.add(AckRow(repo=ack.repo, number=ack.number, head_sha=ack.head_sha, user=ack.user,
                                   reason=ack.reason, comment_id=ack.comment_id, created_at=ack.created_at))
        except IntegrityError:
            return False
        return True

    def acks(self, repo, number) -> list[Ack]:
        query = select(AckRow).where(AckRow.repo == repo, AckRow.number == number).order_by(AckRow.id)
        with self._session() as session:
            return [Ack(r.repo, r.number, r.head_sha, r.user, r.reason, r.comment_id,
                        _utc(r.created_at) or _now()) for r in session.scalars(query)]

    def approve(self, repo, number, head_sha, by) -> None:
        try:
            with self._session() as session:
                session.add(ApprovalRow(repo=repo, number=number, head_sha=head_sha, approved_by=by,
                                        created_at=_now()))
        except IntegrityError:
            pass  # approved before: an approval is a fact about the commit, not about who said it first

    def approved(self, repo, number, head_sha) -> bool:
        query = select(ApprovalRow.id).where(
            ApprovalRow.repo == repo, ApprovalRow.number == number, ApprovalRow.head_sha == head_sha)
        with self._session() as session:
            return session.scalar(query) is not None

    def ping(self) -> None:
        with self.engine.connect() as connection:
            connection.execute(text("SELECT 1"))


def _reasons(text: str | None) -> tuple[Reason, ...]:
    items = json.loads(text) if text else []
    return tuple(Reason(i["rule"], i["weight"], i["reason"]) for i in items)


def _bench_request(row: BenchRequestRow) -> BenchRequest:
    return BenchRequest(
        correlation_id=row.correlation_id, repo=row.repo, installation_id=row.installation_id,
        number=row.number, base_sha=row.base_sha, head_sha=row.head_sha,
        suites=tuple(json.loads(row.suites)),
        rounds=row.rounds, max_rounds=row.max_rounds, trigger=row.trigger, requested_by=row.requested_by,
        comment_id=row.comment_id, status=row.status, created_at=_utc(row.created_at) or _now(),
        run_id=row.run_id, run_url=row.run_url, check_run_id=row.check_run_id, conclusion=row.conclusion,
        error=row.error, completed_at=_utc(row.completed_at), id=row.id)


def _request_by_id(correlation_id: str):
    return select(BenchRequestRow).where(BenchRequestRow.correlation_id == correlation_id)


def _update_request(session: Session, request: BenchRequest) -> BenchRequestRow:
    row = session.scalar(_request_by_id(request.correlation_id))
    if row is None:
        raise KeyError(f"no bench request {request.correlation_id}")
    row.status, row.run_id, row.run_url = request.status, request.run_id, request.run_url
    row.check_run_id, row.conclusion = request.check_run_id, request.conclusion
    row.error = None if request.error is None else request.error[:4000]
    row.completed_at, row.updated_at = request.completed_at, _now()
    return row


def _pull_request_row(session, table, repo: str, number: int):
    """The row of ``table`` for one pull request, added to the session if it is new."""
    row = session.scalar(select(table).where(table.repo == repo, table.number == number))
    if row is None:
        row = table(repo=repo, number=number)
        session.add(row)
    return row
