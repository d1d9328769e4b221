"""Triage of a flagged merge by a maintainer: acknowledged, confirmed, false alarm, reverted, or
fixed by a later pull request, with a note."""

from __future__ import annotations

import unicodedata

from ..ports.dashboard import TRIAGE_STATES, TriageEvent
from ..services import Services
from . import access

MAX_NOTE = 2_000
MAX_NUMBER = 2**31 - 1


class TriageRefused(Exception):
    """The action is refused; ``status`` is the HTTP status that says why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def triage(
    services: Services, login: str, repo: str, number: int, state: str, fixed_by: int | None, note: str
) -> TriageEvent:
    """Record the triage, once GitHub confirms that ``login`` has write permission on ``repo``."""
    event = TriageEvent(state, fixed_by, _clean(note), login, services.now())
    _check(event)
    if not access.may_triage(services, repo, login):
        raise TriageRefused(403, f"@{login} needs write permission on {repo} to triage its merges")
    if not services.store.dashboard.record_triage(repo, number, event):
        raise TriageRefused(404, f"{repo}#{number} is not a recorded merge")
    return event


def _check(event: TriageEvent) -> None:
    if event.state not in TRIAGE_STATES:
        raise TriageRefused(400, f"state must be one of {', '.join(TRIAGE_STATES)}")
    if event.state == "fixed":
        if event.fixed_by is None or not 0 < event.fixed_by <= MAX_NUMBER:
            raise TriageRefused(400, "'fixed' needs the number of the pull request that fixed it")
    elif event.fixed_by is not None:
        raise TriageRefused(400, "a pull request number goes only with 'fixed'")
    if len(event.note) > MAX_NOTE:
        raise TriageRefused(400, f"the note is longer than {MAX_NOTE} characters")


def _clean(note: str) -> str:
    """The note without control characters other than line breaks and tabs."""
    kept = (c for c in note if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf"))
    return "".join(kept).strip()
