"""A SQLite file shared by the threads and processes of `perfbot serve` (web workers, queue
consumers): one writer at a time by `WriterLock`, and checkpoints off the writers' path.

SQLite lets one connection write at a time, and one that finds the file locked sleeps in growing
steps (1, 2, 5, 10 ms, ... up to 100 ms) before it tries again. Meanwhile the writers of another
process, handing the file from one thread to the next, can take it again and again: acknowledging
a delivery waited up to 70 ms behind a consumer that way. Waiting on a lock instead, the kernel
wakes the next writer as soon as the last one is done.

A writer that commits past SQLite's auto-checkpoint threshold also copies the WAL into the
database and syncs it to disk, inside its commit and so inside the lock: one such commit held the
others up for 300 ms. `perfbot serve`'s master checkpoints every second instead (`WalCheckpoints`),
without waiting for anyone, and writers checkpoint themselves only past `AUTOCHECKPOINT_PAGES`,
which bounds the WAL where nothing else checkpoints it.

SQLite maps the WAL index (the ``-shm`` file) into memory, and the kernel kills a process with
SIGBUS when it writes to a mapped page of a file that became immutable or whose filesystem went
read-only: every connection, readers too, writes there. So each use of a connection first checks
that the WAL index can still be written (`check_writable`: one `access` call) and refuses with
`ReadOnlyStorage` instead; once it is writable again the same connections carry on. The database
and its WAL are written with write(2), whose errors SQLite reports as errors (the store's
`StorageUnavailable`), so they need no check of their own.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from bot.service.failures import StorageUnavailable

log = logging.getLogger("perfbot.sqlite")

AUTOCHECKPOINT_PAGES = 10_000  # 40 MB of 4 KiB pages; SQLite's default is 1,000


class WriterLock:
    """A context manager: a thread lock, then ``flock`` on ``path`` (a file of its own beside the
    database, never the database: closing any descriptor of that file would drop the locks SQLite
    holds on it). ``path`` None (an in-memory database) locks among threads only. Not to be held
    across a fork: the child's copy of the thread lock would stay taken."""

    def __init__(self, path: str | None):
        self.path = path
        self._threads = threading.Lock()
        self._fd = -1
        self._fd_pid = 0

    def __enter__(self) -> WriterLock:
        self._threads.acquire()
        try:
            if self.path is not None:
                fcntl.flock(self._descriptor(self.path), fcntl.LOCK_EX)
        except OSError as error:
            self._threads.release()
            raise ReadOnlyStorage(f"the writer lock {self.path} cannot be taken: {error}") from error
        except BaseException:
            self._threads.release()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            if self.path is not None:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._threads.release()

    def _descriptor(self, path: str) -> int:
        # flock belongs to the open file: a process forked from one that opened it (gunicorn's
        # workers, from the master) opens its own, or parent and child would both hold the lock.
        if self._fd_pid != os.getpid():
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            self._fd_pid = os.getpid()
        return self._fd


def lock_file_beside(database: str) -> str:
    return f"{database}.lock"


class ReadOnlyStorage(StorageUnavailable):
    """A SQLite file (or its folder) cannot be written: made immutable or read-only, or on a
    filesystem mounted read-only. Touching its memory-mapped WAL index now could kill the process."""


def check_writable(database: str) -> None:
    """Raise `ReadOnlyStorage` when the WAL index of ``database`` exists and cannot be written by
    this process (immutable, read-only, or on a filesystem mounted read-only)."""
    index = f"{database}-shm"
    if not os.access(index, os.W_OK) and os.path.lexists(index):
        raise ReadOnlyStorage(f"{database} cannot be written: its WAL index is read-only, immutable, "
                              "or on a read-only filesystem")


class WalCheckpoints:
    """PASSIVE checkpoints of ``paths``, at most every ``interval_s``, for a supervising process
    that writes nothing itself: a passive checkpoint neither waits for nor blocks the writers."""

    def __init__(self, paths: Sequence[str], interval_s: float = 1.0):
        self.paths, self.interval_s = list(paths), interval_s
        self._next = 0.0

    def run_if_due(self) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self.interval_s
        for path in self.paths:
            checkpoint(path)


def checkpoint(path: str) -> None:
    """Copy what ``path``'s WAL holds into the database, as far as its readers allow; a file not
    yet created, or one that cannot be written now, is left alone (opening it would create an empty
    database; touching a read-only one's WAL index could kill the server's master)."""
    try:
        check_writable(path)
    except ReadOnlyStorage:
        return
    try:
        connection = sqlite3.connect(f"{Path(path).absolute().as_uri()}?mode=rw", uri=True)
    except sqlite3.OperationalError:
        return  # not there yet
    try:
        connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
    except sqlite3.Error as error:  # another checkpoint, or recovery, in progress: next time
        log.debug("checkpoint skipped", extra={"path": path, "error": str(error)})
    finally:
        connection.close()
