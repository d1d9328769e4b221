"""Another process holding a SQLite file's locks, as a backup, a `sqlite3` shell inside a
transaction, or a perfbot consumer waiting on either does: until the block ends, or a time limit."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

GITHUB_TIMEOUT_S = 10  # GitHub gives up on a delivery not answered by then

_HOLD = """
import select, sys
{take}
print("locked", flush=True)
told = select.select([sys.stdin], [], [], float(sys.argv[2]))[0]
{let_go}
"""
_SQLITE = _HOLD.format(
    take="import sqlite3\nconnection = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "connection.execute('BEGIN IMMEDIATE')",
    let_go="connection.execute('ROLLBACK')",
)
_WRITER = _HOLD.format(
    take="from bot.adapters.sqlite_files import WriterLock, lock_file_beside\n"
    "lock = WriterLock(lock_file_beside(sys.argv[1]))\nlock.__enter__()",
    let_go="lock.__exit__(None, None, None)",
)


@contextmanager
def write_locked(database: Path, hold_s: float = GITHUB_TIMEOUT_S) -> Iterator[Callable[[], bool]]:
    """Another process holds SQLite's write lock on ``database`` (BEGIN IMMEDIATE) until the
    block ends, ``hold_s`` at most. Yields a function telling whether it still holds it."""
    with _held(_SQLITE, database, hold_s) as still:
        yield still


@contextmanager
def writer_lock_held(database: Path, hold_s: float = GITHUB_TIMEOUT_S) -> Iterator[Callable[[], bool]]:
    """Another process holds perfbot's own writer lock of ``database`` (`WriterLock`), as a
    consumer waiting out someone else's write lock does."""
    with _held(_WRITER, database, hold_s) as still:
        yield still


@contextmanager
def _held(script: str, database: Path, hold_s: float) -> Iterator[Callable[[], bool]]:
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(database), str(hold_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield lambda: holder.poll() is None
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(30)
