"""The webhook events the bot acts on, parsed once from a delivery's payload into typed records.

Parsing happens at the service's entry (the intake decides with it whether a delivery is work,
the worker hands it to the event's pipeline), so no handler reads the raw payload. A payload of a
handled event whose fields have the wrong types or are missing raises `MalformedPayload`, which
names the field: a signed body of the wrong shape is refused, never half-processed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.core.bench import contract
from bot.core.commands import grammar

from .records import Repository

Id = Annotated[int, Field(ge=1, le=2**63 - 1)]
Number = Annotated[int, Field(ge=1, le=2**31 - 1)]  # GitHub numbers issues within a 32-bit range


class MalformedPayload(ValueError):
    """A handled event's payload does not have the fields (or field types) GitHub's schema says."""


# The actions the bot acts on, by event: each is the one list of its event's actions (`KINDS` reads them).
PullRequestAction = Literal["opened", "synchronize", "reopened", "ready_for_review", "edited", "closed"]
WorkflowRunAction = Literal["requested", "in_progress", "completed"]
InstallationAction = Literal["created", "unsuspend", "new_permissions_accepted", "deleted", "suspend"]
InstallationRepositoriesAction = Literal["added", "removed"]


@dataclass(frozen=True, kw_only=True)
class Repo:
    """The repository an event is about, and the installation it came through."""

    full_name: str
    default_branch: str
    installation_id: int | None
    record: Repository | None  # as the store keeps it (with its visibility); None: the payload gave no id


@dataclass(frozen=True, kw_only=True)
class PullRequestEvent:
    """`pull_request`: opened, synchronize, reopened, ready_for_review, edited, closed."""

    action: PullRequestAction
    repo: Repo
    number: int
    head_sha: str
    open: bool
    draft: bool
    merged: bool
    merge_commit_sha: str | None
    base_changed: bool  # edited: the base branch changed (a title or body edit cannot move the risk)
    title: str
    author: str | None
    html_url: str
    merged_at: datetime | None
    updated_at: datetime | None
    base_ref: str | None = None  # the branch it targets (merged into); None: the payload named none

    @property
    def merged_into_default_branch(self) -> bool:
        """Merged, and into the default branch: only such a merge is part of its history (recorded,
        benchmarked, watched). A merge into another branch (``release/x``) is a plain close.
        GitHub always names the base; a payload without one is read as the default branch's."""
        return self.merged and (self.base_ref is None or self.base_ref == self.repo.default_branch)


@dataclass(frozen=True, kw_only=True)
class CommandEvent:
    """A new comment on a pull request (`issue_comment` created) or a review's body
    (`pull_request_review` submitted) that mentions `/bench`."""

    kind: Literal["comment", "review"]
    repo: Repo
    number: int
    subject: str  # what the command is keyed on: the comment's id, or review-<id>
    comment_id: int | None  # None for a review body, which takes no reactions
    login: str
    by_bot: bool  # a bot account or an App wrote it
    body: str
    created_at: datetime | None
    commit_id: str | None  # a review's commit: the head its author read


@dataclass(frozen=True, kw_only=True)
class WorkflowRunEvent:
    """`workflow_run` of a dispatched run whose name carries a correlation id."""

    action: WorkflowRunAction
    repo: Repo
    run_id: int
    run_attempt: int
    path: str
    correlation_id: str
    conclusion: str | None
    html_url: str | None
    minutes: float | None = None  # how long the run took, start to last update (once completed)


@dataclass(frozen=True, kw_only=True)
class InstallationEvent:
    action: InstallationAction
    installation_id: int
    repositories: tuple[Repository, ...] | None  # None: the payload did not list them


@dataclass(frozen=True, kw_only=True)
class InstallationRepositoriesEvent:
    action: InstallationRepositoriesAction
    installation_id: int
    added: tuple[Repository, ...]
    removed: tuple[int, ...]


Event = PullRequestEvent | CommandEvent | WorkflowRunEvent | InstallationEvent | InstallationRepositoriesEvent


# ---------------------------------------------------------------- the payloads' shapes


