"""A pull request's risk as it is kept, decided without I/O: the reasons a review listed (the store
keeps them with the review, the dashboard with a merge), and the risk a merge is recorded with: the
review maintainers saw (the published review of the merged head), or a scoring of the merged head
when there was none, or when it was stored before its reasons were kept.

Light on purpose (the store's records import it): the plan that produces these is `plan.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.vocabulary import Level


@dataclass(frozen=True)
class Reason:
    """One rule that raised a pull request's risk, as the review listed it."""

    rule: str
    weight: float
    text: str


@dataclass(frozen=True, kw_only=True)
class Risk:
    """A pull request's risk as the dashboard keeps it; None: unknown (never reviewed, and its
    diff could not be read)."""

    score: int | None = None
    level: Level | None = None
    reasons: tuple[Reason, ...] = ()  # heaviest first


@dataclass(frozen=True, kw_only=True)
class Published:
    """The stored review of the merged head: its risk, and whether it kept what a scoring says
    (its rendered blocks and reasons; a review stored by an older version did not)."""

    risk: Risk
    complete: bool


def scores_merge(published: Published | None) -> bool:
    """Whether the merged head is scored now (its diff read) for the record."""
    return published is None or not published.complete


def merge_risk(published: Published | None, scored: Risk | None) -> Risk:
    """The risk to record: the published review's, with the reasons of ``scored`` (a scoring now)
    when it kept none; ``scored`` when nothing was published; else what is known."""
    if scored is None:
        return published.risk if published is not None else Risk()
    if published is None:
        return scored
    return Risk(score=published.risk.score, level=published.risk.level, reasons=scored.reasons)
