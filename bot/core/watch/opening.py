"""When a regression on the default branch opens a case, and what a later point does to the cases
a series already has: the watch's decision, made once per new point of each series.

Two things open a case: a merge run whose comparison says regression for a primary metric (the
merge commit against its first parent: the span is that merge), and an **established** change point
of a default-branch series. A change point is established when it

- is found by today's detection (`bot.core.history.changepoints`, the same noise floor as the
  history page) over the series' latest `Rules.window` points,
- has at least `Rules.settle` points after it (the detection needs `min_size` points a side, so a
  change seen with fewer is placed too early: waiting one point more than that puts it where it is),
- and is confirmed by a one-sided rank test (Mann-Whitney) of the points after it against up to
  `Rules.before` points before it, at `Rules.alpha` divided by the number of primary metrics the
  suite watches (Bonferroni: a suite with several primary metrics must not raise several times the
  false cases of a suite with one), because the series is looked at again at every point.

A change point between a commit and its first parent opens a case too: the merge run of that commit
may have been inconclusive on its own, and the case's bisect, which for one commit is its
confirmation, re-measures it (had the run called it a regression, its case has the same span: the
same case).

One change, one case: a known case of the series (any state but superseded) whose span lies within
`NEAR` points of an established change covers it. What the change does to that case:

- a case not yet bisecting whose span is not the change's any more is **moved** (superseded by the
  case of the new span, in one transaction);
- a bisecting case whose range does not hold the change is **widened**: its bisect superseded by
  one over the union of the two ranges;
- otherwise nothing: the case already holds the change.

A change-point case not yet bisecting whose series' latest `Rules.settle` points are back within
noise of the level before it **recovers**: it ends without a bisect (a regression reverted before
its turn came costs nothing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats

from bot.core import vocabulary
from bot.core.history import changepoints

from .cases import (
    BISECTING,
    FAILED,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    OPEN,
    RECOVERED,
    SUPERSEDED,
    Source,
    Span,
    State,
)

NEAR = changepoints.DEFAULT_MIN_SIZE
Values = changepoints.Series
# How much worse than the best split (in noise variances) a split may fit and still be a place the
# change may be at; chi-squared with one degree of freedom passes 6.6 once in a hundred.
PLAUSIBLE = 6.6
# Beyond both levels by this many robust noise deviations, a reading belongs to neither (a throttled
# run): a Gaussian reading goes this far once in about two million.
WILD = 5.0
WIDEN = 2  # points a range is widened by each side after it did not reproduce a change still seen
ELSEWHERE: tuple[State, ...] = (NOT_REPRODUCED, INCONCLUSIVE, RECOVERED, FAILED)


@dataclass(frozen=True)
class Rules:
    """The detection's settings (`docs/watch.md` gives the figures they were chosen on)."""

    window: int = 100  # latest points analysed: older changes were decided when they were new
    settle: int = changepoints.DEFAULT_MIN_SIZE + 1  # points after a change before it can open a case
    before: int = 30  # points before a change that the confirmation compares against
    alpha: float = 0.0002  # one-sided, per series and look, before the split across metrics
    min_effect: float = vocabulary.MIN_EFFECT
    sigmas: float = 2.0  # the levels' medians apart by at least this many noise deviations
    # A merge run's regression opens a case alone at this p-value (two-sided, adjusted over the
    # run's primary metrics, divided over its looks); the run's own level (0.01) opened a false
    # case on 43% of quiet streams of 90 merges, each measured (docs/watch.md).
    merge_alpha: float = vocabulary.WATCH_ALPHA


RULES = Rules()


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
class KnownCase:
    """A stored case of the series, as the decision needs it."""

    key: str
    span: Span
    source: Source
    state: State


@dataclass(frozen=True)
class Open:
    """Open a case of ``found``."""

    found: Found


@dataclass(frozen=True)
class Move:
    """The open case ``key`` no longer stands where the change is: the case of ``found`` takes its
    place."""

    key: str
    found: Found


@dataclass(frozen=True)
class Widen:
    """The bisecting case ``key``'s range does not hold the change: the case of ``found`` (the union
    of the two ranges) takes its place and is bisected."""

    key: str
    found: Found


@dataclass(frozen=True)
class Recover:
    """The open case ``key``'s series is back within noise of its level before the change."""

    key: str


Decision = Open | Move | Widen | Recover


def from_merge_run(
    repo: str,
    suite: str,
    metric: str | None,
    base_sha: str,
    head_sha: str,
    verdict: str,
    change: float | None,
    p_value: float | None = None,
    looks: int = 1,
    *,
    rules: Rules = RULES,
) -> Found | None:
    """The case of a merge (or scheduled) run's comparison of one metric: a regression opens one
    when its p-value (adjusted over the run's primary metrics) is at most `Rules.merge_alpha`
    divided over the run's looks. The run's own level is for one comparison; the watch looks at
    every measured merge, so one run's regression must be that much stronger before it stands for
    the stream (a weaker one is a point of the series, which the change-point test weighs)."""
    if verdict != "regression" or not metric:
        return None
    if p_value is None or not p_value <= rules.merge_alpha / max(1, looks):
        return None
    return Found(Span(repo, suite, metric, base_sha, head_sha), "merge", change)


