"""The default branch's history of one metric: its points, its change points, and the merges
each change is attributed to (those that landed between the two points, riskiest first)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bot.core.history import attribution, changepoints

from ..ports.dashboard import Landed, Point, SeriesKey
from ..ports.store import Store

DEFAULT_POINTS = 1_000
MAX_POINTS = 10_000
AROUND = timedelta(days=7)  # the history shown around one merge: a week either side
AROUND_POINTS = 400


@dataclass(frozen=True)
class Change:
    point: changepoints.ChangePoint
    before: Point  # the last point at the old level
    after: Point  # the first point at the new one
    suspects: list[Landed]

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.point.to_dict(),
            "at": self.after.measured_at.isoformat(),
            "sha_before": self.before.sha,
            "sha_after": self.after.sha,
            "suspects": [s.to_dict() for s in self.suspects],
        }


@dataclass(frozen=True)
class History:
    key: SeriesKey
    points: list[Point]
    changes: list[Change]
    merges: list[Landed]  # flagged merges in the window: the chart's markers

    def to_dict(self) -> dict[str, Any]:
        return {
            "series": self.key.to_dict(),
            "points": [
                {"sha": p.sha, "value": p.value, "measured_at": p.measured_at.isoformat()}
                for p in self.points
            ],
            "change_points": [c.to_dict() for c in self.changes],
            "merges": [m.to_dict() for m in self.merges],
        }


def history(
    store: Store,
    key: SeriesKey,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = DEFAULT_POINTS,
) -> History:
    points = store.dashboard.series(key.repo, key.suite, key.metric, since, until, limit)
    if not points:
        return History(key, [], [], [])
    found = _change_points(tuple(p.value for p in points), key.better)
    changes = []
    for cp in found:
        before, after = points[cp.index - 1], points[cp.index]
        landed = store.dashboard.landed(key.repo, before.measured_at, after.measured_at)
        suspects = attribution.between(landed, before.measured_at, after.measured_at)
        changes.append(Change(cp, before, after, suspects))
    markers = store.dashboard.landed(
        key.repo, points[0].measured_at, points[-1].measured_at, flagged_only=True
    )
    return History(key, points, changes, markers)


def around(store: Store, repo: str, at: datetime) -> list[History]:
    """Each series of ``repo`` from a week before ``at`` to a week after."""
    return [
        history(store, key, at - AROUND, at + AROUND, AROUND_POINTS)
        for key in store.dashboard.series_keys(frozenset({repo}))
    ]


@functools.lru_cache(maxsize=64)
def _change_points(values: tuple[float, ...], better: str) -> list[changepoints.ChangePoint]:
    """Change points of a window seen before are not searched again (a page is viewed often,
    its series changes once a run)."""
    return changepoints.detect(values, better)
