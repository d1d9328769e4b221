"""The words the core decides with: which way a metric's change goes, and the smallest change that
counts, each said once and used alike by the comparison (`judge.stats`) and the history
(`history.changepoints`)."""

from __future__ import annotations

import pytest

from bot.core import vocabulary
from bot.core.history import changepoints
from bot.core.judge import stats


@pytest.mark.parametrize(
    ("change", "better", "direction"),
    [
        (0.05, "lower", "regression"),
        (-0.05, "lower", "improvement"),
        (0.05, "higher", "improvement"),
        (-0.05, "higher", "regression"),
        (1e-12, "lower", "regression"),
        (-1e-12, "higher", "regression"),
        (0.0, "lower", "improvement"),
        (0.0, "higher", "improvement"),  # no way is worse: none is claimed
    ],
)
def test_a_rise_is_a_regression_of_a_time_and_an_improvement_of_a_throughput(change, better, direction):
    assert vocabulary.direction(change, better) == direction


def test_the_comparison_and_the_history_share_the_smallest_change_that_counts():
    assert vocabulary.MIN_EFFECT == 0.02
    assert stats.DEFAULT_MIN_EFFECT == changepoints.DEFAULT_MIN_EFFECT == vocabulary.MIN_EFFECT


def test_a_change_point_and_a_verdict_name_one_change_alike():
    series = [10.0] * 40 + [11.0] * 40
    for better in ("lower", "higher"):
        [point] = changepoints.detect(series, better)
        judged = stats.judge([10.0, 10.01, 9.99, 10.0, 10.02], [11.0, 11.01, 10.99, 11.0, 11.02], better)
        assert point.direction == judged.verdict == vocabulary.direction(0.1, better)


def test_no_icon_is_both_a_risk_level_and_a_verdict():
    """A maintainer tells a predicted risk from a measured verdict by its icon alone (issue 36: a
    high risk and a regression were both a red circle)."""
    assert set(vocabulary.LEVEL_ICONS) == set(vocabulary.LEVELS)
    assert set(vocabulary.VERDICT_ICONS) == set(vocabulary.VERDICTS_WORST_FIRST)
    levels, verdicts = set(vocabulary.LEVEL_ICONS.values()), set(vocabulary.VERDICT_ICONS.values())
    assert len(levels) == len(vocabulary.LEVELS) and len(verdicts) == len(vocabulary.VERDICTS_WORST_FIRST)
    assert not levels & verdicts, f"shared by a risk level and a verdict: {levels & verdicts}"
