"""A merge's benchmark outcome, and the merges a change point is attributed to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.core.history.attribution import between
from bot.core.history.outcome import Measured, merge_outcome, rank


def test_the_most_serious_verdict_speaks_for_the_merge_with_its_largest_change():
    results = [
        Measured("unchanged", "step_ms", 0.001),
        Measured("regression", "step_ms", 0.05),
        Measured("regression", "tok_s", -0.30),
        Measured("improvement", "step_ms", -0.2),
    ]
    assert merge_outcome(results) == Measured("regression", "tok_s", -0.30)


def test_nothing_measured_is_no_outcome_and_unknown_verdicts_rank_last():
    assert merge_outcome([]) is None
    assert rank("regression") == 0 and rank("something-new") > rank("unchanged")
    assert merge_outcome(
        [Measured("something-new", None, None), Measured("unchanged", None, 0.0)]
    ).verdict == ("unchanged")


@dataclass
class M:
    number: int
    merged_at: datetime | None
    score: int | None


def test_the_merges_between_two_points_come_riskiest_first():
    t = datetime(2026, 1, 1, tzinfo=UTC)
    merges = [
        M(1, t, 90),
        M(2, t + timedelta(hours=1), 20),
        M(3, t + timedelta(hours=2), 75),
        M(4, t + timedelta(hours=3), None),
        M(5, None, 99),
        M(6, t + timedelta(hours=5), 99),
    ]
    found = between(merges, t, t + timedelta(hours=3))
    assert [m.number for m in found] == [3, 2, 4], "after the first point, up to and including the second"
