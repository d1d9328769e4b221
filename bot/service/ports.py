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


@dataclass(frozen=True)
class PullInfo:
    """A pull request as the API describes it now (never as a comment or an old event says)."""

    repo: str
    number: int
    open: bool
    draft: bool
    head_sha: str
    base_sha: str
    base_ref: str
    head_repo: str | None  # None when the fork was deleted
    author: str
    html_url: str

    @property
    def fork(self) -> bool:
        return self.head_repo != self.repo


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class BenchCheck:
    """The `perfbot / bench` check run of one request (a commit status in token mode)."""

    name: str
    head_sha: str
    status: str  # in_progress | completed
    conclusion: str | None
    title: str
    summary: str
    details_url: str | None
    external_id: str
    check_run_id: int | None = None  # known once created: updated in place


@dataclass(frozen=True)
class BenchRequest:
    """A benchmark the bot was asked for, and where it stands (bench_requests)."""

    correlation_id: str
    repo: str
    installation_id: int | None
    number: int | None  # None: a run on the default branch (merge or schedule)
    base_sha: str
    head_sha: str
    suites: tuple[str, ...]
    rounds: int | None
    max_rounds: int | None
    trigger: str  # command | auto | merge | schedule
    requested_by: str | None
    comment_id: int | None
    status: str
    created_at: datetime
    run_id: int | None = None
    run_url: str | None = None
    check_run_id: int | None = None
    conclusion: str | None = None
    error: str | None = None
    completed_at: datetime | None = None
    id: int | None = None


@dataclass(frozen=True)
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
class MetricPoint:
    """One metric of a default-branch run: a point of the history (metric_points)."""

    suite: str
    metric: str
    unit: str
    better: str
    sha: str
    value: float


@dataclass(frozen=True)
class Ack:
    repo: str
    number: int
    head_sha: str | None
    user: str
    reason: str
    comment_id: int | None
    created_at: datetime


class PullRequestGone(Exception):
    """The pull request or repository no longer exists (deleted, transferred, access lost)."""


class DispatchRefused(Exception):
    """GitHub refused to start the benchmark workflow for good (no such workflow, bad inputs, no
    permission); ``status`` is its HTTP status. Waiting and retrying would not help."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{status} {message}")
        self.status, self.message = status, message


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

    # benchmarks

    @abstractmethod
    def open_bench_request(self, request: BenchRequest) -> tuple[BenchRequest, bool]:
        """Record ``request`` unless its correlation id is known: the stored request, and whether
        it is new (a retry or a replay of the same work finds the first)."""

    @abstractmethod
    def bench_request(self, correlation_id: str) -> BenchRequest | None: ...

    @abstractmethod
    def update_bench_request(self, request: BenchRequest) -> None:
        """Store the request's state: status, run, check run, conclusion, error, completion."""

    @abstractmethod
    def bench_requests(self, repo: str, number: int | None) -> list[BenchRequest]:
        """A pull request's requests (None: the default branch's), newest first."""

    @abstractmethod
    def last_command(self, repo: str, *, user: str | None = None, number: int | None = None
                     ) -> datetime | None:
        """When the newest accepted `/bench` of ``user`` in ``repo`` (or on PR ``number``) was made."""

    @abstractmethod
    def complete_bench_request(self, request: BenchRequest, results: list[BenchResult],
                               points: list[MetricPoint], work_key: str) -> bool:
        """In one transaction: claim ``work_key``, store the request's final state, its results and
        the history points; False (and nothing stored) when the work was done before."""

    @abstractmethod
    def bench_results(self, request_id: int) -> list[BenchResult]: ...

    @abstractmethod
    def claim_work(self, key: str) -> bool:
        """Mark a piece of work done once; False when ``key`` was claimed before."""

    @abstractmethod
    def work_done(self, key: str) -> bool: ...

    @abstractmethod
    def prune_work(self, now: datetime, older_than_s: float) -> int: ...

    @abstractmethod
    def add_ack(self, ack: Ack, work_key: str) -> bool:
        """Store an acknowledgement once per ``work_key``."""

    @abstractmethod
    def acks(self, repo: str, number: int) -> list[Ack]: ...

    @abstractmethod
    def approve(self, repo: str, number: int, head_sha: str, by: str) -> None:
        """Pin a maintainer's approval to one head commit of a pull request (idempotent)."""

    @abstractmethod
    def approved(self, repo: str, number: int, head_sha: str) -> bool: ...

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
    def upsert_comment(self, repo: str, number: int, marker: str, body: str,
                       create: bool = True) -> int | None:
        """Edit the bot's comment holding ``marker``, or create it (unless ``create`` is false);
        its id, None when there was none and none was created."""

    @abstractmethod
    def publish_check(self, repo: str, check: CheckResult) -> None:
        """A check run in App mode, a commit status in token mode; updated in place."""

    @abstractmethod
    def sync_labels(self, repo: str, number: int, prefix: str, wanted: str | None) -> None:
        """Make ``wanted`` the only label starting with ``prefix`` (none when None)."""

    # benchmarks

    @abstractmethod
    def pull(self, repo: str, number: int) -> PullInfo:
        """The pull request now; `PullRequestGone` when it does not exist (or is an issue)."""

    @abstractmethod
    def permission(self, repo: str, login: str) -> str:
        """``login``'s permission on ``repo``: admin, write, read or none (GitHub's `permission`)."""

    @abstractmethod
    def react(self, repo: str, comment_id: int, content: str) -> None:
        """Add a reaction (eyes, rocket, confused, +1) to an issue comment; idempotent."""

    @abstractmethod
    def reply(self, repo: str, number: int, body: str) -> int:
        """Post a new comment on the pull request; its id."""

    @abstractmethod
    def default_branch(self, repo: str) -> tuple[str, str]:
        """The default branch's name and its head commit."""

    @abstractmethod
    def first_parent(self, repo: str, sha: str) -> str | None:
        """The first parent of a commit (None for a root commit)."""

    @abstractmethod
    def dispatch(self, repo: str, workflow: str, ref: str, inputs: dict[str, str]) -> WorkflowRun | None:
        """Start ``workflow`` on ``ref`` with ``inputs``: the run when GitHub names it (the dispatch
        API's run details), else None. `DispatchRefused` when GitHub refuses for good."""

    @abstractmethod
    def find_run(self, repo: str, workflow: str, correlation_id: str) -> WorkflowRun | None:
        """The dispatched run whose display title carries ``correlation_id``, if it exists yet."""

    @abstractmethod
    def cancel_run(self, repo: str, run_id: int) -> None:
        """Ask GitHub to cancel a run; a run that already finished is left as it is."""

    @abstractmethod
    def artifacts(self, repo: str, run_id: int) -> list[ArtifactRef]: ...

    @abstractmethod
    def download_artifact(self, repo: str, artifact_id: int, max_bytes: int) -> bytes:
        """The artifact's zip archive; `ValueError` when it is larger than ``max_bytes``."""

    @abstractmethod
    def publish_bench_check(self, repo: str, check: BenchCheck) -> int | None:
        """Create or update the `perfbot / bench` check run (App mode; its id) or commit status
        (token mode; None)."""


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
