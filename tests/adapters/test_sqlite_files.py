"""SQLite files shared by processes: one writer at a time across processes (fork included), the
store and the queue written by two processes at once without "database is locked", checkpoints
left to the supervising process; a caller with a deadline (the intake) gives up on a file that
another process holds locked by then, and the files are usable again once it lets go."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bot.adapters.queue import HueyQueue
from bot.adapters.sqlite_files import AUTOCHECKPOINT_PAGES, FileLocked, WalCheckpoints, WriterLock, checkpoint
from bot.adapters.store.sql import SqlStore, sqlite_file
from bot.service import deadline
from bot.service.failures import QueueUnavailable, StorageUnavailable
from tests.support.github_emulator import wait_for
from tests.support.sqlite_locks import write_locked, writer_lock_held


def take_when_told(lock: WriterLock, go: multiprocessing.Event, acquired) -> None:
    assert go.wait(30)
    with lock:
        acquired.value = time.monotonic()


def test_a_forked_child_waits_for_the_lock_its_parent_holds(tmp_path):
    lock = WriterLock(str(tmp_path / "db.lock"))
    with lock:
        pass  # the parent opened its descriptor before the fork, as gunicorn's master may have
    fork = multiprocessing.get_context("fork")
    go, acquired = fork.Event(), fork.Value("d", 0.0)
    child = fork.Process(target=take_when_told, args=(lock, go, acquired))
    child.start()
    with lock:
        go.set()
        time.sleep(0.3)
        released = time.monotonic()
    child.join(30)
    assert child.exitcode == 0 and acquired.value >= released


def test_threads_wait_for_each_other_on_an_in_memory_database():
    lock, inside, overlaps = WriterLock(None), [], []

    def enter() -> None:
        with lock:
            inside.append(1)
            overlaps.append(len(inside))
            time.sleep(0.01)
            inside.pop()

    threads = [threading.Thread(target=enter) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == [1, 1, 1, 1]


def write_deliveries(url: str, queue_url: str, first: int, count: int) -> None:
    """What a web worker and a consumer do to the files they share, as fast as they can."""
    store = SqlStore.connect(url, migrate_schema=False)
    queue = HueyQueue(queue_url)
    queue.bind(lambda _: None, lambda: None)
    for n in range(first, first + count):
        delivery_id = store.deliveries.claim("1", f"guid-{n}", "installation", "created", b"x" * 3000)
        queue.enqueue(delivery_id)
        queue.huey.storage.dequeue()
        store.deliveries.start(delivery_id, 600)
        store.deliveries.finish(delivery_id, "done")


def test_two_processes_write_the_store_and_the_queue_at_once_and_none_is_refused(tmp_path):
    url, queue_url = f"sqlite:///{tmp_path / 'perfbot.db'}", f"sqlite:///{tmp_path / 'perfbot.queue.db'}"
    store = SqlStore.connect(url)
    spawn = multiprocessing.get_context("spawn")
    writers = [spawn.Process(target=write_deliveries, args=(url, queue_url, n * 1000, 300)) for n in (1, 2)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(120)
    assert [writer.exitcode for writer in writers] == [0, 0]  # a "database is locked" would raise
    assert store.deliveries.counts() == {"done": 600}
    assert HueyQueue(queue_url).pending() == 0


def test_connections_leave_the_checkpoints_to_the_supervisor_up_to_a_bound(tmp_path):
    store = SqlStore.connect(f"sqlite:///{tmp_path / 'perfbot.db'}")
    with store.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == AUTOCHECKPOINT_PAGES
    queue = HueyQueue(f"sqlite:///{tmp_path / 'perfbot.queue.db'}")
    assert queue.huey.storage.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == AUTOCHECKPOINT_PAGES


def rows_in_the_database_file_alone(database: Path, copy: Path) -> int:
    """Deliveries in ``database`` as its file holds them, without what is still in its WAL. Copied
    by another process: closing a descriptor of the file here would drop this process's SQLite
    locks on it, and the checkpointer, finding none, would delete the WAL index under them."""
    script = (
        "import shutil, sqlite3, sys\n"
        "shutil.copyfile(sys.argv[1], sys.argv[2])\n"
        "print(sqlite3.connect(sys.argv[2]).execute('SELECT count(*) FROM deliveries').fetchone()[0])"
    )
    counted = subprocess.run(
        [sys.executable, "-c", script, str(database), str(copy)], capture_output=True, text=True, check=True
    )
    return int(counted.stdout)


def test_a_checkpoint_moves_the_wal_into_the_database_file(tmp_path):
    database = tmp_path / "perfbot.db"
    store = SqlStore.connect(f"sqlite:///{database}")
    checkpoint(str(database))  # the schema
    for n in range(5):
        store.deliveries.claim("1", f"g-{n}", "ping", None, b"{}")
    assert rows_in_the_database_file_alone(database, tmp_path / "before.db") == 0
    checkpoint(str(database))
    assert rows_in_the_database_file_alone(database, tmp_path / "after.db") == 5


def test_the_checkpoints_run_in_a_process_of_their_own_started_again_when_it_dies(tmp_path):
    """Not in the master's: a file made immutable mid-checkpoint would SIGBUS whoever runs it."""
    database = tmp_path / "perfbot.db"
    store = SqlStore.connect(f"sqlite:///{database}")
    checkpoint(str(database))  # the schema
    store.deliveries.claim("1", "g-1", "ping", None, b"{}")
    checkpoints = WalCheckpoints([str(database)], interval_s=0.05)
    try:
        checkpoints.run_if_due()
        first = checkpoints.pid
        assert first is not None and first != os.getpid()
        assert wait_for(
            lambda: rows_in_the_database_file_alone(database, tmp_path / "copy.db") == 1, timeout=30
        )
        os.kill(first, signal.SIGBUS)
        assert wait_for(lambda: (checkpoints.run_if_due(), checkpoints.pid)[1] != first, timeout=30)
        store.deliveries.claim("1", "g-2", "ping", None, b"{}")
        assert wait_for(
            lambda: rows_in_the_database_file_alone(database, tmp_path / "copy.db") == 2, timeout=30
        )
    finally:
        checkpoints.stop()
        store.engine.dispose()


