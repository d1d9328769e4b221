"""The `Benchmarks` port over SQL: requests, their admission and release, results and history
points.

An admission is one transaction that no other admission to the same repository interleaves with
(`admission`): a plain transaction would let two `/bench` comments read the same "nothing running"
and both dispatch."""

from __future__ import annotations

import json

from sqlalchemy import and_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.core import stepmap
from bot.core.bench import contract
from bot.service.ports.store import Admission, Benchmarks
from bot.service.records import BenchRequest, BenchResult, StoredStepMap

from . import admission
from .database import Database, now, table, utc
from .tables import BenchRequestRow, BenchResultRow, MetricPointRow, StepMapRow, WorkKeyRow


class SqlBenchmarks(Benchmarks):
    def __init__(self, db: Database):
        self.db = db

    def open(self, request) -> tuple[BenchRequest, bool]:
        try:
            with self.db.session() as session:
                row = _new_row(request)
                session.add(row)
                session.flush()
                return _record(row), True
        except IntegrityError:
            existing = self.get(request.correlation_id)
            if existing is None:  # the unique key was not the correlation id: not a replay
                raise
            return existing, False

    def admit(self, correlation_id, repo, number, user, decide):
        with self.db.session() as session:
            admission.lock(session, self.db.dialect, repo)
            existing = session.scalar(_by_correlation(correlation_id))
            active = session.scalars(
                select(BenchRequestRow)
                .where(
                    BenchRequestRow.repo == repo,
                    BenchRequestRow.number == number,
                    BenchRequestRow.status.in_(contract.ACTIVE),
                )
                .order_by(BenchRequestRow.id.desc())
            )
            facts = Admission(
                existing=None if existing is None else _record(existing),
                active=tuple(_record(row) for row in active),
                user_last=admission.last_command(session, repo, user=user),
                pr_last=admission.last_command(session, repo, number=number),
            )
            decision, request = decide(facts)
            if request is None:
                return decision, None
            row = _new_row(request)
            session.add(row)
            session.flush()
            return decision, _record(row)

    def release(self, correlation_id, error, now) -> BenchRequest | None:
        with self.db.session() as session:
            released = (
                session.connection()
                .execute(
                    update(BenchRequestRow)
                    .where(BenchRequestRow.correlation_id == correlation_id, _NEVER_RAN_YET)
                    .values(status=contract.FAILED, error=error[:4000], completed_at=now, updated_at=now)
                )
                .rowcount
            )
            if not released:
                return None
            return _record(session.scalars(_by_correlation(correlation_id)).one())

    def get(self, correlation_id) -> BenchRequest | None:
        with self.db.session() as session:
            row = session.scalar(_by_correlation(correlation_id))
            return None if row is None else _record(row)

    def update(self, request) -> None:
        with self.db.session() as session:
            _update(session, request)

    def for_pull(self, repo, number) -> list[BenchRequest]:
        at = BenchRequestRow.number.is_(None) if number is None else BenchRequestRow.number == number
        query = (
            select(BenchRequestRow)
            .where(BenchRequestRow.repo == repo, at)
            .order_by(BenchRequestRow.id.desc())
        )
        with self.db.session() as session:
            return [_record(row) for row in session.scalars(query)]

    def complete(self, request, results, points, work_key, step_maps=()) -> bool:
        stamp = now()
        try:
            with self.db.session() as session:
                session.add(WorkKeyRow(key=work_key, created_at=stamp))
                session.flush()
                row = _update(session, request)
                for result in results:
                    stored = BenchResultRow(
                        request_id=row.id,
                        repo=row.repo,
                        number=row.number,
                        suite=result.suite,
                        base_sha=result.base_sha,
                        head_sha=result.head_sha,
                        verdict=result.verdict,
                        headline_metric=result.headline_metric,
                        headline_change=result.headline_change,
                        comparison=result.comparison,
                        on_default_branch=result.on_default_branch,
                        created_at=stamp,
                    )
                    session.add(stored)
                    session.flush()
                    session.add_all(
                        MetricPointRow(
                            result_id=stored.id,
                            repo=row.repo,
                            suite=p.suite,
                            metric=p.metric,
                            unit=p.unit,
                            better=p.better,
                            sha=p.sha,
                            value=p.value,
                            measured_at=stamp,
                        )
                        for p in points
                        if p.suite == result.suite
                    )
                for stored_map in step_maps:
                    session.execute(self._replace_map(stored_map, stamp))
        except IntegrityError:
            with self.db.session() as session:
                if session.get(WorkKeyRow, work_key) is not None:
                    return False
            raise
        return True

    def step_map(self, repo) -> StoredStepMap | None:
        query = (
            select(StepMapRow)
            .where(StepMapRow.repo == repo)
            .order_by(StepMapRow.stored_at.desc(), StepMapRow.id.desc())
            .limit(1)
        )
        with self.db.session() as session:
            row = session.scalars(query).first()
            if row is None:
                return None
            try:
                return StoredStepMap(row.repo, row.branch, stepmap.parse(json.loads(row.body)))
            except (ValueError, RecursionError):  # stored by a version that wrote another schema
                return None

    def _replace_map(self, stored: StoredStepMap, stamp):
        """An insert of ``stored`` that replaces its repository and suite's map in the same
        statement (an upsert: two runs completing at once leave one row, the last written)."""
        upsert = (postgresql_insert if self.db.dialect == "postgresql" else sqlite_insert)(table(StepMapRow))
        values = dict(
            repo=stored.repo,
            suite=stored.step_map.suite,
            branch=stored.branch,
            commit_sha=stored.step_map.commit,
            body=json.dumps(stored.step_map.to_dict()),
            stored_at=stamp,
        )
        return upsert.values(**values).on_conflict_do_update(
            index_elements=[StepMapRow.repo, StepMapRow.suite],
            set_={key: upsert.excluded[key] for key in ("branch", "commit_sha", "body", "stored_at")},
        )

    def measured(self, repo, suite, head_sha) -> BenchResult | None:
        query = (
            select(BenchResultRow)
            .where(
                BenchResultRow.repo == repo,
                BenchResultRow.suite == suite,
                BenchResultRow.head_sha == head_sha,
                BenchResultRow.on_default_branch.is_(True),
            )
            .order_by(BenchResultRow.id.desc())
            .limit(1)
        )
        with self.db.session() as session:
            row = session.scalar(query)
            return None if row is None else _result(row)

    def results(self, request_id) -> list[BenchResult]:
        query = (
            select(BenchResultRow).where(BenchResultRow.request_id == request_id).order_by(BenchResultRow.id)
        )
        with self.db.session() as session:
            return [_result(r) for r in session.scalars(query)]


