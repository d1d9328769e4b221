"""A SQLite file shared by the threads and processes of `perfbot serve` (web workers, queue
consumers): one writer at a time by `WriterLock`, and checkpoints off the writers' path.

SQLite lets one connection write at a time, and one that finds the file locked sleeps in growing
steps (1, 2, 5, 10 ms, ... up to 100 ms) before it tries again. Meanwhile the writers of another
process, handing the file from one thread to the next, can take it again and again: acknowledging
a delivery waited up to 70 ms behind a consumer that way. Waiting on a lock instead, the kernel
wakes the next writer as soon as the last one is done.

A writer that commits past SQLite's auto-checkpoint threshold also copies the WAL into the
database and syncs it to disk, inside its commit and so inside the lock: one such commit held the
others up for 300 ms. A process that `perfbot serve`'s master keeps running checkpoints every
second instead (`WalCheckpoints`), without waiting for anyone, and writers checkpoint themselves
only past `AUTOCHECKPOINT_PAGES`, which bounds the WAL where nothing else checkpoints it.

SQLite maps the WAL index (the ``-shm`` file) into memory, and the kernel kills a process with
SIGBUS when it writes to a mapped page of a file that became immutable or whose filesystem went
read-only (making a file immutable flushes its pages and write-protects them: the next write to
any of them faults): every connection, readers too, writes there. So every statement and commit
first checks that the WAL index can still be written (`GuardedConnection`, `check_writable`: one
`access` call) and refuses with `ReadOnlyStorage` instead; once it is writable again the same
connections carry on. The database and its WAL are written with write(2), whose errors SQLite
reports as errors (the store's `StorageUnavailable`), so they need no check of their own.

That narrows the danger; it cannot remove it. A file made immutable between the check and
SQLite's write of the index inside the statement or commit that follows (a commit writes its WAL
frames first, then the index: the ``-shm`` file made immutable before the ``-wal`` one, as
``chattr +i`` on both does, falls in that gap) still kills the process running it. That can be a
web worker (gunicorn starts another), a queue consumer (the server starts another, which takes
its deliveries over at once) or the checkpointer (`WalCheckpoints` starts another); never the
master, which opens none of the files once it serves. Nothing acknowledged is lost: a delivery is acknowledged
only once its commit returned.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from pathlib import Path

from bot.service.failures import StorageUnavailable

log = logging.getLogger("perfbot.sqlite")

PR_SET_PDEATHSIG = 1  # Linux's prctl option: the signal a process gets when its parent dies
STOP_TIMEOUT_S = 5.0  # what a stopping master gives the checkpointer before killing it
AUTOCHECKPOINT_PAGES = 10_000  # 40 MB of 4 KiB pages; SQLite's default is 1,000


class WriterLock:
    """A thread lock, then ``flock`` on ``path`` (a file of its own beside the database, never the
    database: closing any descriptor of that file would drop the locks SQLite holds on it).
    ``path`` None (an in-memory database) locks among threads only. Not to be held across a fork:
    the child's copy of the thread lock would stay taken.

    As a context manager it waits as long as it takes; `within` gives up after a while with
    `FileLocked`, for a caller with a deadline (the intake) queued behind a writer that waits on
    someone else (a consumer waiting out a backup's lock)."""

    def __init__(self, path: str | None):
        self.path = path
        self._name = os.path.basename(path) if path else "the database"  # errors reach /healthz: no path
        self._threads = threading.Lock()
        self._fd = -1
        self._fd_pid = 0

    def __enter__(self) -> WriterLock:
        self.acquire(None)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    @contextlib.contextmanager
    def within(self, timeout_s: float) -> Iterator[None]:
        self.acquire(timeout_s)
        try:
            yield
        finally:
            self.release()

    def acquire(self, timeout_s: float | None) -> None:
        """Take the lock, waiting at most ``timeout_s`` (None: as long as it takes)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        if not self._threads.acquire(timeout=-1 if timeout_s is None else max(0.0, timeout_s)):
            raise FileLocked(f"{self._name}: another thread of this process holds or awaits its writer lock")
        if self.path is None:
            return
        try:
            descriptor = self._descriptor(self.path)
            left = None if deadline is None else deadline - time.monotonic()
            taken = _flock(descriptor, left, self._threads)
        except OSError as error:
            self._threads.release()
            problem = error.strerror or type(error).__name__
            raise ReadOnlyStorage(f"the writer lock {self._name} cannot be taken: {problem}") from error
        except BaseException:
            self._threads.release()
            raise
        if not taken:  # the waiter holds the thread lock now, and lets go of both when it gets the file
            raise FileLocked(f"{self._name}: another process holds its writer lock")

    def release(self) -> None:
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


def _flock(descriptor: int, timeout_s: float | None, threads: threading.Lock) -> bool:
    """``flock`` ``descriptor`` exclusively within ``timeout_s`` (None: however long it takes);
    False when that ran out. The kernel has no timed ``flock``: a caller that may give up waits on
    a thread of its own (`_FlockWaiter`), still woken by the kernel as soon as the lock is free."""
    if timeout_s is None:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        return True
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        pass
    return _FlockWaiter(descriptor, threads).wait(timeout_s)


class _FlockWaiter:
    """A thread blocked in ``flock`` for a caller that holds ``threads`` (the process's thread
    lock, which keeps every other thread off the descriptor). If the caller gives up first, the
    waiter takes over that thread lock: when the file lock comes it lets go of both at once."""

    def __init__(self, descriptor: int, threads: threading.Lock):
        self._descriptor, self._threads = descriptor, threads
        self._state = threading.Condition()
        self._done, self._abandoned = False, False
        self._error: OSError | None = None
        threading.Thread(target=self._run, name="perfbot-writer-lock", daemon=True).start()

    def wait(self, timeout_s: float) -> bool:
        with self._state:
            if not self._state.wait_for(lambda: self._done, max(0.0, timeout_s)):
                self._abandoned = True
                return False
        if self._error is not None:  # the caller releases the thread lock
            raise self._error
        return True

    def _run(self) -> None:
        error = None
        try:
            fcntl.flock(self._descriptor, fcntl.LOCK_EX)
        except OSError as failed:
            error = failed
        with self._state:
            if not self._abandoned:
                self._done, self._error = True, error
                self._state.notify_all()
                return
        if error is None:
            fcntl.flock(self._descriptor, fcntl.LOCK_UN)
        self._threads.release()


def lock_file_beside(database: str) -> str:
    return f"{database}.lock"


class FileLocked(StorageUnavailable):
    """A SQLite file's writer lock was not free within the caller's deadline: another writer holds
    it, or waits itself for someone outside perfbot (a backup, a `sqlite3` shell) to let go."""


class ReadOnlyStorage(StorageUnavailable):
    """A SQLite file (or its folder) cannot be written: made immutable or read-only, or on a
    filesystem mounted read-only. Touching its memory-mapped WAL index now could kill the process."""


class GuardedConnection(sqlite3.Connection):
    """A sqlite3 connection (``sqlite3.connect(..., factory=GuardedConnection)``) that calls
    `check_writable` right before each statement it runs and each commit: SQLite writes the mapped
    WAL index only inside those, so a file made immutable can kill the process only if that happens
    between the check and the statement's own run in C, microseconds, rather than anywhere in a
    transaction and the Python around it. Rollback and close are not checked: a rollback of what
    never reached the WAL writes nothing there, and both must let go of SQLite's locks."""

    def __init__(self, database, *args, **kwargs):
        super().__init__(database, *args, **kwargs)
        self.guarded = _file_of(database, bool(kwargs.get("uri")))

    def check(self) -> None:
        if self.guarded is not None:
            check_writable(self.guarded)

    def cursor(self, factory=None):
        return super().cursor(factory or GuardedCursor)

    def execute(self, *args):  # sqlite3 runs these on a cursor of its own, not through cursor()
        self.check()
        return super().execute(*args)

    def executemany(self, *args):
        self.check()
        return super().executemany(*args)

    def executescript(self, *args):
        self.check()
        return super().executescript(*args)

    def commit(self) -> None:
        self.check()
        super().commit()


class GuardedCursor(sqlite3.Cursor):
    """A cursor of a `GuardedConnection`: each statement checked as the connection's are."""

    def execute(self, *args):
        self._check()
        return super().execute(*args)

    def executemany(self, *args):
        self._check()
        return super().executemany(*args)

    def executescript(self, *args):
        self._check()
        return super().executescript(*args)

    def _check(self) -> None:
        connection = self.connection
        if isinstance(connection, GuardedConnection):
            connection.check()


def _file_of(database: object, uri: bool) -> str | None:
    """The file of a database as sqlite3.connect was given it; None in memory."""
    name = os.fsdecode(database) if isinstance(database, (str, bytes, os.PathLike)) else ""
    if uri:
        parsed = urllib.parse.urlsplit(name)
        if parsed.scheme != "file" or dict(urllib.parse.parse_qsl(parsed.query)).get("mode") == "memory":
            return None
        name = urllib.parse.unquote(parsed.path)
    return None if name in ("", ":memory:") else name


def check_writable(database: str) -> None:
    """Raise `ReadOnlyStorage` when the WAL index of ``database`` exists and cannot be written by
    this process (immutable, read-only, or on a filesystem mounted read-only)."""
    index = f"{database}-shm"
    if not os.access(index, os.W_OK) and os.path.lexists(index):
        raise ReadOnlyStorage(
            f"{os.path.basename(database)} cannot be written: its WAL index is read-only, "
            "immutable, or on a read-only filesystem"
        )


class WalCheckpoints:
    """PASSIVE checkpoints of ``paths`` every ``interval_s`` (a passive checkpoint neither waits
    for nor blocks the writers), for a supervising process that writes nothing itself: `perfbot
    serve`'s master. They run in a process of their own (`python -m bot.adapters.sqlite_files`):
    a checkpoint writes the WAL index, and a file made immutable in the middle of one would kill
    with SIGBUS the process running it, which must not be the master. `run_if_due`, called from
    the master's loop, starts that process, and another once it died; it exits with the master."""

    def __init__(self, paths: Sequence[str], interval_s: float = 1.0):
        self.paths, self.interval_s = list(paths), interval_s
        self._next = 0.0
        self._process: subprocess.Popen | None = None

    def run_if_due(self) -> None:
        now = time.monotonic()
        if not self.paths or now < self._next:
            return
        self._next = now + self.interval_s
        if self._process is not None:
            if self._process.poll() is None:
                return
            log.error(
                "the WAL checkpointer exited (%s); starting another",
                _status(self._process.returncode),
                extra={"pid": self._process.pid},
            )
        command = [sys.executable, "-m", __name__, "--every", str(self.interval_s), *self.paths]
        self._process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, preexec_fn=functools.partial(_supervised_by, os.getpid())
        )

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def stop(self) -> None:
        """End the checkpointer and wait for it, so that the master exits after it."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:  # in a checkpoint the filesystem holds: it is only a copy
                self._process.kill()
                self._process.wait()


def _supervised_by(master: int) -> None:
    """In the checkpointer, before it runs: a Ctrl-C at the terminal is for the master, which then
    stops it (SIGTERM, whose default action ends it without a word); were it the checkpointer's
    too, it would print a KeyboardInterrupt traceback and could die before the master knows it is
    stopping, which would start another. The kernel sends SIGTERM when the master dies without
    stopping it (SIGKILL), Linux only; elsewhere it notices within an interval (`checkpoint_every`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != master:  # it died before the prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _status(returncode: int) -> str:
    if returncode >= 0:  # 0 too when gunicorn's reaping took the status first
        return f"exit {returncode}"
    try:
        return f"killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"killed by signal {-returncode}"


def checkpoint_every(paths: Sequence[str], interval_s: float) -> None:
    """Checkpoint ``paths`` every ``interval_s`` until the process that started this one is gone."""
    parent = os.getppid()
    while os.getppid() == parent:
        for path in paths:
            checkpoint(path)
        time.sleep(interval_s)


def checkpoint(path: str) -> None:
    """Copy what ``path``'s WAL holds into the database, as far as its readers allow; a file not
    yet created, or one that cannot be written now, is left alone (opening it would create an empty
    database; touching a read-only one's WAL index could kill the server's master)."""
    try:
        check_writable(path)
    except ReadOnlyStorage:
        return
    try:
        connection = sqlite3.connect(
            f"{Path(path).absolute().as_uri()}?mode=rw", uri=True, factory=GuardedConnection
        )
    except sqlite3.OperationalError:
        return  # not there yet
    try:
        connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
    except ReadOnlyStorage:
        pass  # made read-only since the check above: next time
    except sqlite3.Error as error:  # another checkpoint, or recovery, in progress: next time
        log.debug("checkpoint skipped", extra={"path": path, "error": str(error)})
    finally:
        connection.close()


def main(argv: Sequence[str]) -> int:
    """``--every SECONDS PATH...``: `WalCheckpoints`' process."""
    if len(argv) < 3 or argv[0] != "--every":
        print("usage: python -m bot.adapters.sqlite_files --every SECONDS PATH...", file=sys.stderr)
        return 2
    checkpoint_every(argv[2:], float(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
