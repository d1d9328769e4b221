"""The dashboard's records and the store port that answers its queries."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.core import vocabulary

from ..records import Ack, Merge

LEVELS = tuple(reversed(vocabulary.LEVELS))  # the filters list the riskiest first
VERDICTS = (*vocabulary.VERDICTS_WORST_FIRST, "none")  # none: not measured
TRIAGE_STATES = ("acknowledged", "confirmed", "false_alarm", "reverted", "fixed")
STATES = ("open", *TRIAGE_STATES)  # open: nobody triaged or acknowledged it yet
SORTS = ("merged", "risk", "change", "repo")


@dataclass(frozen=True, slots=True)
class MergeQuery:
    """One view of the flagged merges. ``visible``: the repositories the viewer may see (None:
    all); the other filters are each 'any' when empty."""

    visible: frozenset[str] | None = None
    repos: tuple[str, ...] = ()
    levels: tuple[str, ...] = ()
    verdicts: tuple[str, ...] = ()
    states: tuple[str, ...] = ()
    since: datetime | None = None  # merged at or after
    until: datetime | None = None  # merged before
    sort: str = "merged"
    descending: bool = True
    page: int = 1
    per_page: int = 50


@dataclass(frozen=True, slots=True)
class FlaggedMerge:
    repo: str
    number: int
    title: str
    author: str | None
    url: str | None
    merged_at: datetime | None
    merge_sha: str | None
    head_sha: str
    score: int | None
    level: str | None
    top_reason: str | None
    verdict: str | None
    headline_metric: str | None
    headline_change: float | None
    state: str  # one of STATES
    fixed_by: int | None
    acked: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "number": self.number,
            "title": self.title,
            "author": self.author,
            "url": self.url,
            "merged_at": _iso(self.merged_at),
            "merge_sha": self.merge_sha,
            "head_sha": self.head_sha,
            "risk": {"score": self.score, "level": self.level, "top_reason": self.top_reason},
            "benchmark": {
                "verdict": self.verdict,
                "headline_metric": self.headline_metric,
                "headline_change": self.headline_change,
            },
            "triage": {"state": self.state, "fixed_by": self.fixed_by},
            "acknowledged": self.acked,
        }


@dataclass(frozen=True, slots=True)
class MergePage:
    items: list[FlaggedMerge]
    total: int
    page: int
    per_page: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))


@dataclass(frozen=True, slots=True)
class BenchOutcome:
    """One comparison that measured the merge: its pull request's head, or the merge commit."""

    suite: str
    verdict: str
    headline_metric: str | None
    headline_change: float | None
    base_sha: str
    head_sha: str
    on_default_branch: bool
    created_at: datetime | None
    comparison: dict[str, Any]  # the JSON of `perfbot compare`

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "verdict": self.verdict,
            "headline_metric": self.headline_metric,
            "headline_change": self.headline_change,
            "base_sha": self.base_sha,
            "head_sha": self.head_sha,
            "on_default_branch": self.on_default_branch,
            "created_at": _iso(self.created_at),
            "comparison": self.comparison,
        }


@dataclass(frozen=True, slots=True)
class TriageEvent:
    state: str  # one of TRIAGE_STATES
    fixed_by: int | None
    note: str
    user: str
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "fixed_by": self.fixed_by,
            "note": self.note,
            "user": self.user,
            "created_at": _iso(self.created_at),
        }


@dataclass(frozen=True, slots=True)
class BenchAttempt:
    """A benchmark of the merge that ended without a comparison: failed, timed out, could not
    start, or was cancelled or superseded, and why."""

    suites: list[str]
    status: str  # failed | cancelled | superseded
    conclusion: str | None  # the workflow run's, when it ran
    error: str | None
    run_url: str | None
    trigger: str
    head_sha: str
    created_at: datetime | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "suites": self.suites,
            "status": self.status,
            "conclusion": self.conclusion,
            "error": self.error,
            "run_url": self.run_url,
            "trigger": self.trigger,
            "head_sha": self.head_sha,
            "created_at": _iso(self.created_at),
        }


@dataclass(frozen=True, slots=True)
class MergeDetail:
    merge: FlaggedMerge
    reasons: list[dict[str, Any]]  # {rule, weight, reason}, heaviest first
    results: list[BenchOutcome]
    acks: list[Ack]
    triage: list[TriageEvent]  # oldest first
    attempts: list[BenchAttempt] = field(default_factory=list)  # without a comparison, oldest first


@dataclass(frozen=True, slots=True)
class SeriesKey:
    repo: str
    suite: str
    metric: str
    unit: str
    better: str
    points: int
    last_at: datetime | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "suite": self.suite,
            "metric": self.metric,
            "unit": self.unit,
            "better": self.better,
            "points": self.points,
            "last_at": _iso(self.last_at),
        }


@dataclass(frozen=True, slots=True)
class Point:
    sha: str
    value: float
    measured_at: datetime


@dataclass(frozen=True, slots=True)
class Landed:
    """A merge on the history chart: where it landed and how risky it was."""

    repo: str
    number: int
    title: str
    merge_sha: str | None
    merged_at: datetime | None
    score: int | None
    level: str | None
    flagged: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "title": self.title,
            "merge_sha": self.merge_sha,
            "merged_at": _iso(self.merged_at),
            "score": self.score,
            "level": self.level,
            "flagged": self.flagged,
        }


@dataclass(frozen=True, slots=True)
class MergeOutcomeRow:
    """What calibration needs of one merge."""

    repo: str
    level: str | None
    rules: tuple[str, ...]
    verdict: str | None
    state: str | None


class DashboardStore(ABC):
    """The merges the service records, and the dashboard's queries and triage writes."""

    @abstractmethod
    def record_merge(self, merge: Merge) -> None: ...

    @abstractmethod
    def merges(self, repo: str | None = None) -> list[Merge]:
        """Every recorded merge (of ``repo``), newest first."""

    @abstractmethod
    def flagged_merges(self, query: MergeQuery) -> MergePage: ...

    @abstractmethod
    def merge_detail(self, repo: str, number: int) -> MergeDetail | None: ...

    @abstractmethod
    def record_triage(self, repo: str, number: int, event: TriageEvent) -> bool:
        """Add a triage event and make it the merge's state; False when no such merge."""

    @abstractmethod
    def series_keys(self, visible: frozenset[str] | None) -> list[SeriesKey]: ...

    @abstractmethod
    def series_key(self, repo: str, suite: str, metric: str) -> SeriesKey | None:
        """One series as last listed (a series whose first points are not yet folded in is
        missing until `series_keys` lists it)."""

    @abstractmethod
    def series(
        self, repo: str, suite: str, metric: str, since: datetime | None, until: datetime | None, limit: int
    ) -> list[Point]:
        """The last ``limit`` points of the series in [since, until), oldest first."""

    @abstractmethod
    def landed(self, repo: str, since: datetime, until: datetime, flagged_only: bool = False) -> list[Landed]:
        """The merges of ``repo`` (only the flagged ones when ``flagged_only``) with
        ``since <= merged_at <= until``, oldest first."""

    @abstractmethod
    def outcomes(self, visible: frozenset[str] | None) -> list[MergeOutcomeRow]:
        """Every merge that a benchmark or a triage may have settled."""

    @abstractmethod
    def repository_privacy(self) -> dict[str, bool]:
        """Each repository the dashboard knows of, and whether it is private (True when GitHub
        never said: a repository is shown to anonymous viewers only once known to be public)."""


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
