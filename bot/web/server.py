"""Run the app under gunicorn from Python (for `perfbot serve`), with the queue consumer
started inside each worker process when the queue is the embedded SQLite file."""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication

from bot import bootstrap
from bot.settings import Settings

from .app import create_app

log = logging.getLogger("perfbot.serve")
GC_THRESHOLDS = (50_000, 50, 50)  # young generation every 50,000 allocations, not every 700


class PerfbotServer(BaseApplication):
    def __init__(self, settings: Settings, options: dict[str, Any]):
        self.settings, self.options = settings, options
        self.runtime: bootstrap.Runtime | None = None
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self) -> Flask:
        """In each worker process, after the fork: its own connections, queue and app."""
        self.runtime = bootstrap.build(self.settings)
        return create_app(self.settings, self.runtime.services, self.runtime.router)


def serve(settings: Settings, host: str, port: int, workers: int, threads: int, consumers: int) -> None:
    bootstrap.migrate(settings)
    options = {"bind": f"{host}:{port}", "workers": workers, "worker_class": "gthread", "threads": threads,
               "timeout": 60, "graceful_timeout": 20, "keepalive": 5, "accesslog": None,
               "post_worker_init": _start_consumer(consumers), "worker_exit": _stop_consumer}
    log.info("serving", extra={"bind": options["bind"], "workers": workers,
                               "queue": settings.resolved_queue_url.split(":", 1)[0]})
    PerfbotServer(settings, options).run()


def _start_consumer(consumers: int) -> Callable[[Any], None]:
    def post_worker_init(worker: Any) -> None:
        # Collections of the oldest generation walk every object the app has made since start
        # (routes, migrations, rules) and stalled acknowledgements by up to 270 ms: keep start-up
        # objects out of the collector, and collect the young generation less often.
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)
        runtime = worker.app.runtime
        if not runtime.queue.embedded:
            return  # Redis: `perfbot worker` processes consume
        worker.perfbot_consumer = runtime.start_consumer(consumers)
    return post_worker_init


def _stop_consumer(server: Any, worker: Any) -> None:
    consumer = getattr(worker, "perfbot_consumer", None)
    if consumer is not None:
        consumer.stop(graceful=True)
