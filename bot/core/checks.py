"""The one model of what perfbot publishes on a commit besides the sticky comment: a check run in
App mode, a commit status in token mode. The review's `perfbot / risk` check and a benchmark's
`perfbot / bench` check are both this."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

Status = Literal["in_progress", "completed"]
Conclusion = Literal["success", "neutral", "failure", "cancelled"]


@dataclass(frozen=True, kw_only=True)
class Check:
    """A check run on ``head_sha``; ``conclusion`` is None while it is in progress. A check with
    an ``external_id`` (a benchmark's correlation id) is found again by it, one without by its name."""

    name: str
    head_sha: str
    status: Status = "completed"
    conclusion: Conclusion | None
    title: str
    summary: str
    details_url: str | None = None
    external_id: str | None = None
    # Concluded without saying anything about the change (a benchmark that failed, timed out or
    # could not start): neutral as a check run, an error as a commit status.
    verdictless: bool = False
    # What a commit status says instead of the title, where a green tick next to the title would
    # read as "fine" (a flagged risk is informational, so its status is a success).
    status_description: str | None = None


StatusState = Literal["pending", "success", "failure", "error"]
DESCRIPTION_LIMIT = 140  # GitHub refuses a longer commit status description


class CommitStatus(NamedTuple):
    state: StatusState
    description: str


def commit_status(check: Check) -> CommitStatus:
    """The commit status that stands for ``check`` in token mode. Statuses know no 'neutral' or
    'cancelled': a check that measured nothing or was cancelled is an error (never a green success
    a reviewer reads as "fine"), only a failure fails, and a check in progress is pending."""
    description = (check.status_description or check.title)[:DESCRIPTION_LIMIT]
    if check.status == "in_progress" or check.conclusion is None:
        return CommitStatus("pending", description)
    if check.conclusion == "failure":
        return CommitStatus("failure", description)
    if check.conclusion == "cancelled" or check.verdictless:
        return CommitStatus("error", description)
    return CommitStatus("success", description)
