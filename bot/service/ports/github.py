"""GitHub as the service sees it: the calls it makes for one installation (`GitHub`), the factory
that hands each thread its own client (`GitHubFactory`), and the failures the port names, each a
kind of `bot.service.failures` (`Permanent`) but `ArtifactUnavailable`."""

from __future__ import annotations

from abc import ABC, abstractmethod

from bot.core.bench.policy import CommitRange
from bot.core.checks import Check
from bot.core.pulls import PullInfo

from ..failures import Gone, Permanent
from ..records import ArtifactRef, WorkflowRun


class PullRequestGone(Gone):
    """The pull request or repository no longer exists (deleted, transferred, access lost)."""


class DispatchRefused(Permanent):
    """GitHub refused to start the benchmark workflow for good (no such workflow, bad inputs, no
    permission); ``status`` is its HTTP status. Waiting and retrying would not help."""

    hint = "GitHub refused to start the benchmark workflow"

    def __init__(self, status: int, message: str):
        super().__init__(f"{status} {message}")
        self.status, self.message = status, message


class ArtifactInvalid(Permanent):
    """GitHub's answer for a run's artifact is not one to download: no download address, or more
    bytes than the cap. Asked again, it answers the same."""

    hint = "the run's artifact could not be downloaded as GitHub offered it"


class ArtifactUnavailable(Exception):
    """A run's artifact could not be downloaded (its storage answered an error, or broke off); the
    message never carries the signed download address. No kind: tried again, as a bug is."""


class GitHub(ABC):
    """The GitHub calls the service makes, for one installation (App mode) or one token."""

    @abstractmethod
    def pull(self, repo: str, number: int) -> PullInfo:
        """The pull request now; `PullRequestGone` when it does not exist (or is an issue)."""

    @abstractmethod
    def pull_diff(self, repo: str, number: int) -> str: ...

    @abstractmethod
    def read_file(self, repo: str, path: str, ref: str) -> str | None:
        """A file's text at ``ref``; None when it does not exist there."""

    @abstractmethod
    def upsert_comment(
        self, repo: str, number: int, marker: str, body: str, create: bool = True
    ) -> int | None:
        """Edit the bot's comment holding ``marker``, or create it (unless ``create`` is false);
        its id, None when there was none and none was created."""

    @abstractmethod
    def publish_check(self, repo: str, check: Check, check_run_id: int | None = None) -> int | None:
        """Create or update a check run (App mode; its id): the run ``check_run_id`` when known,
        else the head's run of that name (and external id) if there is one. In token mode a commit
        status (None)."""

    @abstractmethod
    def sync_labels(self, repo: str, number: int, prefix: str, wanted: str | None) -> None:
        """Make ``wanted`` the only label starting with ``prefix`` (none when None)."""

    @abstractmethod
    def own_login(self) -> str | None:
        """The login the bot comments as (``<app>[bot]``, or the token's user); None if unknown."""

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
    def comment_on_commit(self, repo: str, sha: str, marker: str, body: str) -> str:
        """Comment on a commit (one no pull request merged), or edit our comment on it that starts
        with ``marker``; the comment's address."""

    @abstractmethod
    def upsert_issue(self, repo: str, number: int | None, title: str, body: str, marker: str) -> int:
        """Update the issue ``number`` (its title and body); when None, the issue we opened whose
        body holds ``marker``, else a new one; its number."""

    @abstractmethod
    def default_branch(self, repo: str) -> tuple[str, str]:
        """The default branch's name and its head commit."""

    @abstractmethod
    def first_parent(self, repo: str, sha: str) -> str | None:
        """The first parent of a commit (None for a root commit)."""

    @abstractmethod
    def compare(self, repo: str, base: str, head: str) -> CommitRange | None:
        """How ``head`` stands to ``base`` (GitHub's compare, ``base...head``; shas, prefixes or
        branches); None when GitHub knows either not, or they share no history (its 404)."""

    @abstractmethod
    def pull_of_commit(self, repo: str, sha: str) -> tuple[int, str | None] | None:
        """The pull request whose merge brought commit ``sha`` into the default branch (its merge
        commit, or one of its commits): its number and web address; None when no merged pull
        request into the default branch holds it (GitHub's commits/SHA/pulls)."""

    @abstractmethod
    def dispatch(self, repo: str, workflow: str, ref: str, inputs: dict[str, str]) -> WorkflowRun | None:
        """Start ``workflow`` on ``ref`` with ``inputs``: the run when GitHub names it (the dispatch
        API's run details), else None. `DispatchRefused` when GitHub refuses for good."""

    @abstractmethod
    def find_run(self, repo: str, workflow: str, correlation_id: str) -> WorkflowRun | None:
        """The dispatched run of ``workflow`` whose display title carries ``correlation_id``, if it
        exists yet."""

    @abstractmethod
    def cancel_run(self, repo: str, run_id: int) -> None:
        """Ask GitHub to cancel a run; a run that already finished is left as it is."""

    @abstractmethod
    def artifacts(self, repo: str, run_id: int) -> list[ArtifactRef]: ...

    @abstractmethod
    def download_artifact(self, repo: str, artifact_id: int, max_bytes: int) -> bytes:
        """The artifact's zip archive; `ArtifactInvalid` when GitHub offers no download or it is
        larger than ``max_bytes``, `ArtifactUnavailable` when its storage does not hand it over."""


class GitHubFactory(ABC):
    @abstractmethod
    def for_installation(self, installation_id: int | None) -> GitHub:
        """A client for one installation (or the token), for the calling thread alone: clients
        are never shared between threads (an HTTP connection answers one request at a time).
        `InstallationGone` when there is no such installation (or none was named, in App mode)."""
