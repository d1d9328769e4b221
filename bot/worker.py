"""Wiring: build the store, queue and GitHub client from settings (the only place adapters are
made), and run the queue consumer."""

from __future__ import annotations

import logging
import signal
import threading
from dataclasses import dataclass

from bot.adapters.github_client import PyGithubFactory
from bot.adapters.queue import HueyQueue
from bot.adapters.store.sql import SqlStore
from bot.service import jobs
from bot.service.ports import GitHubFactory
from bot.service.router import Router
from bot.service.routes import ROUTER
from bot.service.services import Services
from bot.settings import Settings

log = logging.getLogger("perfbot.worker")


@dataclass
class Runtime:
    settings: Settings
    services: Services
    queue: HueyQueue
    router: Router
    store: SqlStore


def build(
    settings: Settings,
    github: GitHubFactory | None = None,
    router: Router = ROUTER,
    retry_delay: float = 10.0,
) -> Runtime:
    store = SqlStore.connect(settings.database_url)
    queue = HueyQueue(settings.resolved_queue_url, retry_delay=retry_delay)
    services = Services(store=store, github=github or PyGithubFactory(settings), queue=queue)
    queue.bind(
        lambda delivery_id: jobs.process(delivery_id, services, router), lambda: jobs.housekeeping(services)
    )
    return Runtime(settings, services, queue, router, store)


def run_forever(runtime: Runtime, workers: int = 4) -> None:
    """`perfbot worker`: consume until SIGTERM/SIGINT, after sweeping deliveries lost earlier."""
    jobs.housekeeping(runtime.services)
    consumer = runtime.queue.consumer(workers=workers, in_process=True)
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    consumer.start()
    log.info("worker started", extra={"workers": workers, "queue": runtime.queue.url.split("://")[0]})
    stopping.wait()
    log.info("worker stopping")
    consumer.stop(graceful=True)
