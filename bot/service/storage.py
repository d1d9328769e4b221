"""The durable state the service keeps, as one small port per aggregate: deliveries, watched
repositories, reviews, benchmarks, work keys with approvals and acknowledgements, and the
dashboard's merges. `Store` bundles them; `bot.adapters.store.sql.SqlStore` implements them all
over one database.

Every check-then-act decision is one call here, so that the database makes it atomic: a delivery
is claimed once, a work key once, a benchmark admitted under its rules in one transaction.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from .dashboard.ports import DashboardStore
from .records import Ack, BenchRequest, BenchResult, Delivery, MetricPoint, Repository, Review

Decision = TypeVar("Decision")


@dataclass(frozen=True)
class Admission:
    """What a `/bench` decision depends on that concurrent commands change, read inside the
    admission's transaction: the command's own request if a replay recorded it already, the pull
    request's active requests, and the last accepted `/bench` of the asker and of the pull request."""

    existing: BenchRequest | None
    active: tuple[BenchRequest, ...]
    user_last: datetime | None
    pr_last: datetime | None


class Deliveries(ABC):
    """Webhook deliveries: claimed once per (hook, GUID), leased to one worker at a time."""

    @abstractmethod
    def claim(self, hook_id: str, guid: str, event: str, action: str | None, payload: bytes) -> int | None:
        """Record a new delivery; None when (hook_id, guid) was seen before."""

    @abstractmethod
    def start(self, delivery_id: int, now: datetime, lease_s: float) -> Delivery | None:
        """Take a pending delivery for processing; None when done or held by another worker."""

    @abstractmethod
    def finish(self, delivery_id: int, status: str, error: str | None = None) -> None: ...

    @abstractmethod
    def release(self, delivery_id: int, error: str) -> None:
        """Give a failed attempt back so that a retry can take it."""

    @abstractmethod
    def stale(self, now: datetime, older_than_s: float) -> list[int]:
        """Pending deliveries that nobody finished in time (lost to a crash): to enqueue again."""

    @abstractmethod
    def counts(self) -> dict[str, int]: ...

    @abstractmethod
    def prune(self, now: datetime, drop_payload_after_s: float, forget_after_s: float) -> int:
        """Empty the payloads of finished deliveries, then forget them (the dedupe window ends)."""


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
    def admit(self, correlation_id: str, repo: str, number: int, user: str,
              decide: Callable[[Admission], tuple[Decision, BenchRequest | None]]
              ) -> tuple[Decision, BenchRequest | None]:
        """Decide on a `/bench` and record what it starts in one transaction that no other
        admission interleaves with: ``decide`` gets the `Admission` facts as they are now and says
        what to do and which request (if any) to record; the decision, and the stored request."""

    @abstractmethod
    def get(self, correlation_id: str) -> BenchRequest | None: ...

    @abstractmethod
    def update(self, request: BenchRequest) -> None:
        """Store the request's state: status, run, check run, conclusion, error, completion."""

    @abstractmethod
    def for_pull(self, repo: str, number: int | None) -> list[BenchRequest]:
        """A pull request's requests (None: the default branch's), newest first."""

    @abstractmethod
    def complete(self, request: BenchRequest, results: list[BenchResult], points: list[MetricPoint],
                 work_key: str) -> bool:
        """In one transaction: claim ``work_key``, store the request's final state, its results and
        the history points; False (and nothing stored) when the work was done before."""

    @abstractmethod
    def results(self, request_id: int) -> list[BenchResult]: ...


class WorkLog(ABC):
    """Work keys (each piece of work done once), the heads of pull requests, fork approvals and
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
    def saw_head(self, repo: str, number: int, head_sha: str, pushed_at: datetime) -> None:
        """Remember when ``head_sha`` became the pull request's head, by GitHub's clock (the first
        time counts)."""

    @abstractmethod
    def head_pushed_at(self, repo: str, number: int, head_sha: str) -> datetime | None:
        """When ``head_sha`` became the pull request's head; None when no event said so."""

    @abstractmethod
    def approve(self, repo: str, number: int, head_sha: str, by: str) -> None:
        """Pin a maintainer's approval to one head commit of a pull request (idempotent)."""

    @abstractmethod
    def approved(self, repo: str, number: int, head_sha: str) -> bool: ...


class Store(ABC):
    """Every aggregate's port over one database."""

    deliveries: Deliveries
    installations: Installations
    reviews: Reviews
    benchmarks: Benchmarks
    work: WorkLog
    dashboard: DashboardStore

    @abstractmethod
    def ping(self) -> None:
        """Raise when the database cannot be reached."""