def test_a_checkpoint_of_a_file_not_yet_made_makes_none(tmp_path):
    checkpoint(str(tmp_path / "perfbot.queue.db"))
    assert list(tmp_path.iterdir()) == []


def test_the_file_of_a_database_url():
    assert sqlite_file("sqlite:///data/perfbot.db") == "data/perfbot.db"
    assert sqlite_file("sqlite:////var/lib/perfbot/perfbot.db") == "/var/lib/perfbot/perfbot.db"
    assert sqlite_file("sqlite://") is None
    assert sqlite_file("sqlite:///:memory:") is None
    assert sqlite_file("postgresql+psycopg://u:p@db/perfbot") is None


def test_a_call_with_a_deadline_gives_up_on_a_database_another_process_holds_locked(tmp_path):
    store = SqlStore.connect(f"sqlite:///{tmp_path / 'perfbot.db'}")
    try:
        with write_locked(tmp_path / "perfbot.db") as still_locked:
            with (
                deadline.within(0.5),
                pytest.raises(StorageUnavailable, match="perfbot.db is unavailable: .*locked"),
            ):
                store.deliveries.claim("1", "during", "ping", None, b"{}")
            assert still_locked(), "given up while the lock was held, not served once it was let go"
        store.deliveries.claim("1", "after", "ping", None, b"{}")
        assert store.deliveries.counts() == {"pending": 1}
    finally:
        store.engine.dispose()


def test_a_call_with_a_deadline_gives_up_behind_another_processs_writer_and_the_lock_works_after(tmp_path):
    """The other process's writer (a consumer waiting out a backup's lock, say) holds perfbot's own
    writer lock: the intake must not queue behind it past its deadline."""
    store = SqlStore.connect(f"sqlite:///{tmp_path / 'perfbot.db'}")
    try:
        with writer_lock_held(tmp_path / "perfbot.db") as still_locked:
            with deadline.within(0.5), pytest.raises(FileLocked, match="^perfbot.db.lock: another process"):
                store.deliveries.claim("1", "during", "ping", None, b"{}")
            with deadline.within(0.1), pytest.raises(FileLocked):  # its waiter still queues for this process
                store.deliveries.claim("1", "during", "ping", None, b"{}")
            assert still_locked(), "given up while the lock was held, not served once it was let go"
        store.deliveries.claim("1", "after", "ping", None, b"{}")  # the waiter let go of both locks
        assert store.deliveries.counts() == {"pending": 1}
    finally:
        store.engine.dispose()


