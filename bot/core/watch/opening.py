"""When a regression on the default branch opens a case, and when a later point supersedes one.

Two things open a case: a merge run whose comparison says regression (the merge commit against
its first parent: the span is that merge), and a change point of a default-branch series, found
by today's detection (`bot.core.history.changepoints`, the same noise floor), whose span holds
more than one commit: the last point of the old level and the first of the new one were not
measured one commit apart, so the change is somewhere between them and has to be bisected. A
change point between a commit and its first parent is the merge run's to report.

Only a change point's case moves: a later point can place the change elsewhere (ruptures sees more
of the new level). An open case of a series (not yet bisecting) whose change is no longer found
where it was, while one of the same direction is found within `NEAR` points of it, is superseded
by the case of the new place. A case whose change is simply no longer found stays: the dashboard
shows it, and a maintainer may cancel it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.core import vocabulary
from bot.core.history import changepoints

from .cases import Source, Span

NEAR = changepoints.DEFAULT_MIN_SIZE


@dataclass(frozen=True)
class SeriesPoint:
    """One point of a series as the watch reads it: the commit measured, the base its run was
    measured against (its first parent for a merge or scheduled run), the value."""

    sha: str
    base_sha: str
    value: float


@dataclass(frozen=True)
class Found:
    """A regression that opens (or finds) a case: its span, what found it, and the relative change
    of the metric (after / before - 1) when known."""

    span: Span
    source: Source
    change: float | None = None


@dataclass(frozen=True)
class OpenCase:
    """A stored case that may still be superseded (detected, or out of budget)."""

    key: str
    span: Span
    source: Source


def from_merge_run(
    repo: str,
    suite: str,
    metric: str | None,
    base_sha: str,
    head_sha: str,
    verdict: str,
    change: float | None,
) -> Found | None:
    """The case of a merge (or scheduled) run's comparison: only a regression opens one."""
    if verdict != "regression" or not metric:
        return None
    return Found(Span(repo, suite, metric, base_sha, head_sha), "merge", change)


def from_series(
    repo: str,
    suite: str,
    metric: str,
    better: str,
    points: Sequence[SeriesPoint],
    *,
    min_effect: float = vocabulary.MIN_EFFECT,
) -> list[Found]:
    """The regressions of a series (oldest point first) whose span holds more than one commit."""
    changes = changepoints.detect([p.value for p in points], better, min_effect=min_effect)
    found = []
    for change in changes:
        if change.direction != "regression" or not 0 < change.index < len(points):
            continue
        good, bad = points[change.index - 1], points[change.index]
        if bad.base_sha == good.sha or bad.sha == good.sha:
            continue  # one commit apart: the run of that commit says it
        found.append(Found(Span(repo, suite, metric, good.sha, bad.sha), "changepoint", change.change))
    return found


def superseded(
    open_cases: Sequence[OpenCase], found: Sequence[Found], points: Sequence[SeriesPoint]
) -> list[tuple[OpenCase, Found]]:
    """The open change-point cases of this series that ``found`` moved, each with the change that
    takes its place (the nearest one)."""
    where = {p.sha: index for index, p in enumerate(points)}  # a commit measured twice: its last point
    moved = []
    spans = {f.span for f in found}
    for case in open_cases:
        if case.source != "changepoint" or case.span in spans or case.span.bad not in where:
            continue
        at = where[case.span.bad]
        near = [
            (abs(where[f.span.bad] - at), f)
            for f in found
            if f.source == "changepoint"
            and f.span.series() == case.span.series()
            and f.span.bad in where
            and abs(where[f.span.bad] - at) <= NEAR
        ]
        if near:
            moved.append((case, min(near, key=lambda pair: (pair[0], pair[1].span))[1]))
    return moved
