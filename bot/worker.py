"""`perfbot worker`: consume the queue until SIGTERM or SIGINT, on adapters from `bot.bootstrap`."""

from __future__ import annotations

import logging
import signal
import threading

from bot.bootstrap import Runtime

log = logging.getLogger("perfbot.worker")


def run_forever(runtime: Runtime, workers: int = 4, periodic: bool = True) -> None:
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    consumer = runtime.start_consumer(workers, periodic)
    log.info("worker started", extra={"workers": workers, "periodic": periodic,
                                      "queue": runtime.queue.url.split("://")[0]})
    stopping.wait()
    log.info("worker stopping")
    consumer.stop(graceful=True)
