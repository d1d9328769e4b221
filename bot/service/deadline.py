"""How long the current call may still wait for storage.

Whoever holds the database or the queue's file (a backup, a `sqlite3` shell inside a transaction,
a consumer waiting on either), the intake must answer GitHub before GitHub gives up (10 s), and
`/healthz` before the load balancer does: they run `within` a few seconds, and every wait of the
adapters inside (a writer lock, SQLite's busy timeout) ends by then, all of them together. A call
outside `within` (a consumer's job) waits as long as the adapter's own limit.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_DEADLINE: ContextVar[float | None] = ContextVar("perfbot_storage_deadline", default=None)


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Every storage wait inside ends within ``seconds`` from now (or the enclosing deadline, if
    that is sooner)."""
    deadline = time.monotonic() + seconds
    enclosing = _DEADLINE.get()
    token = _DEADLINE.set(deadline if enclosing is None else min(enclosing, deadline))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def left(longest_s: float) -> float:
    """Seconds the current call may still wait: ``longest_s`` outside `within`, else what is left
    of its deadline (0 once it has passed), never more than ``longest_s``."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return longest_s
    return max(0.0, min(longest_s, deadline - time.monotonic()))