class _Shape(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _User(_Shape):
    login: str
    type: str = "User"


class _Installation(_Shape):
    id: Id


class _Repository(_Shape):
    id: Id | None = None
    full_name: str
    default_branch: str = "main"
    private: bool | None = None


class _ListedRepository(_Shape):
    id: Id
    full_name: str
    private: bool | None = None


class _Head(_Shape):
    sha: str


class _Base(_Shape):
    ref: str | None = None


class _PullRequest(_Shape):
    number: Number
    state: str
    draft: bool | None = False
    merged: bool | None = False
    merge_commit_sha: str | None = None
    head: _Head
    base: _Base | None = None
    title: str | None = ""
    user: _User | None = None
    html_url: str
    merged_at: datetime | None = None
    updated_at: datetime | None = None


class _Changes(_Shape):
    base: dict[str, Any] | None = None


class _PullRequestPayload(_Shape):
    action: PullRequestAction
    pull_request: _PullRequest
    repository: _Repository
    installation: _Installation | None = None
    changes: _Changes | None = None


class _Comment(_Shape):
    id: Id
    body: str | None = ""
    user: _User
    created_at: datetime | None = None
    performed_via_github_app: dict[str, Any] | None = None


class _Issue(_Shape):
    number: Number
    pull_request: dict[str, Any] | None = None


class _CommentPayload(_Shape):
    comment: _Comment
    issue: _Issue
    repository: _Repository
    installation: _Installation | None = None


class _Review(_Shape):
    id: Id
    body: str | None = ""
    user: _User
    commit_id: str | None = None
    submitted_at: datetime | None = None
    performed_via_github_app: dict[str, Any] | None = None


class _ReviewedPull(_Shape):
    number: Number


class _ReviewPayload(_Shape):
    review: _Review
    pull_request: _ReviewedPull
    repository: _Repository
    installation: _Installation | None = None


class _WorkflowRun(_Shape):
    id: Id
    run_attempt: int | None = 1
    event: str
    path: str | None = ""
    display_title: str | None = ""
    conclusion: str | None = None
    html_url: str | None = None
    # Read leniently (`_minutes`): they only settle the budget's charge, never refuse the delivery.
    run_started_at: Any = None
    updated_at: Any = None


class _WorkflowRunPayload(_Shape):
    action: WorkflowRunAction
    workflow_run: _WorkflowRun
    repository: _Repository
    installation: _Installation | None = None


class _InstallationPayload(_Shape):
    action: InstallationAction
    installation: _Installation
    repositories: list[_ListedRepository] | None = None


class _InstallationRepositoriesPayload(_Shape):
    action: InstallationRepositoriesAction
    installation: _Installation
    repositories_added: list[_ListedRepository] = []
    repositories_removed: list[_ListedRepository] = []


# ---------------------------------------------------------------- parsing


def parse(event: str, payload: dict[str, Any]) -> Event | None:
    """The typed event of a delivery, or None when the bot does not act on this event or action;
    `MalformedPayload` when it would, but the payload is not what GitHub sends."""
    kind = KINDS.get(event)
    if kind is None or payload.get("action") not in kind.actions:
        return None
    try:
        return kind.parse(payload)
    except ValidationError as error:
        raise MalformedPayload(_first_problem(event, error)) from None


def _repo(repository: _Repository, installation: _Installation | None) -> Repo:
    installation_id = installation.id if installation else None
    record = (
        None
        if repository.id is None
        else Repository(repository.id, repository.full_name, installation_id, repository.private)
    )
    return Repo(
        full_name=repository.full_name,
        default_branch=repository.default_branch,
        installation_id=installation_id,
        record=record,
    )


def _repositories(items: list[_ListedRepository], installation: _Installation) -> tuple[Repository, ...]:
    return tuple(Repository(r.id, r.full_name, installation.id, r.private) for r in items)


def _pull_request(payload: dict[str, Any]) -> PullRequestEvent:
    parsed = _PullRequestPayload.model_validate(payload)
    pr = parsed.pull_request
    return PullRequestEvent(
        action=parsed.action,
        repo=_repo(parsed.repository, parsed.installation),
        number=pr.number,
        head_sha=pr.head.sha,
        open=pr.state == "open",
        draft=bool(pr.draft),
        merged=bool(pr.merged),
        merge_commit_sha=pr.merge_commit_sha,
        base_changed=bool(parsed.changes and parsed.changes.base is not None),
        title=pr.title or "",
        author=pr.user.login if pr.user else None,
        html_url=pr.html_url,
        merged_at=pr.merged_at,
        updated_at=pr.updated_at,
        base_ref=pr.base.ref if pr.base is not None else None,
    )


def mentions_bench(body: object) -> bool:
    """Cheap test, so that the thousands of other comments are not stored and queued."""
    return isinstance(body, str) and grammar.PREFIX in body[: grammar.MAX_COMMENT]


def _by_a_bot(user: _User, via_app: dict[str, Any] | None) -> bool:
    return user.type == "Bot" or via_app is not None or user.login.endswith("[bot]")


def _comment(payload: dict[str, Any]) -> CommandEvent | None:
    if not mentions_bench(
        (payload.get("comment") or {}).get("body") if isinstance(payload.get("comment"), dict) else None
    ):
        return None
    parsed = _CommentPayload.model_validate(payload)
    if parsed.issue.pull_request is None:
        return None  # a comment on an issue: not a command
    comment = parsed.comment
    return CommandEvent(
        kind="comment",
        repo=_repo(parsed.repository, parsed.installation),
        number=parsed.issue.number,
        subject=str(comment.id),
        comment_id=comment.id,
        login=comment.user.login,
        by_bot=_by_a_bot(comment.user, comment.performed_via_github_app),
        body=comment.body or "",
        created_at=comment.created_at,
        commit_id=None,
    )


def _review(payload: dict[str, Any]) -> CommandEvent | None:
    review = payload.get("review")
    if not mentions_bench(review.get("body") if isinstance(review, dict) else None):
        return None
    parsed = _ReviewPayload.model_validate(payload)
    reviewed = parsed.review
    commit = reviewed.commit_id if reviewed.commit_id and contract.SHA.fullmatch(reviewed.commit_id) else None
    return CommandEvent(
        kind="review",
        repo=_repo(parsed.repository, parsed.installation),
        number=parsed.pull_request.number,
        subject=f"review-{reviewed.id}",
        comment_id=None,
        login=reviewed.user.login,
        by_bot=_by_a_bot(reviewed.user, reviewed.performed_via_github_app),
        body=reviewed.body or "",
        created_at=reviewed.submitted_at,
        commit_id=commit,
    )


def _workflow_run(payload: dict[str, Any]) -> WorkflowRunEvent | None:
    run = payload.get("workflow_run")
    if not isinstance(run, dict) or run.get("event") != "workflow_dispatch":
        return None
    title = run.get("display_title")
    correlation = contract.correlation_in(title) if isinstance(title, str) else None
    if correlation is None:
        return None  # not a run the bot dispatched: never stored, never queued
    parsed = _WorkflowRunPayload.model_validate(payload)
    found = parsed.workflow_run
    return WorkflowRunEvent(
        action=parsed.action,
        repo=_repo(parsed.repository, parsed.installation),
        run_id=found.id,
        run_attempt=found.run_attempt or 1,
        path=found.path or "",
        correlation_id=correlation,
        conclusion=found.conclusion,
        html_url=found.html_url,
        minutes=_minutes(found) if parsed.action == "completed" else None,
    )


def _minutes(run: _WorkflowRun) -> float | None:
    """The run's length in minutes, from its start to its last update (its end, once completed);
    None when GitHub's times are missing, unreadable or out of order."""
    try:
        started = datetime.fromisoformat(str(run.run_started_at))
        ended = datetime.fromisoformat(str(run.updated_at))
        seconds = (ended - started).total_seconds()
    except (TypeError, ValueError):  # a time missing, unreadable, or one without its zone
        return None
    return round(seconds / 60, 2) if 0 <= seconds <= 35 * 86_400 else None


def _installation(payload: dict[str, Any]) -> InstallationEvent:
    parsed = _InstallationPayload.model_validate(payload)
    listed = None if parsed.repositories is None else _repositories(parsed.repositories, parsed.installation)
    return InstallationEvent(
        action=parsed.action, installation_id=parsed.installation.id, repositories=listed
    )


def _installation_repositories(payload: dict[str, Any]) -> InstallationRepositoriesEvent:
    changed = _InstallationRepositoriesPayload.model_validate(payload)
    return InstallationRepositoriesEvent(
        action=changed.action,
        installation_id=changed.installation.id,
        added=_repositories(changed.repositories_added, changed.installation),
        removed=tuple(r.id for r in changed.repositories_removed),
    )


def _first_problem(event: str, error: ValidationError) -> str:
    problem = error.errors(include_url=False)[0]
    where = ".".join(str(part) for part in problem["loc"]) or "(the payload)"
    return f"{event} payload: {where}: {problem['msg']}"


# ---------------------------------------------------------------- the events the bot acts on


@dataclass(frozen=True)
class Kind:
    """How the bot reads one GitHub event: the typed event it becomes, the actions it is acted on
    for (any other is not parsed), and its parser."""

    type: type[Event]
    actions: tuple[str, ...]  # a tuple: an unhashable "action" of a hostile payload is just not one of them
    parse: Callable[[dict[str, Any]], Event | None]


# The one table of GitHub event names: `parse` reads it, and so does the router (what the App subscribes to).
KINDS: Mapping[str, Kind] = {
    "pull_request": Kind(PullRequestEvent, get_args(PullRequestAction), _pull_request),
    "issue_comment": Kind(CommandEvent, ("created",), _comment),
    "pull_request_review": Kind(CommandEvent, ("submitted",), _review),
    "workflow_run": Kind(WorkflowRunEvent, get_args(WorkflowRunAction), _workflow_run),
    "installation": Kind(InstallationEvent, get_args(InstallationAction), _installation),
    "installation_repositories": Kind(
        InstallationRepositoriesEvent, get_args(InstallationRepositoriesAction), _installation_repositories
    ),
}
