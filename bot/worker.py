"""`perfbot worker`: consume the queue until SIGTERM or SIGINT, on adapters from `bot.bootstrap`."""

from __future__ import annotations

import itertools
import logging
import signal
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from bot.bootstrap import Runtime
from bot.service.failures import Transient
from bot.service.logs import JsonFormatter

T = TypeVar("T")

log = logging.getLogger("perfbot.worker")
QUEUE_ERRORS_EVERY_S = 30.0  # huey's own complaints about an unreachable queue, at most this often


# The signals received, first first. The handler only appends to this list, which takes no lock:
# Python runs a handler in the main thread between two of its bytecodes, perhaps while it holds a
# lock, and a handler that set a `threading.Event` took the Event's lock, which the main thread
# holds for an instant as it enters a wait: a SIGTERM then hung the worker for good.
_stopped_by: list[int] = []
STOP_POLL_S = 0.1  # how often a wait looks at that list: a stop is heard within this
START_WAITS_S = (1.0, 2.0, 4.0, 8.0, 15.0)  # between attempts to start while storage is away
# What a stopping worker gives its running jobs: under the 30 s that Kubernetes waits before
# SIGKILL, and what `perfbot serve` gives the consumers it stops.
STOP_TIMEOUT_S = 20.0


def _stop_on_signals() -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _stop)
    # `perfbot serve` starts its consumers with SIGINT blocked (`bot.web.consumers`): one it sent
    # while this process started is delivered now, to the handler.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _stop(signum: int, frame: object) -> None:
    _stopped_by.append(signum)


def told_to_stop(within_s: float | None) -> bool:
    """Whether SIGTERM or SIGINT came, waiting for one at most ``within_s`` (None: until one does)."""
    deadline = None if within_s is None else time.monotonic() + within_s
    while not _stopped_by:
        left = STOP_POLL_S if deadline is None else min(STOP_POLL_S, deadline - time.monotonic())
        if left <= 0:
            return False
        time.sleep(left)
    return True


def stopped_by() -> list[int]:
    """The stop signals received so far, first first."""
    return list(_stopped_by)


def when_storage_is_there(start: Callable[[], T]) -> T | None:
    """``start()``, again and again while the database or the queue is unavailable (one line per
    attempt, waiting longer each time up to 15 s): a worker started while PostgreSQL restarts
    waits for it rather than exiting; anything else, a schema that cannot be migrated among them
    (`SchemaNotMigrated`), is raised at once. None when told to stop meanwhile."""
    _stop_on_signals()
    for attempt in itertools.count():
        try:
            return start()
        except Transient as error:
            wait = START_WAITS_S[min(attempt, len(START_WAITS_S) - 1)]
            log.error("worker cannot start yet, trying again in %.0f s: %s", wait, error)
            if told_to_stop(wait):
                return None
    raise AssertionError("unreachable")


def run_forever(
    runtime: Runtime, workers: int = 4, periodic: bool = True, stop_timeout_s: float = STOP_TIMEOUT_S
) -> int:
    """Consume until told to stop; then, after SIGTERM, give the running jobs ``stop_timeout_s`` to
    end; after SIGINT (a Ctrl-C, or `perfbot serve` passing one on), none: a person waits. A job
    still running then (one waiting on GitHub, say) is left unfinished: its delivery stays pending
    in the database and the next consumer takes it over, as after a crash, and no supervisor has
    to kill the worker to stop it."""
    _stop_on_signals()
    quiet_queue_errors()
    if told_to_stop(0):  # told to stop while it started: nothing to consume, nothing to wait for
        return 0
    consumer = when_storage_is_there(lambda: runtime.start_consumer(workers, periodic, stop_timeout_s))
    if consumer is None:
        return 0
    log.info(
        "worker started",
        extra={"workers": workers, "periodic": periodic, "queue": runtime.queue.url.split("://")[0]},
    )
    told_to_stop(None)
    quick = signal.SIGINT in stopped_by()
    log.info("worker stopping", extra={"waiting_for_jobs_s": 0 if quick else stop_timeout_s})
    consumer.stop(graceful=not quick)
    unfinished = runtime.services.running.current()
    if unfinished:
        log.warning(
            "worker stopped with jobs unfinished after %.0f s; their deliveries stay pending "
            "and the next consumer takes them over",
            0 if quick else stop_timeout_s,
            extra={"deliveries": unfinished},
        )
    return 0


def quiet_queue_errors() -> None:
    """huey logs a traceback at every poll of a queue it cannot reach (four a second): send its
    warnings and errors through perfbot's log as one line each, the same one at most every
    `QUEUE_ERRORS_EVERY_S`."""
    huey = logging.getLogger("huey")
    if any(isinstance(f, _OncePerWhile) for h in huey.handlers for f in h.filters):
        return
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    handler.setLevel(logging.WARNING)
    handler.addFilter(_OncePerWhile(QUEUE_ERRORS_EVERY_S))  # on the handler: huey.consumer's too
    huey.addHandler(handler)
    huey.propagate = False


class _OncePerWhile(logging.Filter):
    def __init__(self, every_s: float):
        super().__init__()
        self.every_s = every_s
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            record.msg = f"{record.getMessage()}: {type(error).__name__}: {error}"
            record.args, record.exc_info, record.exc_text = None, None, None
        key, now = str(record.msg), time.monotonic()
        with self._lock:
            if now - self._last.get(key, -1e9) < self.every_s:
                return False
            self._last[key] = now
        return True
