"""What a failed attempt at a delivery means, decided once, in one place.

- **Permanent**: retrying cannot help (no or bad GitHub credentials, a repository that was
  deleted, a payload without the fields its event must have). The delivery fails at once, with
  one log line saying why and what to do, and shows on `/healthz` and the dashboard.
- **Transient**: the world outside is down or busy (GitHub's 5xx, a timeout, a broken connection,
  a secondary rate limit, an installation token that expired, the database restarting). The
  delivery is tried again after a backoff that honours the server's ``Retry-After``.
- **Bug**: any other exception (a `KeyError` in a handler, a `TypeError` inside PyGithub on an
  odd answer). It is tried again too, in case the cause was passing, and its traceback is logged
  once, not at every attempt.

The adapters translate what they know into `Permanent` and `Transient`; the failures the ports
name (`PullRequestGone`, `DispatchRefused`, `ArtifactInvalid` in `bot.service.ports.github`) are
kinds of `Permanent`, so their class says their kind. Whatever the adapters do not know stays a
bug. Nothing here imports an adapter.
"""

from __future__ import annotations

from enum import Enum

from .events import MalformedPayload

FIRST_RETRY_S = 10.0  # the wait before the second attempt; doubled for each one after
MAX_RETRY_S = 900.0  # no wait is longer, whatever a Retry-After says (PyGithub's own cap)


class Kind(Enum):
    PERMANENT = "permanent"
    TRANSIENT = "transient"
    BUG = "bug"


class Permanent(Exception):
    """Retrying will not help. ``hint`` tells the operator what would (shown on `/healthz`, so it
    never carries a repository's name or a credential)."""

    hint = "see the server's log"

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        if hint is not None:
            self.hint = hint


class NoCredentials(Permanent):
    hint = "set PERFBOT_APP_ID + PERFBOT_PRIVATE_KEY (GitHub App) or PERFBOT_GITHUB_TOKEN"


class BadCredentials(Permanent):
    hint = "GitHub refused perfbot's credentials (401): check the App id and key, or the token"


class Gone(Permanent):
    """What was asked about no longer exists on GitHub. Its kinds say what: `InstallationGone`
    here, `PullRequestGone` (a port's answer) in `bot.service.ports.github`; a plain `Gone` is
    anything else (a repository, a commit)."""

    hint = "GitHub no longer has what the event was about (deleted, transferred or uninstalled)"


class InstallationGone(Gone):
    """The App's installation is not there to act as: uninstalled, suspended, or none was named
    (an event from App mode without an installation)."""


class Transient(Exception):
    """Worth trying again later; ``retry_after``: how long the other side asked us to wait."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class StorageUnavailable(Transient):
    """The database (or the queue's file) cannot be read or written now: down, restarting, full,
    or made read-only. Nothing was stored by the call that raised it."""


class SchemaNotMigrated(Exception):  # noqa: N818 - a state of the database, as StorageUnavailable
    """The database answered, but its schema could not be brought to this version's: a migration
    failed on what it found there (a column or table already there, a revision this version does
    not know, no right to create tables). Not `Transient`: waiting would not help, a person must."""


class QueueUnavailable(Transient):
    """The queue cannot take or hand out jobs now."""


class SubjectBusy(Exception):  # noqa: N818 - a state, not an error
    """Another worker is processing a delivery of the same subject (pull request) right now."""


class RetryLater(Exception):  # noqa: N818 - an instruction to the queue, not an error
    """Raised by a job to have the queue run it again in ``delay_s`` seconds (the queue adapter
    turns it into its own retry); the job has recorded and logged the failure already."""

    def __init__(self, delay_s: float):
        super().__init__(f"retry in {delay_s:.0f} s")
        self.delay_s = delay_s


def classify(error: BaseException) -> Kind:
    if isinstance(error, (Permanent, MalformedPayload)):
        return Kind.PERMANENT
    if isinstance(error, Transient):
        return Kind.TRANSIENT
    return Kind.BUG


def hint(error: BaseException) -> str:
    """What the operator should do about a permanent failure (safe to show anyone)."""
    if isinstance(error, Permanent):
        return error.hint
    if isinstance(error, MalformedPayload):
        return "the payload does not have the shape GitHub's schema gives its event"
    return "see the server's log"


def hint_for(error_type: str) -> str | None:
    """The hint of a permanent failure by its exception's name, as stored (``NoCredentials``)."""
    for kind in (NoCredentials, BadCredentials, InstallationGone, Gone, Permanent):
        if kind.__name__ == error_type:
            return kind.hint
    if error_type == MalformedPayload.__name__:
        return hint(MalformedPayload())
    return None


def backoff(attempt: int, retry_after: float | None = None) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1 for the first): 10, 20, 40, ...
    up to `MAX_RETRY_S`, and never less than the other side's ``retry_after``."""
    wait = FIRST_RETRY_S * 2 ** min(max(0, attempt - 1), 16)  # 2**16 * 10 s is past the cap
    return min(MAX_RETRY_S, max(wait, retry_after or 0.0))


def describe(error: BaseException) -> str:
    """One line: the exception's type and message, as the log and the stored error say it."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
