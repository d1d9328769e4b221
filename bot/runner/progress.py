"""Progress on standard error: what a long run is doing (round i/N of a side, the time left), and
how far a count has got.

Plain ``perfbot: ...`` lines by default; with ``rewrite``, one status line that a terminal
overwrites in place and `done` clears (`perfbot triage` on a terminal).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, stream: TextIO | None = None, enabled: bool = True, rewrite: bool = False):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.rewrite = rewrite
        self.durations: list[float] = []
        self._counted_at = 0.0

    def say(self, text: str) -> None:
        if not self.enabled:
            return
        if self.rewrite:
            self.stream.write(f"\r\033[K{text}")
            self.stream.flush()
        else:
            print(f"perfbot: {text}", file=self.stream, flush=True)

    def count(self, what: str, done: int, total: int) -> None:
        """``what done/total``; at most five times a second, and always the last."""
        now = time.monotonic()
        if done == total or now - self._counted_at > 0.2:
            self._counted_at = now
            self.say(f"{what} {done}/{total}")

    def done(self) -> None:
        """Clear the status line (in ``rewrite`` mode; plain lines stay)."""
        if self.rewrite:
            self.say("")

    def round_started(
        self,
        suite: str,
        label: str,
        number: int,
        total: int,
        side: str,
        sha: str,
        remaining: int | None = None,
    ) -> float:
        """``verify-step: round 2/5 of head (22cf1e363a), ETA 40s``: ``number`` of ``total`` rounds
        of that side; the ETA counts ``remaining`` rounds of both sides (this one included)."""
        left = total - number + 1 if remaining is None else remaining
        self.say(f"{suite}: {label} {number}/{total} of {side} ({sha[:10]}){self.eta(left)}")
        return time.monotonic()

    def round_finished(
        self, began: float, ok: bool, error: str | None, counted: bool = True, ended: float | None = None
    ) -> None:
        """``counted``: a round whose time the ETA of the next rounds should learn from; ``ended``:
        when it ended, where that was before now (`time.monotonic`)."""
        seconds = (time.monotonic() if ended is None else ended) - began
        if counted:
            self.durations.append(seconds)
        self.say(f"  ok in {seconds:.1f}s" if ok else f"  FAILED after {seconds:.1f}s: {error}")

    def eta(self, remaining: int) -> str:
        if not self.durations:
            return ""
        seconds = sum(self.durations) / len(self.durations) * remaining
        return f", ETA {format_duration(seconds)}"


def format_duration(seconds: float) -> str:
    minutes, seconds = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"
