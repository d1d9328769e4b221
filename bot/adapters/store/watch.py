"""The `Watch` port over SQL: regression cases (opened once per change, moved by conditional
updates only) and the daily GPU budget's ledger (charged in a transaction that no other charge to
the repository interleaves with: SQLite's writer lock queues every writer; on PostgreSQL a
transaction-scoped advisory lock keyed on the repository does)."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, fields

from sqlalchemy import func, or_, select, text, union, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.core.watch import cases as case_states
from bot.service.ports.store import Cooldowns, SeriesRow, Spending, Watch
from bot.service.records import RegressionCase

from . import admission
from .database import Database, now, table, utc
from .tables import BenchResultRow, GpuSpendRow, MergeRow, MetricPointRow, RegressionCaseRow

_COLUMNS = {f.name for f in fields(RegressionCase)}
_FIXED = {"key", "repo", "suite", "metric", "good_sha", "bad_sha", "source", "detected_at", "state"}


class SqlWatch(Watch):
    def __init__(self, db: Database):
        self.db = db

    def open(self, case) -> tuple[RegressionCase, bool]:
        try:
            with self.db.session() as session:
                row = _new_row(case)
                session.add(row)
                session.flush()
                return _record(row), True
        except IntegrityError:
            existing = self.get(case.key)
            if existing is None:  # the same change under another key: cannot be, keys are the change
                raise
            return existing, False

    def open_by_command(self, repo, number, user, cases, decide):
        keys = [case.key for case in cases]
        with self.db.session() as session:
            admission.lock(session, self.db.dialect, repo)
            cooldowns = Cooldowns(
                user_last=admission.last_command(session, repo, user=user, own_cases=keys),
                pr_last=admission.last_command(session, repo, number=number, own_cases=keys),
            )
            decision, accepted = decide(cooldowns)
            if not accepted:
                return decision, []
            opened = []
            for case in cases:
                # The watch opens cases outside the admission: one of the same change opened in the
                # meantime is found, never a conflict that would roll the admission back.
                rows = table(RegressionCaseRow)
                insert = (postgresql_insert if self.db.dialect == "postgresql" else sqlite_insert)(rows)
                added = session.execute(
                    insert.values(**_new_values(case)).on_conflict_do_nothing().returning(rows.c.id)
                ).first()
                opened.append((_record(session.scalars(_by_key(case.key)).one()), added is not None))
            return decision, opened

    def supersede(self, old_key, new) -> tuple[RegressionCase, bool]:
        for _ in range(2):  # a second server opening the same new case first: then find it
            try:
                with self.db.session() as session:
                    row = session.scalar(_by_key(new.key))
                    if row is None:
                        row = _new_row(new)
                        session.add(row)
                        session.flush()
                    moved = (
                        session.connection()
                        .execute(
                            update(RegressionCaseRow)
                            .where(
                                RegressionCaseRow.key == old_key,
                                RegressionCaseRow.state.in_(case_states.sources_of(case_states.SUPERSEDED)),
                            )
                            .values(
                                state=case_states.SUPERSEDED,
                                superseded_by=new.key,
                                updated_at=now(),
                                finished_at=now(),
                            )
                        )
                        .rowcount
                    )
                    return _record(row), bool(moved)
            except IntegrityError:
                continue
        raise RuntimeError(f"case {new.key} could neither be recorded nor found")

    def move(self, key, wanted, sources, now, **changes) -> RegressionCase | None:
        _check(changes)
        values = {**changes, "state": wanted, "updated_at": now}
        if wanted in case_states.ENDS or wanted == case_states.OUT_OF_BUDGET:
            values.setdefault("finished_at", now)
        with self.db.session() as session:
            moved = (
                session.connection()
                .execute(
                    update(RegressionCaseRow)
                    .where(RegressionCaseRow.key == key, RegressionCaseRow.state.in_(sources))
                    .values(**values)
                )
                .rowcount
            )
            if not moved:
                return None
            return _record(session.scalars(_by_key(key)).one())

    def note(self, key, **changes) -> None:
        _check(changes)
        with self.db.session() as session:
            session.connection().execute(
                update(RegressionCaseRow)
                .where(RegressionCaseRow.key == key)
                .values(**changes, updated_at=now())
            )

    def get(self, key) -> RegressionCase | None:
        with self.db.session() as session:
            row = session.scalar(_by_key(key))
            return None if row is None else _record(row)

    def by_correlation(self, correlation_id) -> RegressionCase | None:
        query = select(RegressionCaseRow).where(RegressionCaseRow.correlation_id == correlation_id)
        with self.db.session() as session:
            row = session.scalar(query.order_by(RegressionCaseRow.id).limit(1))
            return None if row is None else _record(row)

    def of_series(self, repo, suite, metric, states) -> list[RegressionCase]:
        query = (
            select(RegressionCaseRow)
            .where(
                RegressionCaseRow.repo == repo,
                RegressionCaseRow.suite == suite,
                RegressionCaseRow.state.in_(states),
            )
            .order_by(RegressionCaseRow.id)
        )
        if metric is not None:
            query = query.where(RegressionCaseRow.metric == metric)
        with self.db.session() as session:
            return [_record(row) for row in session.scalars(query)]

    def starting(self, repo, prefix, limit=2) -> list[RegressionCase]:
        query = (
            select(RegressionCaseRow)
            .where(RegressionCaseRow.repo == repo, RegressionCaseRow.key.startswith(prefix, autoescape=True))
            .order_by(RegressionCaseRow.id)
            .limit(limit)
        )
        with self.db.session() as session:
            return [_record(row) for row in session.scalars(query)]

    def of_culprit(self, repo, sha) -> list[RegressionCase]:
        query = (
            select(RegressionCaseRow)
            .where(RegressionCaseRow.repo == repo, RegressionCaseRow.culprit_sha == sha)
            .order_by(RegressionCaseRow.id)
        )
        with self.db.session() as session:
            return [_record(row) for row in session.scalars(query)]

    def cases(self, repos, limit=200) -> list[RegressionCase]:
        query = (
            select(RegressionCaseRow)
            .order_by(RegressionCaseRow.detected_at.desc(), RegressionCaseRow.id.desc())
            .limit(limit)
        )
        if repos is not None:
            query = query.where(RegressionCaseRow.repo.in_(sorted(repos)))
        with self.db.session() as session:
            return [_record(row) for row in session.scalars(query)]

    def known_commits(self, repo, prefix, limit=3) -> list[str]:
        if not prefix or any(c not in "0123456789abcdef" for c in prefix):
            return []
        merges = select(MergeRow.merge_sha.label("sha")).where(
            MergeRow.repo == repo, MergeRow.merge_sha.startswith(prefix, autoescape=True)
        )
        points = select(MetricPointRow.sha.label("sha")).where(
            MetricPointRow.repo == repo, MetricPointRow.sha.startswith(prefix, autoescape=True)
        )
        query = select(union(merges, points).subquery().c.sha).distinct().limit(limit)
        with self.db.session() as session:
            return sorted(sha for sha in session.scalars(query) if sha)

    def merge_of(self, repo, sha) -> tuple[int, str | None] | None:
        query = (
            select(MergeRow.number, MergeRow.url, MergeRow.merge_sha)
            .where(MergeRow.repo == repo, or_(MergeRow.merge_sha == sha, MergeRow.head_sha == sha))
            .order_by(MergeRow.id)
        )
        with self.db.session() as session:
            found = session.execute(query).all()
        best = next((row for row in found if row.merge_sha == sha), found[0] if found else None)
        return None if best is None else (best.number, best.url)

    def series(self, repo, suite, metric) -> list[SeriesRow]:
        point = MetricPointRow
        query = (
            select(point.sha, BenchResultRow.base_sha, point.value, point.better)
            .join(BenchResultRow, BenchResultRow.id == MetricPointRow.result_id)
            .where(
                MetricPointRow.repo == repo, MetricPointRow.suite == suite, MetricPointRow.metric == metric
            )
            .order_by(MetricPointRow.measured_at, MetricPointRow.id)
        )
        with self.db.session() as session:
            return [SeriesRow(*row) for row in session.execute(query)]

    def charge(self, key, repo, day, kind, level, minutes, allows, now, budget=None) -> bool:
        try:
            with self.db.session() as session:
                if self.db.dialect == "postgresql":
                    session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _lock_key(repo)})
                known = session.scalar(select(GpuSpendRow).where(GpuSpendRow.key == key))
                if known is not None and known.allowed:
                    return True
                allowed = bool(allows(_spent(session, repo, day)))
                if known is not None:
                    # refused earlier today: budget freed since (a bisect that reported early, one
                    # that failed at dispatch) may allow it now
                    if allowed:
                        known.allowed, known.created_at, known.budget = True, now, budget
                    return allowed
                session.add(
                    GpuSpendRow(
                        key=key,
                        repo=repo,
                        day=day,
                        kind=kind,
                        level=level,
                        minutes=minutes,
                        allowed=allowed,
                        created_at=now,
                        budget=budget,
                    )
                )
                return allowed
        except IntegrityError:  # the same work charged at the same moment by another process
            with self.db.session() as session:
                return bool(session.scalar(select(GpuSpendRow.allowed).where(GpuSpendRow.key == key)))

    def settle(self, key, minutes) -> None:
        with self.db.session() as session:
            session.connection().execute(
                update(GpuSpendRow).where(GpuSpendRow.key == key).values(minutes=minutes)
            )

    def spending(self, repo, day) -> Spending:
        with self.db.session() as session:
            skipped = session.execute(
                select(func.count(GpuSpendRow.id), func.coalesce(func.sum(GpuSpendRow.minutes), 0.0)).where(
                    GpuSpendRow.repo == repo, GpuSpendRow.day == day, GpuSpendRow.allowed.is_(False)
                )
            ).one()
            limit = session.scalar(
                select(GpuSpendRow.budget)
                .where(GpuSpendRow.repo == repo, GpuSpendRow.day == day, GpuSpendRow.budget.is_not(None))
                .order_by(GpuSpendRow.created_at.desc(), GpuSpendRow.id.desc())
                .limit(1)
            )
            return Spending(_spent(session, repo, day), int(skipped[0]), float(skipped[1]), limit)


def _spent(session: Session, repo: str, day: str) -> float:
    return float(
        session.scalar(
            select(func.coalesce(func.sum(GpuSpendRow.minutes), 0.0)).where(
                GpuSpendRow.repo == repo, GpuSpendRow.day == day, GpuSpendRow.allowed.is_(True)
            )
        )
        or 0.0
    )


def _lock_key(repo: str) -> int:
    """A signed 64-bit key for PostgreSQL's advisory locks, the same for the same repository."""
    return int.from_bytes(hashlib.sha256(f"perfbot-budget:{repo}".encode()).digest()[:8], "big", signed=True)


def _check(changes: dict[str, object]) -> None:
    unknown = set(changes) - (_COLUMNS - _FIXED)
    if unknown:
        raise ValueError(f"not a changeable column of a case: {', '.join(sorted(unknown))}")


def _by_key(key: str):
    return select(RegressionCaseRow).where(RegressionCaseRow.key == key)


def _new_values(case: RegressionCase) -> dict[str, object]:
    values = asdict(case)
    values["updated_at"] = values["updated_at"] or case.detected_at
    return values


def _new_row(case: RegressionCase) -> RegressionCaseRow:
    return RegressionCaseRow(**_new_values(case))


def _record(row: RegressionCaseRow) -> RegressionCase:
    values = {name: getattr(row, name) for name in _COLUMNS}
    for name in ("detected_at", "updated_at", "finished_at"):
        values[name] = utc(values[name])
    return RegressionCase(**values)
