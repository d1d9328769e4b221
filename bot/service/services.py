"""The bundle of ports a handler works with; `bot.bootstrap` fills it with the real adapters."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from .ports.github import GitHubFactory
from .ports.queue import Queue
from .ports.sign_in import SignIn
from .ports.store import Store


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Services:
    store: Store
    github: GitHubFactory
    queue: Queue
    now: Callable[[], datetime] = field(default=utc_now)
    sign_in: SignIn | None = None  # None: dashboard sign-in is not configured
