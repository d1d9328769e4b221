"""A token bucket for GitHub's secondary limit on content-creating requests (80 a minute)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class WriteBudget:
    """Allow ``per_minute`` writes a minute, in bursts of up to ``per_minute``; ``take`` waits.

    The bucket is per process and per GitHub identity; with several replicas, give each a share.
    """

    def __init__(
        self,
        per_minute: int = 80,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.rate = per_minute / 60.0
        self.capacity = float(per_minute)
        self._tokens = float(per_minute)
        self._clock, self._sleep = clock, sleep
        self._stamp = clock()
        self._lock = threading.Lock()

    def take(self) -> float:
        """Spend one write, first waiting for the bucket to refill if empty; the seconds waited."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.capacity, self._tokens + (now - self._stamp) * self.rate)
            self._stamp = now
            self._tokens -= 1.0
            wait = -self._tokens / self.rate if self._tokens < 0 else 0.0
        if wait > 0:
            self._sleep(wait)
        return wait
