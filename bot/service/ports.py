"""The interfaces the service layer needs from the outside world, and the records it exchanges."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime

from .dashboard.ports import DashboardStore


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


@dataclass(frozen=True)
class Review:
    """The last risk review published on a pull request."""

    repo: str
    number: int
    head_sha: str
    score: int
    level: str
    comment_id: int | None = None


@dataclass(frozen=True)
class Reason:
    """One rule that raised a pull request's risk, as the review listed it."""

    rule: str
    weight: float
    text: str


@dataclass(frozen=True)
class Merge:
    """A merged pull request and the risk it was merged with (the dashboard's raw data)."""

    repo: str
    number: int
    title: str
    merge_sha: str | None
    head_sha: str
    score: int | None
    level: str | None
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


@dataclass(frozen=True)
class CheckResult:
    """What the `perfbot / risk` check run (or commit status) says about one head commit."""

    name: str
    head_sha: str
    conclusion: str
    title: str
    summary: str


class PullRequestGone(Exception):
    """The pull request or repository no longer exists (deleted, transferred, access lost)."""


class Store(DashboardStore):
    """Durable state: deliveries, installed repositories, reviews and merges; and the
    dashboard's queries over them."""

    @abstractmethod
    def claim_delivery(
        self, hook_id: str, guid: str, event: str, action: str | None, payload: bytes
    ) -> int | None:
        """Record a new delivery; None when (hook_id, guid) was seen before."""

    @abstractmethod
    def start_delivery(self, delivery_id: int, now: datetime, lease_s: float) -> Delivery | None:
        """Take a pending delivery for processing; None when done or held by another worker."""

    @abstractmethod
    def finish_delivery(self, delivery_id: int, status: str, error: str | None = None) -> None: ...

    @abstractmethod
    def release_delivery(self, delivery_id: int, error: str) -> None:
        """Give a failed attempt back so that a retry can take it."""

    @abstractmethod
    def stale_deliveries(self, now: datetime, older_than_s: float) -> list[int]:
        """Pending deliveries that nobody finished in time (lost to a crash): to enqueue again."""

    @abstractmethod
    def delivery_counts(self) -> dict[str, int]: ...

    @abstractmethod
    def prune_deliveries(self, now: datetime, drop_payload_after_s: float, forget_after_s: float) -> int:
        """Empty the payloads of finished deliveries, then forget them (the dedupe window ends)."""

    @abstractmethod
    def replace_installation(self, installation_id: int, repos: list[Repository]) -> None: ...

    @abstractmethod
    def add_repositories(self, installation_id: int, repos: list[Repository]) -> None: ...

    @abstractmethod
    def remove_repositories(self, installation_id: int, repo_ids: list[int]) -> None: ...

    @abstractmethod
    def remove_installation(self, installation_id: int) -> None: ...

    @abstractmethod
    def repositories(self) -> list[Repository]: ...

    @abstractmethod
    def save_review(self, review: Review) -> None: ...

    @abstractmethod
    def review_for(self, repo: str, number: int) -> Review | None: ...

    @abstractmethod
    def record_merge(self, merge: Merge) -> None: ...

    @abstractmethod
    def merges(self, repo: str | None = None) -> list[Merge]: ...

    @abstractmethod
    def ping(self) -> None:
        """Raise when the database cannot be reached."""


class GitHub(ABC):
    """The GitHub calls a review makes, for one installation (App mode) or one token."""

    @abstractmethod
    def pull_head_sha(self, repo: str, number: int) -> str:
        """The PR's current head commit; `PullRequestGone` when it no longer exists."""

    @abstractmethod
    def pull_diff(self, repo: str, number: int) -> str: ...

    @abstractmethod
    def read_file(self, repo: str, path: str, ref: str) -> str | None:
        """A file's text at ``ref``; None when it does not exist there."""

    @abstractmethod
    def upsert_comment(self, repo: str, number: int, marker: str, body: str) -> int:
        """Create the comment holding ``marker``, or edit it when it exists; its id."""

    @abstractmethod
    def publish_check(self, repo: str, check: CheckResult) -> None:
        """A check run in App mode, a commit status in token mode; updated in place."""

    @abstractmethod
    def sync_labels(self, repo: str, number: int, prefix: str, wanted: str | None) -> None:
        """Make ``wanted`` the only label starting with ``prefix`` (none when None)."""

    @abstractmethod
    def permission(self, repo: str, login: str) -> str:
        """The user's permission on the repository from the collaborator-permission API:
        'admin', 'write', 'read' or 'none' (also for an unknown user)."""


class GitHubFactory(ABC):
    @abstractmethod
    def for_installation(self, installation_id: int | None) -> GitHub: ...


class SignIn(ABC):
    """Sign-in to the dashboard through the GitHub App's user authorization (OAuth web flow)."""

    @abstractmethod
    def authorize_url(self, state: str, redirect_uri: str) -> str:
        """Where to send the browser to ask GitHub who the user is."""

    @abstractmethod
    def login_for(self, code: str, redirect_uri: str) -> str:
        """The login of the user who authorized, from the code GitHub sent back;
        `SignInFailed` when GitHub refuses the code."""


class SignInFailed(Exception):
    """GitHub did not confirm the sign-in (a bad, used or expired code, or GitHub unreachable)."""


class Queue(ABC):
    @abstractmethod
    def enqueue(self, delivery_id: int) -> None: ...

    @abstractmethod
    def pending(self) -> int:
        """Jobs waiting to be taken (not those running)."""

    @abstractmethod
    def ping(self) -> None:
        """Raise when the queue cannot be reached."""