def established(
    repo: str,
    suite: str,
    metric: str,
    better: str,
    points: Sequence[SeriesPoint],
    *,
    metrics: int = 1,
    rules: Rules = RULES,
) -> list[Found]:
    """The established regressions of a series (oldest point first), each as the span between the
    last point of the old level and the first of the new one (with the neighbours it may be at)."""
    tail = points[-(rules.window + 1) :]
    values = np.asarray([p.value for p in tail], dtype=float)
    alpha = rules.alpha / max(1, metrics)
    # The same change at the same place one look ago (one point fewer after it): a single look
    # that a wild point tipped over the test does not open a case, and the delay is unchanged.
    now, before = len(tail) - min(len(tail), rules.window), max(0, len(tail) - 1 - rules.window)
    earlier = {before + c[0] for c in _confirmed(values[before:-1], better, rules.settle - 1, alpha, rules)}
    found = []
    for index, lo, hi, change in _confirmed(values[now:], better, rules.settle, alpha, rules):
        if now + index not in earlier:
            continue
        first, last = _plausible(values[now:], lo, index, hi)
        good, bad = tail[now + first - 1], tail[now + last]
        if bad.sha == good.sha:
            continue  # one commit measured twice: no commit between them to blame
        found.append(Found(Span(repo, suite, metric, good.sha, bad.sha), "changepoint", change))
    return found


def _confirmed(
    values: Values, better: str, settle: int, alpha: float, rules: Rules
) -> list[tuple[int, int, int, float]]:
    """The regressions of ``values`` with ``settle`` points after them that the rank test
    confirms: each as its index, the bounds of its neighbouring levels, and its relative change."""
    changes = changepoints.detect(values.tolist(), better, min_effect=rules.min_effect)
    bounds = [0, *(c.index for c in changes), len(values)]
    noise = changepoints.noise(values)
    confirmed = []
    for at, change in enumerate(changes, start=1):
        index = change.index
        if change.direction != "regression" or not 0 < index <= len(values) - settle:
            continue
        before = values[max(bounds[at - 1], index - rules.before) : index]
        after = values[index : bounds[at + 1]]
        if len(before) < rules.settle or _p_worse(before, after, better) > alpha:
            continue
        if abs(float(np.median(after) - np.median(before))) < rules.sigmas * noise:
            continue
        confirmed.append((index, bounds[at - 1], bounds[at + 1], change.change))
    return confirmed


def decide(
    found: Sequence[Found],
    known: Sequence[KnownCase],
    points: Sequence[SeriesPoint],
    better: str,
    *,
    metric: str,
    rules: Rules = RULES,
) -> list[Decision]:
    """What the established changes ``found`` of one series (of ``metric``) do to its suite's
    ``known`` cases; only a case of ``metric`` can recover by what this series shows."""
    where = {p.sha: index for index, p in enumerate(points)}  # a commit measured twice: its last point
    placed = [
        (case, span)
        for case in known
        if case.state != SUPERSEDED and (span := _range(case.span, where)) is not None
    ]
    decisions: list[Decision] = []
    taken: set[str] = set()
    for change in found:
        at = where[change.span.bad]
        near = [(case, span) for case, span in placed if _covers(case, span, at)]
        if not near:
            decisions.append(Open(change))
            continue
        case, (good, bad) = min(near, key=lambda pair: (_distance(pair[1], at), pair[0].key))
        if case.state == NOT_REPRODUCED and (good, bad) == (where[change.span.good], at):
            # Re-measured, its range did not reproduce, yet the series still steps exactly there: a
            # point beside it was a wild one and the change is a neighbour's. Once: `WIDEN` points
            # more each side (the wider case's range then holds the change).
            lo, hi = max(0, good - WIDEN), min(len(points) - 1, bad + WIDEN)
            wide = Span(*change.span.series(), points[lo].sha, points[hi].sha)
            if not any(_range(c.span, where) == (lo, hi) for c in known):
                decisions.append(Open(Found(wide, "changepoint", change.change)))
            continue
        if case.key in taken or (case.span.good, case.span.bad) == (change.span.good, change.span.bad):
            continue
        if case.state in OPEN and case.source == "changepoint" and case.span.metric == change.span.metric:
            taken.add(case.key)
            decisions.append(Move(case.key, change))
        elif case.state == BISECTING and not good < at <= bad:
            # another metric's bisect too: its range is widened, its metric kept
            taken.add(case.key)
            lo, hi = min(good, at - 1), max(bad, at)
            wide = Span(*case.span.series(), points[lo].sha, points[hi].sha)
            decisions.append(Widen(case.key, Found(wide, case.source, change.change)))
    values = np.asarray([p.value for p in points], dtype=float)
    for case, span in placed:
        if case.state not in OPEN or case.key in taken or case.source != "changepoint":
            continue
        if case.span.metric == metric and _recovered(values, span[0], rules, better):
            decisions.append(Recover(case.key))
    return decisions


