"""The whole bot in this process, on SQLite files of a scratch folder, talking to a GitHub stand-in:
the Flask app takes a delivery as `perfbot serve` would, and a queue consumer on threads of this
process handles it. `perfbot deliver --dry-run` runs a delivery through it."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from flask.testing import FlaskClient

from bot import bootstrap
from bot.settings import Settings
from bot.web.app import create_app

from .hookshot import Answer, message


class InProcessBot:
    """Start with `start()`; `deliver` a signed delivery, `wait_idle`, then `stop()`."""

    def __init__(self, settings: Settings, folder: Path):
        self.settings = replace(
            settings,
            database_url=f"sqlite:///{folder / 'perfbot.db'}",
            queue_url=f"sqlite:///{folder / 'perfbot.queue.db'}",
            log_level="WARNING",
        )
        self.runtime: bootstrap.Runtime | None = None
        self.consumer: bootstrap.RunningConsumer | None = None
        self.client: FlaskClient | None = None

    def start(self, threads: int = 2) -> InProcessBot:
        # Retries come at once: a dry run waits for the outcome, never for a backoff.
        runtime = self.runtime = bootstrap.build(self.settings, retry_delay=0)
        app = create_app(self.settings, runtime.services, runtime.router, runtime.sessions)
        self.client = app.test_client()
        self.consumer = runtime.start_consumer(threads, periodic=False)
        return self

    def deliver(self, body: bytes, headers: dict[str, str]) -> Answer:
        answer = self._client().post("/webhook", data=body, headers=headers)
        return Answer(answer.status_code, answer.status.partition(" ")[2], message(answer.get_data()))

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Until no stored delivery waits or runs and the queue is empty (False: not in ``timeout``)."""
        runtime = self._runtime()
        deliveries, queue = runtime.store.deliveries, runtime.queue
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "pending" not in deliveries.counts() and queue.pending() == 0:
                return True
            time.sleep(0.05)
        return False

    def failures(self) -> list[str]:
        """The errors of the deliveries that failed."""
        failed = self._runtime().store.deliveries.failures(limit=20)
        return [f"{f.event}: {f.error or f.failure}" for f in failed]

    def _runtime(self) -> bootstrap.Runtime:
        if self.runtime is None:
            raise RuntimeError("start() first")
        return self.runtime

    def _client(self) -> FlaskClient:
        if self.client is None:
            raise RuntimeError("start() first")
        return self.client

    def stop(self) -> None:
        if self.consumer is not None:
            self.consumer.stop(graceful=True)
        if self.runtime is not None:
            self.runtime.close()
