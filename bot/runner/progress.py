"""Progress lines on standard error: round i/N, which side, and an estimate of the time left."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, stream: TextIO | None = None, enabled: bool = True):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.durations: list[float] = []

    def say(self, text: str) -> None:
        if self.enabled:
            print(f"perfbot: {text}", file=self.stream, flush=True)

    def round_started(self, suite: str, label: str, number: int, total: int, side: str, sha: str) -> float:
        self.say(f"{suite}: {label} {number}/{total} ({side} {sha[:10]}){self.eta(total - number + 1)}")
        return time.monotonic()

    def round_finished(self, began: float, ok: bool, error: str | None) -> None:
        seconds = time.monotonic() - began
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
