"""The one place that builds the server's adapters from `Settings`: the SQL store, the huey queue
and the GitHub client factory, with the service's jobs bound to the queue. `perfbot serve` (the
web app and its embedded consumer) and `perfbot worker` start here; the rest sees only ports."""

from __future__ import annotations

from dataclasses import dataclass

from huey.consumer import Consumer

from bot.adapters.github_client import PyGithubFactory
from bot.adapters.github_manifest import GitHubAppRegistration
from bot.adapters.github_oauth import GitHubSignIn
from bot.adapters.queue import HueyQueue
from bot.adapters.scoring_process import ScoringProcess
from bot.adapters.sqlite_files import WalCheckpoints
from bot.adapters.store.sessions import SqlSessionStore
from bot.adapters.store.sql import SqlStore, sqlite_file
from bot.service import hourly, jobs
from bot.service.ports.github import GitHubFactory
from bot.service.router import Router
from bot.service.routes import ROUTER
from bot.service.services import Services
from bot.settings import Settings


@dataclass(frozen=True)
class Runtime:
    """One process's adapters, and the services (its ports) that the handlers and the app see."""

    settings: Settings
    services: Services
    router: Router
    store: SqlStore
    queue: HueyQueue
    sessions: SqlSessionStore  # the dashboard's signed-in sessions, in the store's database

    def start_consumer(
        self, threads: int, periodic: bool = True, stop_timeout_s: float | None = None
    ) -> RunningConsumer:
        """Consume the queue on threads of this process (the process keeps its signal handlers),
        with its duties (`jobs.ConsumerDuties`: it takes over dead workers' deliveries first, and
        renews its leases while it runs); ``periodic``: this consumer also runs the sweep and
        enqueues the periodic tasks, which one consumer of the queue must do; ``stop_timeout_s``:
        how long a graceful stop waits for the running jobs (None: until they end)."""
        duties = jobs.ConsumerDuties(self.services, threads, periodic).start()
        consumer = self.queue.consumer(
            workers=threads, in_process=True, periodic=periodic, stop_timeout_s=stop_timeout_s
        )
        consumer.start()
        return RunningConsumer(consumer, duties)

    def close(self) -> None:
        self.store.engine.dispose()


@dataclass(frozen=True)
class RunningConsumer:
    consumer: Consumer
    duties: jobs.ConsumerDuties

    def stop(self, graceful: bool = True) -> None:
        self.consumer.stop(graceful=graceful)
        self.duties.stop()


def build(
    settings: Settings,
    github: GitHubFactory | None = None,
    router: Router = ROUTER,
    retry_delay: float | None = None,
    scoring_process: ScoringProcess | None = None,
) -> Runtime:
    """Connect (and migrate) the store, open the queue and bind the jobs to it; ``github``
    replaces the PyGithub factory (tests), ``retry_delay`` every retry's wait (tests; by default
    the jobs' backoff); ``scoring_process`` scores the reviews' diffs (by default, the thread
    reviewing does: the queue consumer's process passes one, `perfbot worker`)."""
    store = SqlStore.connect(settings.database_url)
    try:  # a failed start leaves no connection open: the callers try again, each with a new engine
        queue = HueyQueue(settings.resolved_queue_url, retry_delay=retry_delay)
        services = Services(
            store=store,
            github=github or PyGithubFactory(settings),
            queue=queue,
            sign_in=sign_in(settings),
            app_registration=(
                GitHubAppRegistration(settings.github_api_url) if settings.register_app_to else None
            ),
        )
        if scoring_process is not None:
            services.assess = scoring_process
        queue.bind(
            lambda delivery_id: jobs.process(delivery_id, services, router),
            lambda: jobs.housekeeping(services),
            lambda: hourly.sweep(services),
        )
        return Runtime(settings, services, router, store, queue, SqlSessionStore(store.db))
    except BaseException:
        store.engine.dispose()
        raise


def sign_in(settings: Settings) -> GitHubSignIn | None:
    """Dashboard sign-in through the App's user authorization, when its client is configured."""
    if not (settings.sign_in_enabled and settings.oauth_client_id and settings.oauth_client_secret):
        return None
    return GitHubSignIn(
        settings.oauth_client_id,
        settings.oauth_client_secret,
        settings.github_web_url,
        settings.github_api_url,
    )


def migrate(settings: Settings) -> None:
    """Bring the database to the newest schema, once, before `perfbot serve` forks its workers."""
    SqlStore.connect(settings.database_url).engine.dispose()


def wal_checkpoints(settings: Settings) -> WalCheckpoints:
    """Checkpoints of the SQLite files the server writes (store, embedded queue), for the process
    that supervises those writing them."""
    files = [sqlite_file(settings.database_url)]
    if settings.queue_embedded:
        files.append(settings.resolved_queue_url.removeprefix("sqlite:///"))
    return WalCheckpoints([f for f in files if f])