def _result(row: BenchResultRow) -> BenchResult:
    return BenchResult(
        suite=row.suite,
        base_sha=row.base_sha,
        head_sha=row.head_sha,
        verdict=row.verdict,
        headline_metric=row.headline_metric,
        headline_change=row.headline_change,
        comparison=row.comparison,
        on_default_branch=row.on_default_branch,
    )


# A request not known to have reached GitHub: recorded, or sent without a run found yet.
_NEVER_RAN_YET = and_(
    BenchRequestRow.status.in_((contract.REQUESTED, contract.DISPATCHING)), BenchRequestRow.run_id.is_(None)
)


def _new_row(request: BenchRequest) -> BenchRequestRow:
    return BenchRequestRow(
        correlation_id=request.correlation_id,
        repo=request.repo,
        installation_id=request.installation_id,
        number=request.number,
        base_sha=request.base_sha,
        head_sha=request.head_sha,
        suites=json.dumps(list(request.suites)),
        rounds=request.rounds,
        max_rounds=request.max_rounds,
        trigger=request.trigger,
        requested_by=request.requested_by,
        comment_id=request.comment_id,
        status=request.status,
        run_id=request.run_id,
        run_url=request.run_url,
        check_run_id=request.check_run_id,
        conclusion=request.conclusion,
        error=request.error,
        created_at=request.created_at,
        updated_at=now(),
        completed_at=request.completed_at,
    )


def _record(row: BenchRequestRow) -> BenchRequest:
    return BenchRequest(
        correlation_id=row.correlation_id,
        repo=row.repo,
        installation_id=row.installation_id,
        number=row.number,
        base_sha=row.base_sha,
        head_sha=row.head_sha,
        suites=tuple(json.loads(row.suites)),
        rounds=row.rounds,
        max_rounds=row.max_rounds,
        trigger=row.trigger,
        requested_by=row.requested_by,
        comment_id=row.comment_id,
        status=row.status,
        created_at=utc(row.created_at) or now(),
        run_id=row.run_id,
        run_url=row.run_url,
        check_run_id=row.check_run_id,
        conclusion=row.conclusion,
        error=row.error,
        completed_at=utc(row.completed_at),
        id=row.id,
    )


def _by_correlation(correlation_id: str):
    return select(BenchRequestRow).where(BenchRequestRow.correlation_id == correlation_id)


def _update(session: Session, request: BenchRequest) -> BenchRequestRow:
    row = session.scalar(_by_correlation(request.correlation_id))
    if row is None:
        raise KeyError(f"no bench request {request.correlation_id}")
    row.status, row.run_id, row.run_url = request.status, request.run_id, request.run_url
    row.check_run_id, row.conclusion = request.check_run_id, request.conclusion
    row.error = None if request.error is None else request.error[:4000]
    row.completed_at, row.updated_at = request.completed_at, now()
    return row