def test_the_queue_gives_up_on_its_locked_file_by_the_deadline_and_its_probe_writes(tmp_path):
    queue = HueyQueue(f"sqlite:///{tmp_path / 'perfbot.queue.db'}")
    queue.bind(lambda _: None, lambda: None)
    with write_locked(tmp_path / "perfbot.queue.db") as still_locked:
        with (
            deadline.within(0.5),
            pytest.raises(QueueUnavailable, match="perfbot.queue.db is unavailable: .*locked"),
        ):
            queue.enqueue(1)
        with deadline.within(0.5), pytest.raises(QueueUnavailable, match="locked"):
            queue.ping()  # a read would pass: the probe writes
        assert queue.pending() == 0, "reads go on meanwhile"
        assert still_locked(), "given up while the lock was held, not served once it was let go"
    queue.enqueue(1)
    queue.ping()
    assert queue.pending() == 1


# ------------------------------------------------------------------ files made immutable mid-use

_MADE_IMMUTABLE_AFTER_ITS_FIRST_CHECK = """
import subprocess, sys
from pathlib import Path
folder = Path(sys.argv[1])

def immutable_after_the_check(module):
    real = module.check_writable
    def check(path):
        real(path)
        module.check_writable = real  # once: the rest of the work is checked as it would be
        subprocess.run(["chattr", "+i", *sorted(str(p) for p in folder.iterdir() if ".db" in p.name)], check=True)
    module.check_writable = check
"""


def survives(tmp_path: Path, chattr, work: str) -> tuple[int, str]:
    """Run ``work`` in a process of its own, whose SQLite files in ``tmp_path`` are made immutable
    right after the first check it makes (the worst moment it can happen); its exit status (-7:
    killed by SIGBUS) and output."""
    chattr("-i", str(tmp_path))  # the fixture skips where chattr is impossible, and clears what is set
    script = _MADE_IMMUTABLE_AFTER_ITS_FIRST_CHECK + work
    try:
        ran = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60
        )
    finally:
        subprocess.run(["chattr", "-i", *map(str, tmp_path.iterdir())], capture_output=True)
    return ran.returncode, ran.stdout + ran.stderr


def test_a_file_made_immutable_during_a_transaction_is_refused_at_its_next_statement_not_written(
    tmp_path, chattr
):
    returncode, output = survives(
        tmp_path,
        chattr,
        """
from bot.adapters.store import database
from bot.adapters.store.sql import SqlStore
from bot.service.failures import StorageUnavailable
store = SqlStore.connect(f"sqlite:///{folder / 'perfbot.db'}")
store.deliveries.claim("1", "before", "ping", None, b"{}")
immutable_after_the_check(database)
try:
    store.deliveries.claim("1", "during", "ping", None, b"{}")
except StorageUnavailable as refused:
    print("refused:", refused, flush=True)
import os
os._exit(0)  # not the interpreter's exit: closing the last connection to a file checkpoints it (documented)
""",
    )
    assert returncode == 0, f"exit {returncode} (-7: SIGBUS)\n{output}"
    assert "refused: perfbot.db cannot be written" in output


def test_the_masters_checkpoints_never_touch_a_file_that_becomes_immutable(tmp_path, chattr):
    returncode, output = survives(
        tmp_path,
        chattr,
        """
import time
from bot.adapters import sqlite_files
from bot.adapters.store.sql import SqlStore
store = SqlStore.connect(f"sqlite:///{folder / 'perfbot.db'}")
store.deliveries.claim("1", "before", "ping", None, b"{}")
immutable_after_the_check(sqlite_files)
checkpoints = sqlite_files.WalCheckpoints([str(folder / "perfbot.db")], interval_s=0.05)
checkpoints.run_if_due()
time.sleep(0.5)
if hasattr(checkpoints, "stop"):
    checkpoints.stop()
print("the master is up")
""",
    )
    assert returncode == 0, f"exit {returncode} (-7: SIGBUS)\n{output}"
    assert "the master is up" in output
