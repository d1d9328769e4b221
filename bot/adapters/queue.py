"""The job queue (huey): a SQLite file by default, Redis for several workers on several machines."""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
from collections.abc import Callable, Iterator

from huey import RedisHuey, crontab
from huey.api import Huey
from huey.constants import EmptyData
from huey.consumer import Consumer
from huey.exceptions import RetryTask
from huey.storage import SqliteStorage
from redis.exceptions import RedisError

from bot.service import deadline
from bot.service.failures import QueueUnavailable, RetryLater, StorageUnavailable
from bot.service.ports.queue import Queue

from .job_serializer import JsonSerializer
from .sqlite_files import (
    AUTOCHECKPOINT_PAGES,
    FileLocked,
    GuardedConnection,
    WriterLock,
    check_writable,
    lock_file_beside,
)

PROCESS_TASK = "perfbot.process_delivery"
SWEEP_TASK = "perfbot.requeue_stale"
SCHEDULE_TASK = "perfbot.scheduled_benchmarks"
WAIT_S = 30.0  # the longest any call waits for the queue's locked file; the intake's deadline is far shorter
PROBE_KEY = "perfbot:probe"  # what `/healthz` writes to the queue's file (huey's key-value table)


def build_huey(url: str) -> Huey:
    """Results are not kept: outcomes live in the store, and kept results would pile up forever.
    Jobs travel as JSON (`job_serializer`): nothing read from the queue is unpickled."""
    if url.startswith(("redis://", "rediss://")):
        return RedisHuey("perfbot", url=url, results=False, serializer=JsonSerializer())
    if url.startswith("sqlite:///"):
        return Huey(
            "perfbot",
            storage_class=WalNormalSqliteStorage,
            filename=url.removeprefix("sqlite:///"),
            timeout=WAIT_S,
            results=False,
            serializer=JsonSerializer(),
            factory=GuardedConnection,
        )
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
        self._busy_ms: int | None = None
        super().__init__(name, filename=filename, **kwargs)

    @contextlib.contextmanager
    def db(self, commit=False, close=False):
        """huey's own, but no wait is longer than the caller's deadline (`bot.service.deadline`):
        for the writer lock, for the connection (one, shared by the threads), and SQLite's busy
        timeout. The file is checked once the locks are held, before the connection is touched
        (`sqlite_files`: SIGBUS)."""
        with self._writers.within(deadline.left(self._timeout)) if commit else contextlib.nullcontext():
            if not self.lock.acquire(timeout=deadline.left(self._timeout)):
                raise FileLocked(f"{os.path.basename(self._file)}: another thread of this process uses it")
            try:
                check_writable(self._file)
                with self._used(self.conn, deadline.left(self._timeout), commit, close) as cursor:
                    yield cursor
            finally:
                self.lock.release()

    @contextlib.contextmanager
    def _used(self, conn, wait_s: float, commit: bool, close: bool):
        wanted = max(1, int(wait_s * 10)) * 100
        if wanted != self._busy_ms:
            conn.execute(f"pragma busy_timeout={wanted}")
            self._busy_ms = wanted
        cursor = conn.cursor()
        try:
            if commit:
                cursor.execute(self.begin_sql)
            yield cursor
        except Exception:
            if commit:
                conn.rollback()
            raise
        else:
            if commit:
                conn.commit()
        finally:
            cursor.close()
            if close:
                conn.close()
                self._conn = None

    def pop_data(self, key):
        """huey's own, but a key that is not there is found so by a read, without the writer
        lock: huey pops every finished task's revoke flag, and perfbot revokes none, so that was a
        write per delivery that the intake's enqueue queued behind. Absent when read is absent
        when popped, so nothing another process writes is lost."""
        if self.peek_data(key) is EmptyData:
            return EmptyData
        return super().pop_data(key)

    def close(self):
        """Only under the checks of `db` (closing the last connection to the file checkpoints it)."""
        if self._conn is None:
            return False
        with self.db(close=True):
            return True

    def _create_connection(self):
        connection = super()._create_connection()
        connection.execute("pragma synchronous=1")
        connection.execute(f"pragma wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
        self._busy_ms = None
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
        self.name = os.path.basename(url.removeprefix("sqlite:///")) if self.embedded else "Redis"
        with self._unavailable():  # the embedded queue creates its tables here
            self.huey = build_huey(url)
        self._retry_delay = retry_delay
        self._task = None

    @property
    def embedded(self) -> bool:
        return not self.url.startswith(("redis://", "rediss://"))

    @contextlib.contextmanager
    def _unavailable(self) -> Iterator[None]:
        """Redis down or restarting, or the queue's file locked, full or read-only: `QueueUnavailable`,
        naming the file (its name only: `/healthz` is public)."""
        try:
            yield
        except (RedisError, sqlite3.Error, OSError, StorageUnavailable) as error:
            problem = f"{type(error).__name__}: {error}"
            raise QueueUnavailable(f"the queue {self.name} is unavailable: {problem}") from error

    def bind(
        self,
        process: Callable[[int], object],
        sweep: Callable[[], object],
        hourly: Callable[[], object] | None = None,
    ) -> None:
        """Register the job functions (they need services that need this queue): each delivery,
        the minutely sweep, and the hourly task (scheduled benchmarks)."""
        self._task = self.huey.task(name=PROCESS_TASK)(_retried_later(process, self._retry_delay))
        self.huey.periodic_task(crontab(minute="*"), name=SWEEP_TASK)(sweep)
        if hourly is not None:
            self.huey.periodic_task(crontab(minute="7"), name=SCHEDULE_TASK)(hourly)

    def enqueue(self, delivery_id: int) -> None:
        if self._task is None:
            raise RuntimeError("HueyQueue.bind() must be called before enqueue()")
        with self._unavailable():
            self._task(delivery_id)

    def pending(self) -> int:
        with self._unavailable():
            return self.huey.pending_count()

    def ping(self) -> None:
        """Redis answers; the SQLite file takes a write (a read would pass while another process
        holds its write lock, and would not write the WAL index `sqlite_files` guards)."""
        storage = self.huey.storage
        with self._unavailable():
            if self.embedded:
                storage.put_data(PROBE_KEY, b"1")
            else:
                storage.conn.ping()

    def consumer(
        self,
        workers: int = 2,
        in_process: bool = False,
        periodic: bool = True,
        stop_timeout_s: float | None = None,
    ) -> Consumer:
        """A consumer on ``workers`` threads; ``periodic``: it also enqueues the periodic tasks when
        they are due, which exactly one consumer of a queue must do (each one that does enqueues
        them again). A graceful stop waits ``stop_timeout_s`` for the running jobs (None: as long
        as they run); its threads are daemons, so a process may then exit with jobs unfinished."""
        cls = InProcessConsumer if in_process else Consumer
        # huey's idle polling backs off to 10 s by default: a review would wait that long on the
        # SQLite queue. Redis dequeues block instead, so the cap only matters for SQLite.
        return cls(
            self.huey,
            workers=workers,
            worker_type="thread",
            periodic=periodic,
            check_worker_health=True,
            scheduler_interval=1,
            initial_delay=0.05,
            max_delay=0.25,
            shutdown_timeout=stop_timeout_s,
        )


def _retried_later(process: Callable[[int], object], delay: float | None) -> Callable[[int], object]:
    @functools.wraps(process)
    def job(delivery_id: int) -> object:
        try:
            return process(delivery_id)
        except RetryLater as retry:
            raise RetryTask(delay=retry.delay_s if delay is None else delay) from None

    return job


class InProcessConsumer(Consumer):
    """A consumer sharing its process with the web server: the server owns the signals."""

    def _set_signal_handlers(self) -> None:
        pass
