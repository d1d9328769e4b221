"""A merge's benchmark outcome, from the comparisons that measured it: the pull request's head
against its base, and the merge commit against its parent. The most serious verdict wins
(regression, error, inconclusive, improvement, unchanged), and its largest headline change is the
one shown."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bot.core.judge.stats import VERDICT_ORDER

_ORDER: tuple[str, ...] = VERDICT_ORDER


@dataclass(frozen=True, slots=True)
class Measured:
    verdict: str
    headline_metric: str | None
    headline_change: float | None


def rank(verdict: str) -> int:
    """0 for the most serious verdict; a verdict this version does not know ranks last."""
    return _ORDER.index(verdict) if verdict in _ORDER else len(_ORDER)


def merge_outcome(results: Iterable[Measured]) -> Measured | None:
    """The verdict that speaks for the merge, or None when nothing measured it."""
    best: Measured | None = None
    for result in results:
        if best is None or _weightier(result, best):
            best = result
    return best


def _weightier(a: Measured, b: Measured) -> bool:
    if rank(a.verdict) != rank(b.verdict):
        return rank(a.verdict) < rank(b.verdict)
    return abs(a.headline_change or 0.0) > abs(b.headline_change or 0.0)
