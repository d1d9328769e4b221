"""Which merges a change point is attributed to: those that landed between the last point at
the old level and the first at the new one, the riskiest first (where triage would look)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Protocol, TypeVar


class Landed(Protocol):
    @property
    def merged_at(self) -> datetime | None: ...

    @property
    def score(self) -> int | None: ...


M = TypeVar("M", bound=Landed)


def between(merges: Iterable[M], after: datetime, until: datetime) -> list[M]:
    """The merges with ``after < merged_at <= until``, by risk score (highest first), then time."""
    found = [m for m in merges if m.merged_at is not None and after < m.merged_at <= until]
    return sorted(found, key=lambda m: (-(m.score or 0), m.merged_at))
