"""The records the service exchanges with its ports: deliveries, reviews, merges, repositories,
benchmark requests and results, history points, acknowledgements, and GitHub's runs and artifacts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.core.review.record import Reason as Reason  # the reasons of a review, as the core lists them
from bot.core.stepmap import StepMap
from bot.core.vocabulary import Level, Trigger
from bot.core.watch.cases import Source, State


@dataclass(frozen=True)
class Delivery:
    """A webhook delivery that was accepted and waits to be (or has been) processed."""

    id: int
    hook_id: str
    guid: str
    event: str
    action: str | None
    payload: bytes
    attempts: int = 0
    error: str | None = None  # what the last attempt failed with


@dataclass(frozen=True, kw_only=True)
class Review:
    """The last risk review published on a pull request, with what the sticky comment is composed
    from: the rendered review block by block (`bot.core.render.comment.review_blocks`), whether it
    is worth a comment of its own, and the reasons the dashboard keeps of a merge."""

    repo: str
    number: int
    head_sha: str
    score: int
    level: Level
    comment_id: int | None = None
    check_run_id: int | None = None
    blocks: tuple[str, ...] = ()
    wants_comment: bool = False
    reasons: tuple[Reason, ...] = ()  # heaviest first


@dataclass(frozen=True, kw_only=True)
class Merge:
    """A merged pull request and the risk it was merged with (the dashboard's raw data)."""

    repo: str
    number: int
    title: str
    merge_sha: str | None
    head_sha: str
    score: int | None
    level: Level | None
    merged_at: datetime | None
    author: str | None = None
    url: str | None = None
    reasons: tuple[Reason, ...] = ()  # heaviest first


@dataclass(frozen=True)
class Repository:
    id: int
    full_name: str
    installation_id: int | None
    private: bool | None = None


@dataclass(frozen=True, kw_only=True)
class WorkflowRun:
    id: int
    html_url: str
    status: str
    conclusion: str | None
    display_title: str
    event: str
    path: str
    run_attempt: int = 1


@dataclass(frozen=True)
class ArtifactRef:
    id: int
    name: str
    size: int
    expired: bool


@dataclass(frozen=True, kw_only=True)
class BenchRequest:
    """A benchmark the bot was asked for, and where it stands (bench_requests)."""

    correlation_id: str
    repo: str
    installation_id: int | None
    number: int | None  # None: a run on the default branch (merge or schedule)
    base_sha: str
    head_sha: str
    suites: tuple[str, ...]
    rounds: int | None = None
    max_rounds: int | None = None
    trigger: Trigger
    requested_by: str | None = None
    comment_id: int | None = None
    status: str
    created_at: datetime
    run_id: int | None = None
    run_url: str | None = None
    check_run_id: int | None = None
    conclusion: str | None = None
    error: str | None = None
    completed_at: datetime | None = None
    id: int | None = None


@dataclass(frozen=True, kw_only=True)
class BenchResult:
    """One suite's comparison of a completed request (bench_results)."""

    suite: str
    base_sha: str
    head_sha: str
    verdict: str
    headline_metric: str | None
    headline_change: float | None
    comparison: str  # JSON: `perfbot compare --format json` plus "markdown", the rendered report
    on_default_branch: bool


@dataclass(frozen=True)
class StoredStepMap:
    """The per-step map of a repository's suite, measured on its default branch (step_maps)."""

    repo: str
    branch: str
    step_map: StepMap


@dataclass(frozen=True)
class MetricPoint:
    """One metric of a default-branch run: a point of the history (metric_points)."""

    suite: str
    metric: str
    unit: str
    better: str
    sha: str
    value: float


@dataclass(frozen=True, kw_only=True)
class Ack:
    """A maintainer's `/bench ack` of a pull request's flagged benchmark."""

    repo: str
    number: int
    head_sha: str | None
    user: str
    reason: str
    comment_id: int | None
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        """What the dashboard's API says of it."""
        return {
            "user": self.user,
            "reason": self.reason,
            "head_sha": self.head_sha,
            "created_at": self.created_at.isoformat(),
        }


@dataclass(frozen=True, kw_only=True)
class RegressionCase:
    """A regression on the default branch, from its detection to its culprit (regression_cases):
    the change (`bot.core.watch.cases.Span`), what found it, where its bisect stands, and what the
    bisect found. ``outcome``: the bisect's findings as JSON (its Markdown, the fingerprints of
    today's runs, the kernel diff), for the case's page."""

    key: str
    repo: str
    suite: str
    metric: str  # "": the suite's headline metric (a `/bench bisect` without --metric)
    good_sha: str
    bad_sha: str
    source: Source
    state: State
    installation_id: int | None
    detected_at: datetime
    number: int | None = None  # the pull request a merge run's case is of
    change: float | None = None  # relative change of the metric, when the detection gave one
    requested_by: str | None = None
    correlation_id: str | None = None  # the bisect's benchmark request
    run_url: str | None = None
    culprit_sha: str | None = None
    culprit_number: int | None = None
    culprit_subject: str | None = None
    outcome: str | None = None
    gpu_minutes: float = 0.0  # counted against the budget (`bot.core.watch.budget`)
    comment_url: str | None = None
    issue_number: int | None = None
    superseded_by: str | None = None
    note: str | None = None  # why it stands where it does (out of budget, failed, cancelled by whom)
    updated_at: datetime | None = None
    finished_at: datetime | None = None


@dataclass(frozen=True)
class RepoConfigProblems:
    """What perfbot's last read of a repository's config on its default branch found wrong: ``source``
    names the file and branch (`.github/perfbot.yml@main`), each of ``problems`` one invalid key as
    the file names it (with its "did you mean", if any); ``since``: when perfbot first read the file
    with these problems (`bot.core.config.lenient`: its valid keys in force, automatic runs held)."""

    repo: str
    source: str
    problems: tuple[str, ...]
    since: datetime