def _covers(case: KnownCase, span: tuple[int, int], at: int) -> bool:
    """Whether a known case already stands for a change first seen at point ``at``: one within
    `NEAR` points of it; but a bisect that re-measured its range and found no change there, or a
    case whose series came back, says nothing of a change beside its range, only inside it."""
    if case.state in ELSEWHERE:
        return span[0] < at <= span[1]
    return _near(span, at)


def _p_worse(before: Values, after: Values, better: str) -> float:
    """One-sided p-value that ``after`` is worse than ``before`` (rank test: heavy tails and a
    single wild point do not decide it)."""
    if len(before) < 2 or len(after) < 2:
        return 1.0
    worse: Literal["greater", "less"] = "greater" if better == "lower" else "less"
    # exact for the sizes the watch sees: scipy's automatic choice falls back to the normal
    # approximation at the first tie, which for 7 points against 6 is three times too timid
    method: Literal["exact", "asymptotic"] = "exact" if len(after) * len(before) <= 2_500 else "asymptotic"
    result = stats.mannwhitneyu(after, before, alternative=worse, method=method)
    return float(result.pvalue)


def _plausible(values: Values, lo: int, index: int, hi: int) -> tuple[int, int]:
    """The first and last places the change may be at: every split within `NEAR` points of
    ``index`` whose two-level least-squares fit of ``values[lo:hi]`` is not worse than the best by
    more than `PLAUSIBLE` noise variances (a profile-likelihood set). With noise of the size of the
    step, the best split can miss the commit by a point; the span then holds its neighbours too,
    which costs the bisect a probe instead of naming the wrong range."""
    segment = _within_levels(values[lo:hi], index - lo)
    splits = range(max(lo + 2, index - NEAR), min(hi - 2, index + NEAR) + 1)
    errors = {k: _sse(segment[: k - lo]) + _sse(segment[k - lo :]) for k in splits}
    if index not in errors:
        return index, index
    best = errors[index]
    noise = best / max(1, len(segment) - 2)
    if noise <= 0:
        return index, index
    plausible = [k for k, error in errors.items() if (error - best) / noise <= PLAUSIBLE]
    return min(plausible), max(plausible)


def _within_levels(segment: Values, cut: int) -> Values:
    """``segment`` with each reading that belongs to neither level (beyond both, by more than
    `WILD` robust noise deviations of the fit split at ``cut``) brought back to that bound. One
    throttled run far above both levels would otherwise dominate every split's squared error and
    make them all fit alike; a reading between the levels (which may belong to either) is kept."""
    before, after = segment[:cut], segment[cut:]
    levels = float(np.median(before)), float(np.median(after))
    residuals = np.concatenate((before - levels[0], after - levels[1]))
    # 0 for a quantised series (most residuals exactly 0): then beyond the levels is wild already
    sigma = 1.4826 * float(np.median(np.abs(residuals)))
    return np.clip(segment, min(levels) - WILD * sigma, max(levels) + WILD * sigma)


def _sse(values: Values) -> float:
    return float(np.sum((values - values.mean()) ** 2))


def _recovered(values: Values, good: int, rules: Rules, better: str) -> bool:
    """Whether the latest `settle` points (after the case's good point) are back at the level
    before it: within the noise floor of its median, and not worse by the confirmation's test."""
    latest = values[-rules.settle :]
    if good + 1 > len(values) - rules.settle:
        return False
    before = values[max(0, good + 1 - rules.before) : good + 1]
    if len(before) < 2:
        return False
    level = float(np.median(before))
    if level == 0 or abs(float(np.median(latest)) / level - 1) >= rules.min_effect:
        return False
    return _p_worse(before, latest, better) > rules.alpha


def _range(span: Span, where: dict[str, int]) -> tuple[int, int] | None:
    """A span as the indexes of its good and bad points in the series (None: not both in it)."""
    if span.good not in where or span.bad not in where:
        return None
    good, bad = where[span.good], where[span.bad]
    return (good, bad) if good < bad else None


def _distance(span: tuple[int, int], at: int) -> int:
    good, bad = span
    return 0 if good < at <= bad else min(abs(at - bad), abs(at - good - 1))


def _near(span: tuple[int, int], at: int) -> bool:
    return _distance(span, at) <= NEAR
