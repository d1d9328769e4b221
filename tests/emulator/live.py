"""A whole bot (Flask intake, real queue and consumer, PyGithub) wired to the GitHub API emulator."""

from __future__ import annotations

from dataclasses import dataclass

from bot.adapters.github_client import PyGithubFactory, retry_policy
from bot.bootstrap import Runtime, build
from bot.core.config.schema import CONFIG_PATH
from bot.settings import Settings
from bot.web.app import create_app
from tests.support.github_emulator import GitHubEmulator, RepoState, wait_for
from tests.web.helpers import SECRET, deliver

REPO = "Codertocat/Hello-World"
DEFAULT_BRANCH = "master"
APP_ID = 4711
TOKEN = "ghp_perfbot_test_token"
BRANCH_HEAD = "f" * 40


def trust_app(emulator: GitHubEmulator, app_key: tuple[str, str]) -> None:
    """The emulator takes the App's JSON web tokens (signed with ``app_key``) and, holding a token
    of its own, refuses requests that carry none."""
    emulator.app_id, emulator.app_public_key = APP_ID, app_key[1]
    emulator.tokens.add("placeholder-so-that-auth-is-enforced")


def add_repository(
    emulator: GitHubEmulator, config: str, permissions: dict[str, str], head: str = BRANCH_HEAD
) -> RepoState:
    """`REPO` with ``config`` as its perfbot config on the default branch at ``head``, the benchmark
    workflow, and ``permissions`` (login -> role)."""
    state = emulator.add_repo(REPO, DEFAULT_BRANCH)
    state.files[(DEFAULT_BRANCH, CONFIG_PATH)] = config
    state.branches[DEFAULT_BRANCH] = head
    state.permissions.update(permissions)
    emulator.add_workflow(REPO)
    return state


@dataclass
class LiveBot:
    emulator: GitHubEmulator
    runtime: Runtime
    client: object
    consumer: object

    def deliver(self, event: str, payload: dict, **kw):
        return deliver(self.client, event, payload, **kw)

    def wait_done(self, count: int, timeout: float = 20.0) -> None:
        def finished() -> bool:
            counts = self.runtime.store.deliveries.counts()
            return counts.get("done", 0) + counts.get("failed", 0) >= count

        assert wait_for(finished, timeout), self.runtime.store.deliveries.counts()

    def wait_idle(self, timeout: float = 20.0) -> None:
        """Until no stored delivery waits or runs and the queue is empty: whatever was accepted
        has been processed (a delivery is pending from its claim until its handler finished)."""

        def idle() -> bool:
            return (
                "pending" not in self.runtime.store.deliveries.counts() and self.runtime.queue.pending() == 0
            )

        assert wait_for(idle, timeout), self.runtime.store.deliveries.counts()

    def stop(self) -> None:
        self.consumer.stop(graceful=True)
        self.runtime.close()


def start(
    emulator: GitHubEmulator,
    database_url: str,
    queue_url: str,
    app_key: tuple[str, str] | None,
    workers: int = 2,
    periodic: bool = True,
) -> LiveBot:
    """The bot over ``emulator``; ``periodic``: its consumer also runs the periodic tasks when the
    clock says they are due (off: a test runs them itself, at the time it chooses)."""
    if app_key is not None:
        trust_app(emulator, app_key)
        settings = Settings(app_id=APP_ID, private_key=app_key[0])
    else:
        emulator.tokens.add(TOKEN)
        settings = Settings(github_token=TOKEN)
    settings = Settings(
        **{
            **settings.__dict__,
            "webhook_secrets": (SECRET,),
            "github_api_url": emulator.base_url,
            "database_url": database_url,
            "queue_url": queue_url,
        }
    )
    github = PyGithubFactory(settings, retry=retry_policy(total=4, backoff=0.05, secondary_wait=1))
    runtime = build(settings, github=github, retry_delay=0)
    consumer = runtime.start_consumer(workers, periodic=periodic)
    return LiveBot(emulator, runtime, create_app(settings, runtime.services).test_client(), consumer)
