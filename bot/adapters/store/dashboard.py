"""The dashboard's queries over SQL (the `DashboardStore` half of `SqlStore`), and the derived
columns they read.

Other parts of the bot append rows that the dashboard summarises: benchmark comparisons
(`bench_results`), acknowledgements (`acks`) and the default branch's metric points
(`metric_points`). Rather than aggregate those on every page, each merge carries its benchmark
outcome and whether it was acknowledged, and `metric_series` lists the series; before each
dashboard read, `sync` folds in the rows appended since the last one (a few index look-ups when
there are none). So a list page is one indexed query whatever writes the results.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sqlalchemy import and_, case, func, or_, select, text, true, tuple_
from sqlalchemy.orm import Session

from bot.core.history.outcome import Measured, merge_outcome
from bot.core.vocabulary import CANCELLED, FAILED, FLAGGED_LEVELS, SUPERSEDED
from bot.service.ports.dashboard import (
    BenchAttempt,
    BenchOutcome,
    DashboardStore,
    FlaggedMerge,
    Landed,
    MergeDetail,
    MergeOutcomeRow,
    MergePage,
    MergeQuery,
    Point,
    SeriesKey,
    TriageEvent,
)
from bot.service.records import Ack, Merge

from .database import Database
from .database import utc as _utc
from .reviews import pull_request_row, reasons_from, reasons_json
from .tables import (
    AckRow,
    BenchRequestRow,
    BenchResultRow,
    DashboardSyncRow,
    MergeRow,
    MetricPointRow,
    MetricSeriesRow,
    RepositoryRow,
    TriageEventRow,
)

# Ids this far below a watermark are read again: a row whose transaction committed after one
# with a higher id would otherwise be skipped. Folding a row in twice changes nothing.
RESCAN = 200
_CHUNK = 500

_STATE = case(
    (MergeRow.triage_state.is_not(None), MergeRow.triage_state),
    (MergeRow.acked.is_(True), "acknowledged"),
    else_="open",
)
_LIST_COLUMNS = (
    MergeRow.repo,
    MergeRow.number,
    MergeRow.title,
    MergeRow.author,
    MergeRow.url,
    MergeRow.merged_at,
    MergeRow.merge_sha,
    MergeRow.head_sha,
    MergeRow.score,
    MergeRow.level,
    MergeRow.top_reason,
    MergeRow.bench_verdict,
    MergeRow.headline_metric,
    MergeRow.headline_change,
    _STATE.label("state"),
    MergeRow.fixed_by,
    MergeRow.acked,
)
_ORDER = {
    "merged": (MergeRow.merged_at,),
    "risk": (MergeRow.score, MergeRow.merged_at),
    "change": (MergeRow.headline_change, MergeRow.merged_at),
    "repo": (MergeRow.repo, MergeRow.number),
}


# The distinct repositories of the merges, one index look-up each (a loose index scan): DISTINCT
# would read every merge.
_MERGED_REPOS = text(
    "WITH RECURSIVE r(repo) AS (SELECT min(repo) FROM merges"
    " UNION ALL SELECT (SELECT min(repo) FROM merges WHERE repo > r.repo) FROM r WHERE r.repo IS NOT NULL)"
    " SELECT repo FROM r WHERE repo IS NOT NULL"
)


def is_flagged(level: str | None, verdict: str | None) -> bool:
    return level in FLAGGED_LEVELS or verdict not in (None, "unchanged")


class SqlDashboard(DashboardStore):
    """The dashboard's port over the store's database: merges recorded by the service, and the
    queries and triage writes of the dashboard."""

    def __init__(self, db: Database):
        self.db = db
        self._session = db.session

    # the merges the service records

    def record_merge(self, merge: Merge) -> None:
        with self._session() as session:
            row = pull_request_row(session, MergeRow, merge.repo, merge.number)
            row.title, row.merge_sha, row.head_sha = merge.title, merge.merge_sha, merge.head_sha
            row.score, row.level, row.merged_at = merge.score, merge.level, merge.merged_at
            row.author, row.url = merge.author, merge.url
            row.top_reason = merge.reasons[0].text if merge.reasons else None
            row.reasons = reasons_json(merge.reasons)
            self.derive_merge(session, row)

    def merges(self, repo: str | None = None) -> list[Merge]:
        query = select(MergeRow).order_by(MergeRow.merged_at.desc(), MergeRow.id.desc())
        if repo is not None:
            query = query.where(MergeRow.repo == repo)
        with self._session() as session:
            return [
                Merge(
                    repo=r.repo,
                    number=r.number,
                    title=r.title,
                    merge_sha=r.merge_sha,
                    head_sha=r.head_sha,
                    score=r.score,
                    level=r.level,
                    merged_at=_utc(r.merged_at),
                    author=r.author,
                    url=r.url,
                    reasons=reasons_from(r.reasons),
                )
                for r in session.scalars(query)
            ]

    # the derived columns

    def sync(self) -> None:
        """Fold the benchmark results, acknowledgements and metric points appended since the
        last call into the merges and the list of series."""
        with self._session() as session:
            _sync(session)

    def derive_merge(self, session: Session, row: MergeRow) -> None:
        """A merge just recorded: its outcome from the results and acks already stored."""
        session.flush()
        _derive(session, [row.id])

    # queries

    def flagged_merges(self, query: MergeQuery) -> MergePage:
        conditions = _conditions(query)
        order = _order(query)
        # The page's ids first (from the covering index alone on PostgreSQL), then their rows.
        page_ids = (
            select(MergeRow.id)
            .where(*conditions)
            .order_by(*order, MergeRow.id.desc())
            .limit(query.per_page)
            .offset((query.page - 1) * query.per_page)
            .subquery()
        )
        statement = (
            select(*_LIST_COLUMNS)
            .join(page_ids, MergeRow.id == page_ids.c.id)
            .order_by(*order, MergeRow.id.desc())
        )
        with self._session() as session:
            _sync(session)
            total = session.scalar(select(func.count()).select_from(MergeRow).where(*conditions)) or 0
            items = [_flagged(row) for row in session.execute(statement)]
        return MergePage(items, total, query.page, query.per_page)

    def merge_detail(self, repo: str, number: int) -> MergeDetail | None:
        with self._session() as session:
            _sync(session)
            row = session.execute(
                select(*_LIST_COLUMNS, MergeRow.reasons).where(
                    MergeRow.repo == repo, MergeRow.number == number
                )
            ).one_or_none()
            if row is None:
                return None
            merge = _flagged(row)
            results = session.scalars(
                select(BenchResultRow)
                .where(_measures(merge.repo, merge.number, merge.head_sha, merge.merge_sha))
                .order_by(BenchResultRow.created_at, BenchResultRow.id)
            )
            outcomes = [_bench_outcome(r) for r in results]
            acks = session.scalars(
                select(AckRow).where(AckRow.repo == repo, AckRow.number == number).order_by(AckRow.id)
            )
            triage = session.scalars(
                select(TriageEventRow)
                .where(TriageEventRow.repo == repo, TriageEventRow.number == number)
                .order_by(TriageEventRow.id)
            )
            attempts = session.scalars(
                select(BenchRequestRow)
                .where(
                    _attempts(merge.repo, merge.number, merge.head_sha, merge.merge_sha),
                    BenchRequestRow.status.in_((FAILED, CANCELLED, SUPERSEDED)),
                )
                .order_by(BenchRequestRow.created_at, BenchRequestRow.id)
            )
            return MergeDetail(
                merge,
                _json_list(row.reasons),
                outcomes,
                [
                    Ack(
                        repo=a.repo,
                        number=a.number,
                        head_sha=a.head_sha,
                        user=a.user,
                        reason=a.reason,
                        comment_id=a.comment_id,
                        created_at=_utc(a.created_at) or a.created_at,
                    )
                    for a in acks
                ],
                [
                    TriageEvent(t.state, t.fixed_by, t.note, t.user, _utc(t.created_at) or t.created_at)
                    for t in triage
                ],
                [_attempt(a) for a in attempts],
            )

    def record_triage(self, repo: str, number: int, event: TriageEvent) -> bool:
        with self._session() as session:
            merge = session.scalar(select(MergeRow).where(MergeRow.repo == repo, MergeRow.number == number))
            if merge is None:
                return False
            merge.triage_state, merge.fixed_by = event.state, event.fixed_by
            session.add(
                TriageEventRow(
                    repo=repo,
                    number=number,
                    state=event.state,
                    fixed_by=event.fixed_by,
                    note=event.note,
                    user=event.user,
                    created_at=event.created_at,
                )
            )
            return True

    def series_keys(self, visible: frozenset[str] | None) -> list[SeriesKey]:
        statement = select(MetricSeriesRow).order_by(
            MetricSeriesRow.repo, MetricSeriesRow.suite, MetricSeriesRow.metric
        )
        if visible is not None:
            statement = statement.where(MetricSeriesRow.repo.in_(sorted(visible)))
        with self._session() as session:
            _sync(session)
            return [
                SeriesKey(s.repo, s.suite, s.metric, s.unit, s.better, s.points, _utc(s.last_at))
                for s in session.scalars(statement)
            ]

    def series_key(self, repo, suite, metric) -> SeriesKey | None:
        with self._session() as session:
            s = session.scalar(
                select(MetricSeriesRow).where(
                    MetricSeriesRow.repo == repo,
                    MetricSeriesRow.suite == suite,
                    MetricSeriesRow.metric == metric,
                )
            )
            return (
                None
                if s is None
                else SeriesKey(s.repo, s.suite, s.metric, s.unit, s.better, s.points, _utc(s.last_at))
            )

    def series(self, repo, suite, metric, since, until, limit) -> list[Point]:
        statement = (
            select(MetricPointRow.sha, MetricPointRow.value, MetricPointRow.measured_at)
            .where(*_of_series(repo, suite, metric))
            .order_by(MetricPointRow.measured_at.desc(), MetricPointRow.id.desc())
            .limit(limit)
        )
        if since is not None:
            statement = statement.where(MetricPointRow.measured_at >= since)
        if until is not None:
            statement = statement.where(MetricPointRow.measured_at < until)
        with self._session() as session:
            rows = session.execute(statement).all()
        return [Point(sha, value, _utc(at) or at) for sha, value, at in reversed(rows)]

    def landed(self, repo, since, until, flagged_only=False) -> list[Landed]:
        statement = (
            select(
                MergeRow.repo,
                MergeRow.number,
                MergeRow.title,
                MergeRow.merge_sha,
                MergeRow.merged_at,
                MergeRow.score,
                MergeRow.level,
                MergeRow.flagged,
            )
            .where(MergeRow.repo == repo, MergeRow.merged_at >= since, MergeRow.merged_at <= until)
            .order_by(MergeRow.merged_at, MergeRow.id)
        )
        if flagged_only:
            statement = statement.where(MergeRow.flagged == true())
        with self._session() as session:
            return [
                Landed(r.repo, r.number, r.title, r.merge_sha, _utc(r.merged_at), r.score, r.level, r.flagged)
                for r in session.execute(statement)
            ]

    def outcomes(self, visible: frozenset[str] | None) -> list[MergeOutcomeRow]:
        statement = select(
            MergeRow.repo, MergeRow.level, MergeRow.reasons, MergeRow.bench_verdict, MergeRow.triage_state
        ).where(or_(MergeRow.bench_verdict.is_not(None), MergeRow.triage_state.is_not(None)))
        if visible is not None:
            statement = statement.where(MergeRow.repo.in_(sorted(visible)))
        with self._session() as session:
            _sync(session)
            rows = session.execute(statement).all()
        return [
            MergeOutcomeRow(
                r.repo,
                r.level,
                tuple(str(x.get("rule")) for x in _json_list(r.reasons)),
                r.bench_verdict,
                r.triage_state,
            )
            for r in rows
        ]

    def repository_privacy(self) -> dict[str, bool]:
        with self._session() as session:
            known = {name: True for (name,) in session.execute(_MERGED_REPOS)}
            known.update({name: True for (name,) in session.execute(select(MetricSeriesRow.repo).distinct())})
            for name, private in session.execute(select(RepositoryRow.full_name, RepositoryRow.private)):
                known[name] = private is not False
        return known


def _order(query: MergeQuery) -> list[Any]:
    """The ORDER BY of a list: by merge time it follows the index on (flagged, merged_at) (a merge
    without a time, which GitHub never sends, sorts as the database puts NULLs); by a value that
    may be missing (score, change), the missing ones come last."""
    columns = _ORDER[query.sort]
    if query.sort == "merged":
        return [c.desc() if query.descending else c.asc() for c in columns]
    return [(c.desc() if query.descending else c.asc()).nulls_last() for c in columns]


def _conditions(query: MergeQuery) -> list[Any]:
    conditions: list[Any] = [MergeRow.flagged == true()]  # '= true', not 'IS true': the index serves it
    if query.visible is not None:
        conditions.append(MergeRow.repo.in_(sorted(query.visible)))
    if query.repos:
        conditions.append(MergeRow.repo.in_(query.repos))
    if query.levels:
        named = [level for level in query.levels if level != "none"]
        either: list[Any] = [MergeRow.level.in_(named)] if named else []
        if "none" in query.levels:
            either += [MergeRow.level == "none", MergeRow.level.is_(None)]
        conditions.append(or_(*either))
    if query.verdicts:
        named = [v for v in query.verdicts if v != "none"]
        either = [MergeRow.bench_verdict.in_(named)] if named else []
        if "none" in query.verdicts:
            either.append(MergeRow.bench_verdict.is_(None))
        conditions.append(or_(*either))
    if query.states:
        conditions.append(_STATE.in_(query.states))
    if query.since is not None:
        conditions.append(MergeRow.merged_at >= query.since)
    if query.until is not None:
        conditions.append(MergeRow.merged_at < query.until)
    return conditions


def _measures(repo: str, number: int, head_sha: str, merge_sha: str | None) -> Any:
    """The comparisons of a merge: its pull request at the merged head, and its merge commit."""
    pull = and_(BenchResultRow.number == number, BenchResultRow.head_sha == head_sha)
    either = or_(pull, BenchResultRow.head_sha == merge_sha) if merge_sha else pull
    return and_(BenchResultRow.repo == repo, either)


def _attempts(repo: str, number: int, head_sha: str, merge_sha: str | None) -> Any:
    """The benchmark requests of a merge, as `_measures` finds its comparisons."""
    pull = and_(BenchRequestRow.number == number, BenchRequestRow.head_sha == head_sha)
    either = or_(pull, BenchRequestRow.head_sha == merge_sha) if merge_sha else pull
    return and_(BenchRequestRow.repo == repo, either)


def _attempt(row: BenchRequestRow) -> BenchAttempt:
    try:
        suites = [str(s) for s in json.loads(row.suites or "[]")]
    except ValueError:
        suites = []
    return BenchAttempt(
        suites=suites,
        status=row.status,
        conclusion=row.conclusion,
        error=row.error,
        run_url=row.run_url,
        trigger=row.trigger,
        head_sha=row.head_sha,
        created_at=_utc(row.created_at) or row.created_at,
    )


def _sync(session: Session) -> None:
    results, acks, points = session.execute(
        select(
            select(func.coalesce(func.max(BenchResultRow.id), 0)).scalar_subquery(),
            select(func.coalesce(func.max(AckRow.id), 0)).scalar_subquery(),
            select(func.coalesce(func.max(MetricPointRow.id), 0)).scalar_subquery(),
        )
    ).one()
    seen = session.get(DashboardSyncRow, 1)
    if seen is None:
        seen = DashboardSyncRow(id=1, results_seen=0, acks_seen=0, points_seen=0)
        session.add(seen)
    if (results, acks, points) == (seen.results_seen, seen.acks_seen, seen.points_seen):
        return
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        # One replica folds new rows in at a time; the others read what is there now.
        locked = session.execute(
            select(DashboardSyncRow.id).where(DashboardSyncRow.id == 1).with_for_update(skip_locked=True)
        ).first()
        if locked is None:
            return
        session.refresh(seen)
    if results != seen.results_seen or acks != seen.acks_seen:
        _derive(session, _merges_touched(session, seen.results_seen - RESCAN, seen.acks_seen - RESCAN))
    if points != seen.points_seen:
        _recount_series(session, seen.points_seen - RESCAN)
    seen.results_seen, seen.acks_seen, seen.points_seen = results, acks, points


def _merges_touched(session: Session, results_after: int, acks_after: int) -> set[int]:
    new = (
        select(BenchResultRow.repo, BenchResultRow.number, BenchResultRow.head_sha)
        .where(BenchResultRow.id > results_after)
        .subquery()
    )
    by_pull = select(MergeRow.id).join(
        new,
        and_(
            MergeRow.repo == new.c.repo, MergeRow.number == new.c.number, MergeRow.head_sha == new.c.head_sha
        ),
    )
    by_commit = select(MergeRow.id).join(
        new, and_(MergeRow.repo == new.c.repo, MergeRow.merge_sha == new.c.head_sha)
    )
    new_acks = select(AckRow.repo, AckRow.number).where(AckRow.id > acks_after).subquery()
    by_ack = select(MergeRow.id).join(
        new_acks, and_(MergeRow.repo == new_acks.c.repo, MergeRow.number == new_acks.c.number)
    )
    return {merge_id for query in (by_pull, by_commit, by_ack) for (merge_id,) in session.execute(query)}


def _derive(session: Session, merge_ids: Iterable[int]) -> None:
    """Recompute the outcome, acknowledgement and flag of these merges from scratch."""
    for chunk in _chunks(sorted(merge_ids)):
        merges = {m.id: m for m in session.scalars(select(MergeRow).where(MergeRow.id.in_(chunk)))}
        measured: dict[int, list[Measured]] = {merge_id: [] for merge_id in merges}
        pulls = (
            select(
                MergeRow.id,
                BenchResultRow.verdict,
                BenchResultRow.headline_metric,
                BenchResultRow.headline_change,
            )
            .join(
                BenchResultRow,
                and_(
                    BenchResultRow.repo == MergeRow.repo,
                    BenchResultRow.number == MergeRow.number,
                    BenchResultRow.head_sha == MergeRow.head_sha,
                ),
            )
            .where(MergeRow.id.in_(chunk))
        )
        commits = (
            select(
                MergeRow.id,
                BenchResultRow.verdict,
                BenchResultRow.headline_metric,
                BenchResultRow.headline_change,
            )
            .join(
                BenchResultRow,
                and_(BenchResultRow.repo == MergeRow.repo, BenchResultRow.head_sha == MergeRow.merge_sha),
            )
            .where(MergeRow.id.in_(chunk))
        )
        for query in (pulls, commits):
            for merge_id, verdict, metric, change in session.execute(query):
                measured[merge_id].append(Measured(verdict, metric, change))
        keys = [(m.repo, m.number) for m in merges.values()]
        acked = (
            {
                (repo, number)
                for repo, number in session.execute(
                    select(AckRow.repo, AckRow.number)
                    .where(tuple_(AckRow.repo, AckRow.number).in_(keys))
                    .distinct()
                )
            }
            if keys
            else set()
        )
        for merge_id, row in merges.items():
            outcome = merge_outcome(measured[merge_id])
            row.bench_verdict = outcome.verdict if outcome else None
            row.headline_metric = outcome.headline_metric if outcome else None
            row.headline_change = outcome.headline_change if outcome else None
            row.acked = (row.repo, row.number) in acked
            row.flagged = is_flagged(row.level, row.bench_verdict)


def _recount_series(session: Session, points_after: int) -> None:
    touched = session.execute(
        select(MetricPointRow.repo, MetricPointRow.suite, MetricPointRow.metric)
        .where(MetricPointRow.id > points_after)
        .distinct()
    ).all()
    for repo, suite, metric in touched:
        of_series = _of_series(repo, suite, metric)
        count, last_at = session.execute(
            select(func.count(), func.max(MetricPointRow.measured_at)).where(*of_series)
        ).one()
        unit, better = session.execute(
            select(MetricPointRow.unit, MetricPointRow.better)
            .where(*of_series)
            .order_by(MetricPointRow.measured_at.desc(), MetricPointRow.id.desc())
            .limit(1)
        ).one()
        row = session.scalar(
            select(MetricSeriesRow).where(
                MetricSeriesRow.repo == repo, MetricSeriesRow.suite == suite, MetricSeriesRow.metric == metric
            )
        )
        if row is None:
            row = MetricSeriesRow(repo=repo, suite=suite, metric=metric)
            session.add(row)
        row.unit, row.better, row.points, row.last_at = unit, better, count, last_at


def _of_series(repo: str, suite: str, metric: str) -> tuple[Any, ...]:
    return MetricPointRow.repo == repo, MetricPointRow.suite == suite, MetricPointRow.metric == metric


def _flagged(row: Any) -> FlaggedMerge:
    return FlaggedMerge(
        row.repo,
        row.number,
        row.title,
        row.author,
        row.url,
        _utc(row.merged_at),
        row.merge_sha,
        row.head_sha,
        row.score,
        row.level,
        row.top_reason,
        row.bench_verdict,
        row.headline_metric,
        row.headline_change,
        row.state,
        row.fixed_by,
        bool(row.acked),
    )


def _bench_outcome(row: BenchResultRow) -> BenchOutcome:
    try:
        comparison = json.loads(row.comparison)
    except ValueError:
        comparison = {}
    return BenchOutcome(
        row.suite,
        row.verdict,
        row.headline_metric,
        row.headline_change,
        row.base_sha,
        row.head_sha,
        bool(row.on_default_branch),
        _utc(row.created_at),
        comparison if isinstance(comparison, dict) else {},
    )


def _json_list(text: str | None) -> list[dict[str, Any]]:
    if not text:
        return []
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _chunks(items: Sequence[int]) -> Iterator[Sequence[int]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]
