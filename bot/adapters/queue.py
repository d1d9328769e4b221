"""The job queue (huey): a SQLite file by default, Redis for several workers on several machines."""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from collections.abc import Callable, Iterator

from huey import RedisHuey, crontab
from huey.api import Huey
from huey.consumer import Consumer
from huey.exceptions import RetryTask
from huey.storage import SqliteStorage
from redis.exceptions import RedisError

from bot.service.failures import QueueUnavailable, RetryLater
from bot.service.ports import Queue

from .job_serializer import JsonSerializer
from .sqlite_files import AUTOCHECKPOINT_PAGES, ReadOnlyStorage, WriterLock, check_writable, lock_file_beside

PROCESS_TASK = "perfbot.process_delivery"
SWEEP_TASK = "perfbot.requeue_stale"
SCHEDULE_TASK = "perfbot.scheduled_benchmarks"


def build_huey(url: str) -> Huey:
    """Results are not kept: outcomes live in the store, and kept results would pile up forever.
    Jobs travel as JSON (`job_serializer`): nothing read from the queue is unpickled."""
    if url.startswith(("redis://", "rediss://")):
        return RedisHuey("perfbot", url=url, results=False, serializer=JsonSerializer())
    if url.startswith("sqlite:///"):
        return Huey("perfbot", storage_class=WalNormalSqliteStorage, filename=url.removeprefix("sqlite:///"),
                    timeout=30, results=False, serializer=JsonSerializer())
    raise ValueError(f"unsupported queue URL {url.split(':', 1)[0]}:... (expected redis:// or sqlite:///)")


class WalNormalSqliteStorage(SqliteStorage):
    """huey's SQLite storage with WAL and synchronous=NORMAL: safe against corruption, and no fsync
    per enqueue (huey offers only FULL or OFF). A job lost to a power cut is not lost work: its
    delivery stays pending in the store and the stale-delivery sweep enqueues it again. Writes
    queue on a `WriterLock` with the other processes of the file (web workers enqueue, consumers
    dequeue) rather than on SQLite's sleeping retries, and leave checkpoints to `perfbot serve`'s
    master (`sqlite_files`)."""

    def __init__(self, name: str = "huey", filename: str = "huey.db", **kwargs):
        self._writers = WriterLock(lock_file_beside(filename))  # before huey creates its tables
        self._file = filename
        super().__init__(name, filename=filename, **kwargs)

    @contextlib.contextmanager
    def db(self, commit=False, close=False):
        check_writable(self._file)  # before the connection is touched (sqlite_files: SIGBUS)
        with self._writers if commit else contextlib.nullcontext(), super().db(commit, close) as cursor:
            yield cursor

    def _create_connection(self):
        connection = super()._create_connection()
        connection.execute("pragma synchronous=1")
        connection.execute(f"pragma wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
        return connection


class HueyQueue(Queue):
    """Enqueue delivery ids; a consumer (in-process or `perfbot worker`) runs ``process`` on them.

    The job decides itself whether a failed attempt is tried again (`bot.service.jobs`): it raises
    `RetryLater`, which becomes huey's scheduled retry, and never anything else. A job lost with
    its worker (crash, kill -9) stays pending in the store, and the sweep enqueues it again.
    ``retry_delay`` replaces every retry's wait (tests: 0 retries at once).
    """

    def __init__(self, url: str, retry_delay: float | None = None):
        self.url = url
        with _unavailable_as_such():  # the embedded queue creates its tables here
            self.huey = build_huey(url)
        self._retry_delay = retry_delay
        self._task = None

    @property
    def embedded(self) -> bool:
        return not self.url.startswith(("redis://", "rediss://"))

    def bind(self, process: Callable[[int], object], sweep: Callable[[], object],
             hourly: Callable[[], object] | None = None) -> None:
        """Register the job functions (they need services that need this queue): each delivery,
        the minutely sweep, and the hourly task (scheduled benchmarks)."""
        self._task = self.huey.task(name=PROCESS_TASK)(_retried_later(process, self._retry_delay))
        self.huey.periodic_task(crontab(minute="*"), name=SWEEP_TASK)(sweep)
        if hourly is not None:
            self.huey.periodic_task(crontab(minute="7"), name=SCHEDULE_TASK)(hourly)

    def enqueue(self, delivery_id: int) -> None:
        if self._task is None:
            raise RuntimeError("HueyQueue.bind() must be called before enqueue()")
        with _unavailable_as_such():
            self._task(delivery_id)

    def pending(self) -> int:
        with _unavailable_as_such():
            return self.huey.pending_count()

    def ping(self) -> None:
        storage = self.huey.storage
        with _unavailable_as_such():
            if hasattr(storage, "conn") and hasattr(storage.conn, "ping"):
                storage.conn.ping()
            else:
                storage.queue_size()

    def consumer(self, workers: int = 2, in_process: bool = False, periodic: bool = True) -> Consumer:
        """A consumer on ``workers`` threads; ``periodic``: it also enqueues the periodic tasks when
        they are due, which exactly one consumer of a queue must do (each one that does enqueues
        them again)."""
        cls = InProcessConsumer if in_process else Consumer
        # huey's idle polling backs off to 10 s by default: a review would wait that long on the
        # SQLite queue. Redis dequeues block instead, so the cap only matters for SQLite.
        return cls(self.huey, workers=workers, worker_type="thread", periodic=periodic,
                   check_worker_health=True, scheduler_interval=1, initial_delay=0.05, max_delay=0.25)


def _retried_later(process: Callable[[int], object], delay: float | None) -> Callable[[int], object]:
    @functools.wraps(process)
    def job(delivery_id: int) -> object:
        try:
            return process(delivery_id)
        except RetryLater as retry:
            raise RetryTask(delay=retry.delay_s if delay is None else delay) from None

    return job


@contextlib.contextmanager
def _unavailable_as_such() -> Iterator[None]:
    """Redis down or restarting, or the queue's file locked, full or read-only: `QueueUnavailable`."""
    try:
        yield
    except (RedisError, sqlite3.Error, OSError, ReadOnlyStorage) as error:
        raise QueueUnavailable(f"the queue is unavailable: {type(error).__name__}: {error}") from error


class InProcessConsumer(Consumer):
    """A consumer sharing its process with the web server: the server owns the signals."""

    def _set_signal_handlers(self) -> None:
        pass
