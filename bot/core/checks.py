"""The one model of what perfbot publishes on a commit besides the sticky comment: a check run in
App mode, a commit status in token mode. The review's `perfbot / risk` check and a benchmark's
`perfbot / bench` check are both this."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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


def commit_state(check: Check) -> Literal["pending", "success", "failure"]:
    """The commit status that stands for ``check`` in token mode: statuses know no 'neutral' or
    'cancelled', so only a failure fails and only a check in progress is pending."""
    if check.status == "in_progress" or check.conclusion is None:
        return "pending"
    return "failure" if check.conclusion == "failure" else "success"
