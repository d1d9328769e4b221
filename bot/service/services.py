"""The bundle a handler works with: the ports, which `bot.bootstrap` fills with the real adapters,
and what one process keeps of its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bot.core.review import plan as review_plan

from .leases import Running
from .ports.app_registration import AppRegistration
from .ports.github import GitHubFactory
from .ports.queue import Queue
from .ports.sign_in import SignIn
from .ports.store import Store
from .storing import Storing


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Services:
    """What a handler works with: the ports, and what its process keeps of its own (``storing``,
    ``running``). `bot.bootstrap.build` makes one per process (in each gunicorn worker, after the
    fork; in each consumer process), so no two processes, and no two tests, share those; the
    process's threads do, each part behind its own lock. `dataclasses.replace` keeps them: the same
    process, with another clock, say."""

    store: Store
    github: GitHubFactory
    queue: Queue
    now: Callable[[], datetime] = field(default=utc_now)
    sign_in: SignIn | None = None  # None: dashboard sign-in is not configured
    # None: not registering an App (only `perfbot serve --register-app` does)
    app_registration: AppRegistration | None = None
    # How a review scores its diff: on the calling thread, or where `bot.bootstrap` says (the
    # consumer process: a process of its own, `bot.adapters.scoring_process`).
    assess: Callable[[review_plan.PullFacts], review_plan.Assessment] = review_plan.assess
    storing: Storing = field(default_factory=Storing)  # whether its intake stored the last delivery
    running: Running = field(default_factory=Running)  # the deliveries its consumer threads work on
