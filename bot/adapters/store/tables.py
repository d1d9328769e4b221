"""The database tables, as SQLAlchemy 2 declarative models; Alembic migrations create them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from bot.core.vocabulary import Level, Trigger


class Base(DeclarativeBase):
    pass


LIST_INDEX_INCLUDES = (
    "id",
    "repo",
    "number",
    "level",
    "score",
    "bench_verdict",
    "headline_change",
    "triage_state",
    "acked",
)


class DeliveryRow(Base):
    """One accepted webhook delivery; (hook_id, guid) is unique, which is the replay defence."""

    __tablename__ = "deliveries"
    __table_args__ = (UniqueConstraint("hook_id", "guid", name="uq_deliveries_hook_guid"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    hook_id: Mapped[str] = mapped_column(String(40))
    guid: Mapped[str] = mapped_column(String(80))
    event: Mapped[str] = mapped_column(String(80))
    action: Mapped[str | None] = mapped_column(String(80))
    payload: Mapped[bytes] = mapped_column(LargeBinary)
    status: Mapped[str] = mapped_column(String(16), index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    error: Mapped[str | None] = mapped_column(Text)
    # The lease (bot.service.leases): who holds the delivery now and until when; once it is
    # finished, who finished it. A released one has no owner and is due at lease_expires_at.
    lease_owner: Mapped[str | None] = mapped_column(String(120))
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    repo: Mapped[str | None] = mapped_column(String(200))  # owner/name, when the event names one
    # What the delivery acts on (a pull request: owner/name#number): one delivery of a subject is
    # processed at a time, so that two pushes in a row never race to create one sticky comment.
    subject: Mapped[str | None] = mapped_column(String(220), index=True)
    failure: Mapped[str | None] = mapped_column(String(16))  # permanent | transient | bug


class ConsumerRow(Base):
    """A queue consumer process that is running, as its heartbeat last said."""

    __tablename__ = "consumers"

    owner: Mapped[str] = mapped_column(String(120), primary_key=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    periodic: Mapped[bool] = mapped_column(Boolean)
    threads: Mapped[int] = mapped_column(Integer)


class WriteProbeRow(Base):
    """One row that `/healthz` rewrites, to know that the database takes writes."""

    __tablename__ = "write_probes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    written_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class RepositoryRow(Base):
    """A repository the App is installed on (kept current by installation events)."""

    __tablename__ = "repositories"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    full_name: Mapped[str] = mapped_column(String(200), index=True)
    installation_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    private: Mapped[bool | None] = mapped_column(Boolean)  # None: not told (treated as private)


class ReviewRow(Base):
    """The last risk review published on a pull request."""

    __tablename__ = "reviews"
    __table_args__ = (UniqueConstraint("repo", "number", name="uq_reviews_repo_number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(200))
    number: Mapped[int] = mapped_column(Integer)
    head_sha: Mapped[str] = mapped_column(String(64))
    score: Mapped[int] = mapped_column(Integer)
    level: Mapped[Level] = mapped_column(String(16))
    comment_id: Mapped[int | None] = mapped_column(BigInteger)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # What the sticky comment is composed from without asking GitHub again or scoring again.
    check_run_id: Mapped[int | None] = mapped_column(BigInteger)
    blocks: Mapped[str | None] = mapped_column(Text)  # JSON list of Markdown blocks
    wants_comment: Mapped[bool] = mapped_column(Boolean, default=False)
    reasons: Mapped[str | None] = mapped_column(Text)  # JSON list of {rule, weight, reason}


class PullPushRow(Base):
    """Every push of a pull request's head, at GitHub's time of the event that announced it, in the
    order perfbot recorded them (``id``): an approval binds to the head last pushed before its
    comment was written. A head pushed again is a new row; the same event delivered twice is not."""

    __tablename__ = "pull_pushes"
    __table_args__ = (
        UniqueConstraint("repo", "number", "pushed_at", "head_sha", name="uq_pull_pushes_push"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(200))
    number: Mapped[int] = mapped_column(Integer)
    head_sha: Mapped[str] = mapped_column(String(64))
    pushed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class MergeRow(Base):
    """A merged pull request with the risk it carried when it merged, and what came of it.

    The benchmark columns and ``acked`` are derived from `bench_results` and `acks` (see
    `bot.adapters.store.dashboard`); ``flagged``: risk medium or high, or a benchmark verdict other
    than unchanged."""

    __tablename__ = "merges"
    __table_args__ = (
        UniqueConstraint("repo", "number", name="uq_merges_repo_number"),
        # Covering on PostgreSQL: counting, filtering and ordering a list of flagged merges reads
        # only this index; the page's rows are then fetched by id.
        Index(
            "ix_merges_flagged_merged_at",
            "flagged",
            "merged_at",
            postgresql_include=list(LIST_INDEX_INCLUDES),
        ),
        Index("ix_merges_repo_merged_at", "repo", "merged_at"),
        Index("ix_merges_repo_flagged_merged_at", "repo", "flagged", "merged_at"),
        Index("ix_merges_merge_sha", "merge_sha"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(200), index=True)
    number: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(Text)
    merge_sha: Mapped[str | None] = mapped_column(String(64))
    head_sha: Mapped[str] = mapped_column(String(64))
    score: Mapped[int | None] = mapped_column(Integer)
    level: Mapped[Level | None] = mapped_column(String(16))
    merged_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    flagged: Mapped[bool] = mapped_column(Boolean, default=False)
    author: Mapped[str | None] = mapped_column(String(100))
    url: Mapped[str | None] = mapped_column(Text)
    top_reason: Mapped[str | None] = mapped_column(Text)
    reasons: Mapped[str | None] = mapped_column(Text)  # JSON list of {rule, weight, reason}
    bench_verdict: Mapped[str | None] = mapped_column(String(16))
    headline_metric: Mapped[str | None] = mapped_column(String(100))
    headline_change: Mapped[float | None] = mapped_column(Float)
    acked: Mapped[bool] = mapped_column(Boolean, default=False)
    triage_state: Mapped[str | None] = mapped_column(String(16))
    fixed_by: Mapped[int | None] = mapped_column(Integer)


class BenchRequestRow(Base):
    """One benchmark the bot dispatched (or refused to): its inputs, its workflow run, its state.

    The correlation id is the bot's name for the request: sent as a workflow input, echoed in the
    run's name and the artifact's name, and matched when the run completes.
    """

    __tablename__ = "bench_requests"
    __table_args__ = (Index("ix_bench_requests_repo_number", "repo", "number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    correlation_id: Mapped[str] = mapped_column(String(64), unique=True)
    repo: Mapped[str] = mapped_column(String(200))
    installation_id: Mapped[int | None] = mapped_column(BigInteger)
    number: Mapped[int | None] = mapped_column(Integer)  # None: a run on the default branch
    base_sha: Mapped[str] = mapped_column(String(64))
    head_sha: Mapped[str] = mapped_column(String(64), index=True)
    suites: Mapped[str] = mapped_column(Text)  # JSON list of suite names
    rounds: Mapped[int | None] = mapped_column(Integer)
    max_rounds: Mapped[int | None] = mapped_column(Integer)
    trigger: Mapped[Trigger] = mapped_column(String(16))
    requested_by: Mapped[str | None] = mapped_column(String(100))
    comment_id: Mapped[int | None] = mapped_column(BigInteger)  # the /bench comment, for reactions
    status: Mapped[str] = mapped_column(String(16), index=True)
    run_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    run_url: Mapped[str | None] = mapped_column(Text)
    check_run_id: Mapped[int | None] = mapped_column(BigInteger)
    conclusion: Mapped[str | None] = mapped_column(String(32))  # the workflow run's conclusion
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    completed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class BenchResultRow(Base):
    """The comparison of one suite of one completed request (or of an imported results file)."""

    __tablename__ = "bench_results"
    __table_args__ = (Index("ix_bench_results_repo_number", "repo", "number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    request_id: Mapped[int | None] = mapped_column(ForeignKey("bench_requests.id", ondelete="SET NULL"))
    repo: Mapped[str] = mapped_column(String(200))
    number: Mapped[int | None] = mapped_column(Integer)
    suite: Mapped[str] = mapped_column(String(100))
    base_sha: Mapped[str] = mapped_column(String(64))
    head_sha: Mapped[str] = mapped_column(String(64), index=True)
    verdict: Mapped[str] = mapped_column(String(16))
    headline_metric: Mapped[str | None] = mapped_column(String(100))
    headline_change: Mapped[float | None] = mapped_column(Float)  # relative, head vs base
    comparison: Mapped[str] = mapped_column(Text)  # the JSON of `perfbot compare`
    on_default_branch: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class MetricPointRow(Base):
    """One metric of one benchmark run of a default-branch commit: a point of the history charts."""

    __tablename__ = "metric_points"
    __table_args__ = (Index("ix_metric_points_series", "repo", "suite", "metric", "measured_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    result_id: Mapped[int | None] = mapped_column(ForeignKey("bench_results.id", ondelete="CASCADE"))
    repo: Mapped[str] = mapped_column(String(200))
    suite: Mapped[str] = mapped_column(String(100))
    metric: Mapped[str] = mapped_column(String(100))
    unit: Mapped[str] = mapped_column(String(40))
    better: Mapped[str] = mapped_column(String(8))  # lower | higher
    sha: Mapped[str] = mapped_column(String(64))
    value: Mapped[float] = mapped_column(Float)
    measured_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class StepMapRow(Base):
    """The latest per-step map (`bot.core.stepmap`, as its JSON) of a repository's suite, from a
    completed default-branch run."""

    __tablename__ = "step_maps"
    __table_args__ = (UniqueConstraint("repo", "suite", name="uq_step_maps_repo_suite"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(200))
    suite: Mapped[str] = mapped_column(String(100))
    branch: Mapped[str] = mapped_column(String(255))  # the default branch it was measured on
    commit_sha: Mapped[str] = mapped_column(String(64))
    body: Mapped[str] = mapped_column(Text)
    stored_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class AckRow(Base):
    """A maintainer's `/bench ack REASON`: a flagged regression acknowledged, kept for the dashboard."""

    __tablename__ = "acks"
    __table_args__ = (Index("ix_acks_repo_number", "repo", "number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(200))
    number: Mapped[int] = mapped_column(Integer)
    head_sha: Mapped[str | None] = mapped_column(String(64))
    user: Mapped[str] = mapped_column(String(100))
    reason: Mapped[str] = mapped_column(Text)
    comment_id: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class ApprovalRow(Base):
    """`/bench approve`: a maintainer let a fork PR's head commit reach the GPU runners."""

    __tablename__ = "approvals"
    __table_args__ = (UniqueConstraint("repo", "number", "head_sha", name="uq_approvals_pr_sha"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(200))
    number: Mapped[int] = mapped_column(Integer)
    head_sha: Mapped[str] = mapped_column(String(64))
    approved_by: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class WorkKeyRow(Base):
    """A piece of state-changing work done once, keyed on values inside the signed body (a comment
    id, a head sha, a workflow run id): a replayed body under a new delivery id finds its key."""

    __tablename__ = "work_keys"

    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


class TriageEventRow(Base):
    """A maintainer's triage of a flagged merge on the dashboard (the merge keeps the latest)."""

    __tablename__ = "triage_events"
    __table_args__ = (Index("ix_triage_events_repo_number", "repo", "number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(200))
    number: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))
    fixed_by: Mapped[int | None] = mapped_column(Integer)
    note: Mapped[str] = mapped_column(Text)
    user: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class MetricSeriesRow(Base):
    """One series of the default branch's history (repo, suite, metric), derived from
    `metric_points`: what the history page offers, without scanning every point."""

    __tablename__ = "metric_series"
    __table_args__ = (UniqueConstraint("repo", "suite", "metric", name="uq_metric_series_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(200))
    suite: Mapped[str] = mapped_column(String(100))
    metric: Mapped[str] = mapped_column(String(100))
    unit: Mapped[str] = mapped_column(String(40))
    better: Mapped[str] = mapped_column(String(8))
    points: Mapped[int] = mapped_column(Integer)
    last_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class DashboardSyncRow(Base):
    """How far the derived dashboard columns have read `bench_results`, `acks` and
    `metric_points` (the highest id of each already folded in); one row."""

    __tablename__ = "dashboard_sync"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    results_seen: Mapped[int] = mapped_column(Integer)
    acks_seen: Mapped[int] = mapped_column(Integer)
    points_seen: Mapped[int] = mapped_column(Integer)


class DashboardSessionRow(Base):
    """A signed-in dashboard session, by the SHA-256 of its cookie's token (`bot.adapters.store.
    sessions`); signing out deletes it."""

    __tablename__ = "dashboard_sessions"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    login: Mapped[str] = mapped_column(String(100))
    private_repos: Mapped[str] = mapped_column(Text)  # a JSON list of owner/name
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    checked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


class RegressionCaseRow(Base):
    """A regression on the default branch (`bot.service.records.RegressionCase`): one per change,
    whoever found it, however often; its state moves by conditional updates only."""

    __tablename__ = "regression_cases"
    __table_args__ = (
        UniqueConstraint("repo", "suite", "metric", "good_sha", "bad_sha", name="uq_regression_cases_change"),
        Index("ix_regression_cases_repo_state", "repo", "state"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(64), unique=True)
    repo: Mapped[str] = mapped_column(String(200))
    suite: Mapped[str] = mapped_column(String(100))
    metric: Mapped[str] = mapped_column(String(100))
    good_sha: Mapped[str] = mapped_column(String(64))
    bad_sha: Mapped[str] = mapped_column(String(64))
    source: Mapped[str] = mapped_column(String(16))
    state: Mapped[str] = mapped_column(String(16))
    installation_id: Mapped[int | None] = mapped_column(BigInteger)
    number: Mapped[int | None] = mapped_column(Integer)
    change: Mapped[float | None] = mapped_column(Float)
    requested_by: Mapped[str | None] = mapped_column(String(100))
    correlation_id: Mapped[str | None] = mapped_column(String(64), index=True)
    run_url: Mapped[str | None] = mapped_column(Text)
    culprit_sha: Mapped[str | None] = mapped_column(String(64))
    culprit_number: Mapped[int | None] = mapped_column(Integer)
    culprit_subject: Mapped[str | None] = mapped_column(Text)
    outcome: Mapped[str | None] = mapped_column(Text)  # JSON
    gpu_minutes: Mapped[float] = mapped_column(Float, default=0.0)
    comment_url: Mapped[str | None] = mapped_column(Text)
    issue_number: Mapped[int | None] = mapped_column(Integer)
    superseded_by: Mapped[str | None] = mapped_column(String(64))
    note: Mapped[str | None] = mapped_column(Text)
    detected_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class GpuSpendRow(Base):
    """One charge against a repository's daily GPU budget (`bot.core.watch.budget`), or one run
    skipped for it: keyed on the work, so a retry is charged once."""

    __tablename__ = "gpu_spend"
    __table_args__ = (Index("ix_gpu_spend_repo_day", "repo", "day"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(200), unique=True)
    repo: Mapped[str] = mapped_column(String(200))
    day: Mapped[str] = mapped_column(String(10))  # YYYY-MM-DD, UTC
    kind: Mapped[str] = mapped_column(String(16))  # merge | schedule | bisect
    level: Mapped[str] = mapped_column(String(16))
    minutes: Mapped[float] = mapped_column(Float)
    allowed: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # the day's budget the charge was weighed against: minutes, or "unlimited" (None: before 0010)
    budget: Mapped[str | None] = mapped_column(String(16), nullable=True)


class ConfigProblemRow(Base):
    """What is wrong with a repository's `.github/perfbot.yml` on its default branch, as perfbot last
    read it (`bot.core.config.lenient`: its valid keys in force, the runs perfbot starts on its own
    held); a repository whose config reads clean has no row."""

    __tablename__ = "config_problems"

    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    source: Mapped[str] = mapped_column(String(300))  # the file and branch: .github/perfbot.yml@main
    problems: Mapped[str] = mapped_column(Text)  # JSON list: one line per invalid key, as the file names it
    since: Mapped[datetime] = mapped_column(DateTime(timezone=True))  # first read with these problems
