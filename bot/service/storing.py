"""Whether this process's intake could store its last delivery (`Storing`): the intake records
each claim's outcome, `/healthz` reads it. One per process, in its `Services`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Storing:
    """Whether this process's intake could store its last delivery: `/healthz` reports a replica
    whose intake just failed to as down even when its own small probe write still fits (a disk
    with room for one row but not for a payload)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._refused_at: float | None = None
        self._stored_at: float | None = None
        self._reason = ""

    def stored(self) -> None:
        with self._lock:
            self._stored_at = self._clock()

    def refused(self, reason: str) -> None:
        with self._lock:
            self._refused_at, self._reason = self._clock(), reason

    def failing(self, within_s: float) -> str | None:
        """Why the last delivery could not be stored, if it was refused within ``within_s`` and
        none was stored since; else None."""
        with self._lock:
            if self._refused_at is None or self._clock() - self._refused_at > within_s:
                return None
            if self._stored_at is not None and self._stored_at >= self._refused_at:
                return None
            return self._reason
