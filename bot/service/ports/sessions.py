"""Where the dashboard's signed-in sessions are kept (`SessionStore`), and what one holds
(`DashboardSession`); `bot.service.dashboard.sessions` starts, resumes and ends them."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class DashboardSession:
    login: str
    private_repos: frozenset[str]
    created_at: datetime
    checked_at: datetime  # when GitHub was last asked for private_repos
    expires_at: datetime


class SessionStore(ABC):
    """Where the signed-in sessions live, by the SHA-256 of their token (``key``)."""

    @abstractmethod
    def create(self, key: str, session: DashboardSession) -> None: ...

    @abstractmethod
    def get(self, key: str) -> DashboardSession | None:
        """The session, None when there is none (signed out, pruned or never made)."""

    @abstractmethod
    def recheck(self, key: str, private_repos: frozenset[str], checked_at: datetime) -> None:
        """Keep a fresh answer for the private repositories (nothing when the session is gone)."""

    @abstractmethod
    def delete(self, key: str) -> None: ...

    @abstractmethod
    def delete_expired(self, now: datetime) -> int:
        """Remove the sessions that ended before ``now``; how many."""
