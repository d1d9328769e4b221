"""The durable state the service keeps, as one small port per aggregate: deliveries, watched
repositories, reviews, benchmarks, work keys with approvals and acknowledgements, the
dashboard's merges, and the liveness of the database and of the queue consumers. `Store` bundles
them; `bot.adapters.store.sql.SqlStore` implements them all over one database.

Every check-then-act decision is one call here, so that the database makes it atomic: a delivery
is claimed once, a work key once, a benchmark admitted under its rules in one transaction.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from ..records import (
    Ack,
    BenchRequest,
    BenchResult,
    Delivery,
    MetricPoint,
    RegressionCase,
    RepoConfigProblems,
    Repository,
    Review,
    StoredStepMap,
)
from .dashboard import DashboardStore

Decision = TypeVar("Decision")


@dataclass(frozen=True)
class Admission:
    """What a `/bench` decision depends on that concurrent commands change, read inside the
    admission's transaction: the command's own request if a replay recorded it already, the pull
    request's active requests, and the last accepted `/bench` of the asker and of the pull request
    (one that failed before it reached GitHub is not counted: it never ran)."""

    existing: BenchRequest | None
    active: tuple[BenchRequest, ...]
    user_last: datetime | None
    pr_last: datetime | None


@dataclass(frozen=True)
class Cooldowns:
    """What a `/bench bisect` decision depends on that concurrent commands change, read inside the
    admission's transaction: when the asker's, and the pull request's, last command that may spend
    GPU time was accepted (a `/bench` run or another bisect's case)."""

    user_last: datetime | None
    pr_last: datetime | None


@dataclass(frozen=True, kw_only=True)
class FailedDelivery:
    """A delivery that perfbot gave up on, as the dashboard and `/healthz` show it."""

    id: int
    guid: str
    event: str
    action: str | None
    repo: str | None
    failure: str | None  # permanent | transient | bug (None: failed before failures had kinds)
    error: str | None
    attempts: int
    finished_at: datetime | None


@dataclass(frozen=True, kw_only=True)
class DeliveryHealth:
    """How deliveries fare: those failed since a moment, those waiting for a retry, and how long
    the oldest one waiting to be processed has waited (None: none waits)."""

    failed: int
    retrying: int
    oldest_pending_s: float | None
    last_failure: FailedDelivery | None


class Deliveries(ABC):
    """Webhook deliveries: claimed once per (hook, GUID), leased to one worker at a time.

    A lease has an owner (`bot.service.leases.owner_id`) and an expiry, renewed by the owner's
    heartbeat; one that ran out, or whose owner is known to be dead, can be taken again. A
    released delivery (a failed attempt waiting for its retry) has no owner and is due at its
    retry time. Leases are given, renewed and judged by the database's clock, never the caller's
    (workers' clocks may disagree by more than a lease): no method takes a "now". Every method
    raises `bot.service.failures.StorageUnavailable` when the database cannot be reached or written."""

    @abstractmethod
    def claim(
        self,
        hook_id: str,
        guid: str,
        event: str,
        action: str | None,
        payload: bytes,
        repo: str | None = None,
        subject: str | None = None,
    ) -> int | None:
        """Record a new delivery; None when (hook_id, guid) was seen before. ``subject``: what it
        acts on (a pull request), of which one delivery is processed at a time."""

    @abstractmethod
    def start(self, delivery_id: int, lease_s: float, owner: str = "") -> Delivery | None:
        """Take a pending delivery for processing under ``owner``'s lease of ``lease_s``; None
        when it is done, or held by a lease that has not run out. `SubjectBusy` (and nothing
        taken) while another delivery of its subject is held by a lease that has not run out."""

    @abstractmethod
    def renew(self, owner: str, delivery_ids: list[int], lease_s: float) -> int:
        """Extend ``owner``'s leases on ``delivery_ids`` to ``lease_s`` from now; how many it holds."""

    @abstractmethod
    def finish(
        self,
        delivery_id: int,
        status: str,
        error: str | None = None,
        owner: str | None = None,
        failure: str | None = None,
    ) -> bool:
        """Mark a delivery done or failed (``failure``: its kind); with ``owner``, only while
        ``owner`` still holds it. Whether it was marked."""

    @abstractmethod
    def release(
        self,
        delivery_id: int,
        error: str,
        retry_at: datetime | None = None,
        owner: str | None = None,
        failure: str | None = None,
    ) -> None:
        """Give a failed attempt back so that a retry can take it (due at ``retry_at``, a moment on
        this process's clock: the database keeps what is left until then, on its own)."""

    @abstractmethod
    def holders(self) -> list[str]:
        """The owners of the leases on pending deliveries."""

    @abstractmethod
    def release_holder(self, owner: str) -> list[int]:
        """Release every lease ``owner`` holds (it is dead); the deliveries released."""

    @abstractmethod
    def stale(self, older_than_s: float) -> list[int]:
        """Pending deliveries nobody took in time (lost to a crash or a queue outage), to enqueue
        again: those whose lease ran out, and those not held and due (received, their retry time,
        or the last time this found them) more than ``older_than_s`` ago."""

    @abstractmethod
    def counts(self) -> dict[str, int]: ...

    @abstractmethod
    def health(self, failed_within_s: float) -> DeliveryHealth:
        """Failures within the last ``failed_within_s``, retries waiting, and the oldest's wait."""

    @abstractmethod
    def failures(self, limit: int, repos: frozenset[str] | None = None) -> list[FailedDelivery]:
        """The newest failed deliveries, at most ``limit``, of ``repos`` only (None: any)."""

    @abstractmethod
    def prune(self, now: datetime, drop_payload_after_s: float, forget_after_s: float) -> int:
        """Empty the payloads of finished deliveries, then forget them (the dedupe window ends)."""


@dataclass(frozen=True, kw_only=True)
class ConsumerSeen:
    owner: str
    started_at: datetime
    seen_at: datetime
    periodic: bool
    threads: int


class Liveness(ABC):
    """What `/healthz` asks of the database besides the deliveries: whether it takes a write now,
    and which queue consumers are running (each one's heartbeat records it, by the database's clock)."""

    @abstractmethod
    def probe(self) -> None:
        """Write one row; `StorageUnavailable` when the database does not take it."""

    @abstractmethod
    def beat(self, owner: str, started_at: datetime, periodic: bool, threads: int) -> None: ...

    @abstractmethod
    def stopped(self, owner: str) -> None: ...

    @abstractmethod
    def consumers(self, seen_within_s: float) -> list[ConsumerSeen]: ...

    @abstractmethod
    def forget(self, unseen_for_s: float) -> int:
        """Forget consumers not seen for ``unseen_for_s`` (dead ones)."""


class Installations(ABC):
    """The repositories the bot watches, by installation (App mode) or as seen in events."""

    @abstractmethod
    def replace(self, installation_id: int, repos: list[Repository]) -> None: ...

    @abstractmethod
    def add(self, installation_id: int | None, repos: list[Repository]) -> None:
        """Add or update repositories (their name, installation and visibility)."""

    @abstractmethod
    def remove_repositories(self, installation_id: int, repo_ids: list[int]) -> None: ...

    @abstractmethod
    def remove(self, installation_id: int) -> None: ...

    @abstractmethod
    def repositories(self) -> list[Repository]: ...


class Reviews(ABC):
    """The last risk review of each pull request."""

    @abstractmethod
    def save(self, review: Review) -> None: ...

    @abstractmethod
    def get(self, repo: str, number: int) -> Review | None: ...


class Benchmarks(ABC):
    """Benchmark requests, their results and the default branch's history points."""

    @abstractmethod
    def open(self, request: BenchRequest) -> tuple[BenchRequest, bool]:
        """Record ``request`` unless its correlation id is known: the stored request, and whether
        it is new (a retry or a replay of the same work finds the first)."""

    @abstractmethod
    def admit(
        self,
        correlation_id: str,
        repo: str,
        number: int,
        user: str,
        decide: Callable[[Admission], tuple[Decision, BenchRequest | None]],
    ) -> tuple[Decision, BenchRequest | None]:
        """Decide on a `/bench` and record what it starts in one transaction that no other
        admission interleaves with: ``decide`` gets the `Admission` facts as they are now and says
        what to do and which request (if any) to record; the decision, and the stored request."""

    @abstractmethod
    def release(self, correlation_id: str, error: str, now: datetime) -> BenchRequest | None:
        """End a request that was never seen to reach GitHub (requested, or dispatching without a
        run), because the delivery that was to dispatch it failed for good: ``failed`` with
        ``error``, in one conditional update. The released request; None when there is none, or
        it moved on (a run was found, it was cancelled)."""

    @abstractmethod
    def get(self, correlation_id: str) -> BenchRequest | None: ...

    @abstractmethod
    def update(self, request: BenchRequest) -> None:
        """Store the request's state: status, run, check run, conclusion, error, completion."""

    @abstractmethod
    def for_pull(self, repo: str, number: int | None) -> list[BenchRequest]:
        """A pull request's requests (None: the default branch's), newest first."""

    @abstractmethod
    def complete(
        self,
        request: BenchRequest,
        results: list[BenchResult],
        points: list[MetricPoint],
        work_key: str,
        step_maps: Sequence[StoredStepMap] = (),
    ) -> bool:
        """In one transaction: claim ``work_key``, store the request's final state, its results,
        the history points and the step maps (each replacing its repository and suite's); False
        (and nothing stored) when the work was done before."""

    @abstractmethod
    def step_map(self, repo: str) -> StoredStepMap | None:
        """The step map stored last for ``repo`` (of any suite); None when there is none, or the
        stored one no longer reads as a map."""

    @abstractmethod
    def results(self, request_id: int) -> list[BenchResult]: ...

    @abstractmethod
    def measured(self, repo: str, suite: str, head_sha: str) -> BenchResult | None:
        """The latest default-branch result of ``suite`` whose head was ``head_sha``: the run that
        put that commit's point into the history."""


class WorkLog(ABC):
    """Work keys (each piece of work done once), the pushes of pull requests, fork approvals and
    acknowledgements."""

    @abstractmethod
    def claim(self, key: str) -> bool:
        """Mark a piece of work done once; False when ``key`` was claimed before."""

    @abstractmethod
    def done(self, key: str) -> bool: ...

    @abstractmethod
    def prune(self, now: datetime, older_than_s: float) -> int: ...

    @abstractmethod
    def add_ack(self, ack: Ack, work_key: str) -> bool:
        """Store an acknowledgement once per ``work_key``."""

    @abstractmethod
    def acks(self, repo: str, number: int) -> list[Ack]: ...

    @abstractmethod
    def record_push(self, repo: str, number: int, head_sha: str, pushed_at: datetime) -> None:
        """Record that ``head_sha`` was pushed to the pull request at ``pushed_at`` (GitHub's clock):
        every push is kept, a commit pushed again included; the same push recorded twice, once."""

    @abstractmethod
    def pushes_before(self, repo: str, number: int, before: datetime) -> list[tuple[str, datetime]]:
        """The pushes of the pull request strictly before ``before`` (GitHub's clock), as (head sha,
        pushed at), oldest first: by their time, then in the order they were recorded."""

    @abstractmethod
    def approve(self, repo: str, number: int, head_sha: str, by: str) -> None:
        """Pin a maintainer's approval to one head commit (a full sha) of a pull request (idempotent)."""

    @abstractmethod
    def approved(self, repo: str, number: int, head_sha: str) -> bool: ...


@dataclass(frozen=True)
class SeriesRow:
    """One point of a default-branch series with the base its run measured against (oldest first)."""

    sha: str
    base_sha: str
    value: float
    better: str


@dataclass(frozen=True)
class Spending:
    """A repository's GPU budget on one day: minutes charged, and runs skipped for the budget
    (how many, and the minutes they would have cost)."""

    spent: float
    skipped: int
    skipped_minutes: float
    limit: str | None = None  # the budget the day's latest charge was weighed against ("unlimited")


class Watch(ABC):
    """Regression cases of the default branch and the daily GPU budget. Every state change is one
    conditional update: two processes that race to move a case agree on who moved it."""

    @abstractmethod
    def open(self, case: RegressionCase) -> tuple[RegressionCase, bool]:
        """Record ``case`` unless its change (its key) is known: the stored case, and whether it is new."""

    @abstractmethod
    def open_by_command(
        self,
        repo: str,
        number: int,
        user: str,
        cases: Sequence[RegressionCase],
        decide: Callable[[Cooldowns], tuple[Decision, bool]],
    ) -> tuple[Decision, list[tuple[RegressionCase, bool]]]:
        """`/bench bisect` by ``user`` on pull request ``number``: decide and open its ``cases`` in
        one admission (`Benchmarks.admit`'s: no other command's admission to ``repo`` interleaves).
        ``decide`` gets the cooldowns as they are now (a case among ``cases`` that exists already,
        this command's own before a replay, does not count) and says what to do and whether to open
        them; the decision, and each case as stored with whether it is new (none when refused)."""

    @abstractmethod
    def supersede(self, old_key: str, new: RegressionCase) -> tuple[RegressionCase, bool]:
        """In one transaction: record ``new`` (or find it) and move the case ``old_key`` to
        superseded by it, only while that one has not ended (detected, out of budget, or bisecting:
        a bisect whose range no longer holds the change); the stored new case, and whether the old
        one was moved."""

    @abstractmethod
    def move(
        self, key: str, wanted: str, sources: tuple[str, ...], now: datetime, **changes: object
    ) -> RegressionCase | None:
        """Move the case to ``wanted`` (with ``changes`` to its other columns) only while its state
        is one of ``sources``; the moved case, or None when it stood elsewhere (or is unknown)."""

    @abstractmethod
    def note(self, key: str, **changes: object) -> None:
        """Store columns of a case that are not its state (a comment's address, an issue number)."""

    @abstractmethod
    def get(self, key: str) -> RegressionCase | None: ...

    @abstractmethod
    def by_correlation(self, correlation_id: str) -> RegressionCase | None:
        """The case a bisect's benchmark request is of."""

    @abstractmethod
    def of_series(
        self, repo: str, suite: str, metric: str | None, states: tuple[str, ...]
    ) -> list[RegressionCase]:
        """The cases of one series in ``states`` (``metric`` None: of every metric of the suite),
        oldest first."""

    @abstractmethod
    def starting(self, repo: str, prefix: str, limit: int = 2) -> list[RegressionCase]:
        """The cases of ``repo`` whose key starts with ``prefix``, at most ``limit``."""

    @abstractmethod
    def of_culprit(self, repo: str, sha: str) -> list[RegressionCase]:
        """The cases of ``repo`` whose bisect confirmed ``sha`` as their culprit, oldest first."""

    @abstractmethod
    def cases(self, repos: frozenset[str] | None, limit: int = 200) -> list[RegressionCase]:
        """The newest cases of ``repos`` (None: any), newest first."""

    @abstractmethod
    def known_commits(self, repo: str, prefix: str, limit: int = 3) -> list[str]:
        """Commits of the default branch perfbot knows (merge commits it recorded, commits its
        history measured) whose sha starts with ``prefix`` (lowercase hex), at most ``limit``."""

    @abstractmethod
    def merge_of(self, repo: str, sha: str) -> tuple[int, str | None] | None:
        """The merged pull request (number, address) whose merge commit or head is ``sha``."""

    @abstractmethod
    def series(self, repo: str, suite: str, metric: str) -> list[SeriesRow]:
        """A default-branch series with each point's base, in the order it was measured."""

    @abstractmethod
    def charge(
        self,
        key: str,
        repo: str,
        day: str,
        kind: str,
        level: str,
        minutes: float,
        allows: Callable[[float], bool],
        now: datetime,
        budget: str | None = None,
    ) -> bool:
        """Charge ``minutes`` to the repository's ``day`` if ``allows(minutes spent that day)``, else
        record the work as skipped for the budget; in one transaction no other charge to the
        repository interleaves with. Charged before (``key``): what was decided then. ``budget``:
        the day's budget it was weighed against, kept for the dashboard."""

    @abstractmethod
    def settle(self, key: str, minutes: float) -> None:
        """Correct a charge to what the work turned out to cost."""

    @abstractmethod
    def spending(self, repo: str, day: str) -> Spending: ...


class ConfigProblems(ABC):
    """The problems of each repository's config as perfbot last read it from its default branch,
    for the dashboard to show (the pull request's review says them itself)."""

    @abstractmethod
    def record(self, repo: str, source: str, problems: Sequence[str]) -> None:
        """What a read of ``repo``'s config found: its problems, or none (its record goes)."""

    @abstractmethod
    def current(self, repos: Iterable[str] | None = None) -> list[RepoConfigProblems]:
        """The problems of ``repos`` (None: of every repository), by repository name."""


class Store(ABC):
    """Every aggregate's port over one database."""

    deliveries: Deliveries
    installations: Installations
    reviews: Reviews
    benchmarks: Benchmarks
    work: WorkLog
    dashboard: DashboardStore
    liveness: Liveness
    watch: Watch
    config_problems: ConfigProblems

    @abstractmethod
    def ping(self) -> None:
        """Raise when the database cannot be reached."""

    @abstractmethod
    def together(self) -> AbstractContextManager[None]:
        """A block whose calls, on this thread, are one transaction: all of their writes committed
        when it ends, or none when it raises (a crash included). Inside another, it is that one."""
