"""The daily GPU budget: each risk spends only its share, riskiest first; unlimited is unlimited."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from bot.core.vocabulary import LEVELS
from bot.core.watch import budget

minutes = st.floats(min_value=0, max_value=10_000, allow_nan=False)


def test_a_bisect_may_spend_what_a_medium_merge_run_leaves():
    assert budget.allows("high", spent=190, cost=40, budget=240)
    assert not budget.allows("medium", spent=190, cost=5, budget=240)  # 195 > 0.8 * 240
    assert budget.allows("medium", spent=180, cost=12, budget=240)
    assert not budget.allows("high", spent=239, cost=5, budget=240)
    assert not budget.allows("high", spent=0, cost=1, budget=0)


@given(st.sampled_from(LEVELS), minutes, minutes, st.integers(min_value=0, max_value=100_000))
def test_a_riskier_level_is_allowed_whatever_a_safer_one_is(level, spent, cost, limit):
    riskier = LEVELS[min(len(LEVELS) - 1, LEVELS.index(level) + 1)]
    if budget.allows(level, spent, cost, limit):
        assert budget.allows(riskier, spent, cost, limit)
        assert spent + cost <= limit + 1e-6
    assert budget.allows(level, spent, cost, "unlimited")


def test_the_costs_count_suites_and_runs():
    assert budget.run_cost(("a", "b"), 5) == 10
    assert budget.run_cost((), 5) == 5
    assert budget.bisect_cost(4, 2.5) == 10
    assert budget.bisect_cost(0, 2.5) == 2.5


def test_the_day_is_utc():
    late = datetime(2030, 1, 1, 23, 30, tzinfo=timezone(timedelta(hours=-5)))
    assert budget.day(late) == "2030-01-02"
    assert budget.day(datetime(2030, 1, 1, 0, 0, tzinfo=UTC)) == "2030-01-01"
    assert budget.left(200, 240) == 40 and budget.left(300, 240) == 0
