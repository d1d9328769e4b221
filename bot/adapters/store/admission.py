"""An admission of `/bench` commands over SQL: one transaction that no other admission to the same
repository interleaves with (on SQLite the writer lock already queues every writer; on PostgreSQL a
transaction-scoped advisory lock keyed on the repository does), and the facts its decision reads
inside it. The cooldowns start at the last command accepted, a `/bench` run or a `/bench bisect`
case alike, so both kinds are admitted under this lock: `Benchmarks.admit` records a run's
request, `Watch.open_by_command` a bisect's cases."""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from datetime import datetime

from sqlalchemy import and_, func, not_, select, text
from sqlalchemy.orm import Session

from bot.core.bench import contract

from .database import utc
from .tables import BenchRequestRow, RegressionCaseRow

# A request that ended before GitHub ran it: its dispatch refused, or released. It never ran, so
# the cooldowns do not count it.
NEVER_RAN = and_(BenchRequestRow.status == contract.FAILED, BenchRequestRow.run_id.is_(None))


def lock(session: Session, dialect: str, repo: str) -> None:
    """Hold the repository's admission until the transaction ends (PostgreSQL; SQLite's writer lock
    is held by every session already)."""
    if dialect == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _lock_key(repo)})


def last_command(
    session: Session,
    repo: str,
    *,
    user: str | None = None,
    number: int | None = None,
    own_cases: Collection[str] = (),
) -> datetime | None:
    """When the last command of ``user`` (or on pull request ``number``) that may spend GPU time was
    accepted: a `/bench` run that did not end before GitHub ran it, or a `/bench bisect` case."""
    runs = select(func.max(BenchRequestRow.created_at)).where(
        BenchRequestRow.repo == repo, BenchRequestRow.trigger == "command", not_(NEVER_RAN)
    )
    cases = select(func.max(RegressionCaseRow.detected_at)).where(
        RegressionCaseRow.repo == repo, RegressionCaseRow.source == "command"
    )
    if own_cases:
        cases = cases.where(RegressionCaseRow.key.not_in(list(own_cases)))
    if user is not None:  # GitHub's logins are the same login whatever their case
        runs = runs.where(func.lower(BenchRequestRow.requested_by) == user.lower())
        cases = cases.where(func.lower(RegressionCaseRow.requested_by) == user.lower())
    if number is not None:
        runs = runs.where(BenchRequestRow.number == number)
        cases = cases.where(RegressionCaseRow.number == number)
    return max(filter(None, (utc(session.scalar(runs)), utc(session.scalar(cases)))), default=None)


def _lock_key(repo: str) -> int:
    """A signed 64-bit key for PostgreSQL's advisory locks, the same for the same repository."""
    return int.from_bytes(hashlib.sha256(f"perfbot-admit:{repo}".encode()).digest()[:8], "big", signed=True)
