"""Run the app under gunicorn from Python (for `perfbot serve`). gunicorn's master also supervises
the queue consumer processes when the queue is the embedded SQLite file (`consumers`), and
checkpoints the SQLite files that its workers and consumers write. Its workers are
`buffering.Worker`s: an event loop reads each request whole, and only then does one of the
worker's threads run the app, so that slow or idle clients hold no thread.

A web worker that boots while the database (or the queue's file) cannot be used does not fail
its boot, which would make gunicorn's master give up and exit: it serves `Unavailable` (503 with
Retry-After) and builds the real app at a request once storage is back."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter

from bot import bootstrap, collector
from bot.service.failures import Transient
from bot.settings import Settings

from . import buffering
from .app import create_app
from .consumers import ConsumerProcesses, worker_commands

log = logging.getLogger("perfbot.serve")
# What a Ctrl-C gives the consumers to exit before they are killed: they stop without waiting for
# their jobs (`bot.worker`), so this is only a bound.
QUICK_STOP_S = 5.0


class PerfbotServer(BaseApplication):
    def __init__(
        self, settings: Settings, options: dict[str, Any], consumers: ConsumerProcesses | None = None
    ):
        self.settings, self.options, self.consumers = settings, options, consumers
        self.checkpoints = bootstrap.wal_checkpoints(settings)
        self.runtime: bootstrap.Runtime | None = None
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self) -> Flask | Unavailable:
        """In each worker process, after the fork: its own connections, queue and app."""
        try:
            return self._build()
        except Transient as error:  # the database or the queue's file: down, full, read-only
            log.error("web worker started without storage; answering 503 until it is back: %s", error)
            return Unavailable(self._build, str(error))

    def _build(self) -> Flask:
        self.runtime = bootstrap.build(self.settings)
        return create_app(self.settings, self.runtime.services, self.runtime.router, self.runtime.sessions)

    def run(self) -> None:
        try:
            SupervisingArbiter(self, self.consumers, self.checkpoints).run()
        except RuntimeError as error:  # gunicorn's own start-up errors, reported as it does
            print(f"\nError: {error}\n", file=sys.stderr)
            sys.exit(1)


class Unavailable:
    """A WSGI app answering 503 with Retry-After to every request, and trying to build the real
    app again at a request at most every `RETRY_S`; once built, every request goes to it."""

    RETRY_S = 2.0

    def __init__(self, build: Callable[[], Flask], reason: str, clock: Callable[[], float] = time.monotonic):
        self._build, self.reason, self._clock = build, reason, clock
        self._lock = threading.Lock()
        self._app: Flask | None = None
        self._next_try = clock() + self.RETRY_S

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        app = self._app or self._try()
        if app is not None:
            return app(environ, start_response)
        body = json.dumps(
            {
                "status": "down",
                "database": f"unavailable: {self.reason}",
                "message": "perfbot cannot use its storage right now",
            }
        ).encode()
        start_response(
            "503 SERVICE UNAVAILABLE",
            [
                ("Content-Type", "application/json"),
                ("Content-Length", str(len(body))),
                ("Retry-After", str(int(self.RETRY_S) + 1)),
            ],
        )
        return [body]

    def _try(self) -> Flask | None:
        if not self._lock.acquire(blocking=False):
            return None  # another thread is trying
        try:
            if self._app is None and self._clock() >= self._next_try:
                self._next_try = self._clock() + self.RETRY_S
                try:
                    self._app = self._build()
                    log.info("storage is back; the web worker serves again")
                except Transient as error:
                    self.reason = str(error)
            return self._app
        finally:
            self._lock.release()


class SupervisingArbiter(Arbiter):
    """gunicorn's master, which also keeps the queue consumer processes running: it starts them
    before its workers, restarts one that died (its loop wakes on SIGCHLD, and at least every
    second) and stops them with the workers, however the server is told to stop. On the same
    loop it checkpoints the SQLite files, so that no worker's commit has to (`sqlite_files`)."""

    def __init__(
        self, app: PerfbotServer, consumers: ConsumerProcesses | None, checkpoints: bootstrap.WalCheckpoints
    ):
        self.consumers, self.checkpoints = consumers, checkpoints
        super().__init__(app)

    def manage_workers(self) -> None:
        if self.consumers is not None:
            self.consumers.keep_running()
        super().manage_workers()
        self.checkpoints.run_if_due()

    def reap_workers(self) -> None:
        if self.consumers is not None:
            self.consumers.reap()
        super().reap_workers()

    def stop(self, graceful: bool = True) -> None:
        """Stop the consumers, the web workers and the checkpointer, and return once they are gone:
        the master exits after its children, never before. SIGTERM stops gracefully (running jobs
        get the consumers' --stop-timeout); SIGINT and SIGQUIT (``graceful`` false: a Ctrl-C) stop
        within a few seconds, running jobs left pending for the next consumer."""
        if self.consumers is not None:  # first, so that they wind down while the workers do
            self.consumers.terminate(quick=not graceful)
        super().stop(graceful)
        if self.consumers is not None:
            self.consumers.wait(self.cfg.graceful_timeout if graceful else QUICK_STOP_S, quick=not graceful)
        self.checkpoints.stop()


def serve(
    settings: Settings,
    host: str,
    port: int,
    workers: int,
    threads: int,
    consumers: int,
    consumer_threads: int,
) -> None:
    """Serve until SIGTERM; on the embedded queue with ``consumers`` consumer processes of
    ``consumer_threads`` threads each."""
    bootstrap.migrate(settings)
    # keepalive is also the time a connection has to send a request's headers (buffering.Protocol).
    options = {
        "bind": f"{host}:{port}",
        "workers": workers,
        "worker_class": buffering.Worker,
        "threads": threads,
        "timeout": 60,
        "graceful_timeout": 20,
        "keepalive": 5,
        "accesslog": None,
        "post_worker_init": _tune_collector,
        # gunicorn's control socket is one path per user ($HOME/.gunicorn): a second server
        # would take it over, and perfbot is stopped by signals, never through it.
        "control_socket_disable": True,
    }
    supervised = None
    if settings.queue_embedded:  # with Redis, `perfbot worker` processes run elsewhere
        supervised = ConsumerProcesses(worker_commands(consumers, consumer_threads))
    log.info(
        "serving",
        extra={
            "bind": options["bind"],
            "workers": workers,
            "consumers": consumers if supervised else 0,
            "queue": settings.resolved_queue_url.split(":", 1)[0],
        },
    )
    PerfbotServer(settings, options, supervised).run()


def _tune_collector(worker: Any) -> None:
    collector.tune_after_start()
