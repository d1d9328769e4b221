"""Calibration: precision per risk level and rule, flagged and missed regressions."""

from __future__ import annotations

import pytest

from bot.core.risk.calibration import Outcome, calibrate, regressed


@pytest.mark.parametrize(
    "verdict,state,expected",
    [
        ("regression", None, True),
        ("unchanged", None, False),
        ("improvement", None, False),
        ("inconclusive", None, None),
        ("error", None, None),
        (None, None, None),
        ("regression", "false_alarm", False),
        ("unchanged", "confirmed", True),
        (None, "reverted", True),
        (None, "fixed", True),
        ("inconclusive", "acknowledged", None),
    ],
)
def test_triage_settles_an_outcome_before_the_benchmark_does(verdict, state, expected):
    assert regressed(verdict, state) is expected


def test_precision_per_level_and_rule_and_the_regressions_that_were_missed():
    outcomes = [
        Outcome("o/a", "high", ("path.pynccl", "size"), True),
        Outcome("o/a", "high", ("path.pynccl",), True),
        Outcome("o/a", "high", ("path.attention",), False),
        Outcome("o/a", "medium", ("path.attention", "size"), False),
        Outcome("o/a", "low", ("size",), True),
        Outcome("o/a", None, (), False),
    ]
    result = calibrate(outcomes)
    assert (result.merges, result.regressions, result.flagged, result.flagged_regressions) == (6, 3, 4, 2)
    assert result.missed == 1 and result.precision == 0.5 and result.recall == pytest.approx(2 / 3)
    levels = {row.key: (row.merges, row.regressed) for row in result.levels}
    assert levels == {"high": (3, 2), "medium": (1, 0), "low": (1, 1), "none": (0, 0), "unscored": (1, 0)}
    assert [row.key for row in result.levels][:4] == ["high", "medium", "low", "none"]
    rules = {row.key: (row.merges, row.regressed, row.precision) for row in result.rules}
    assert rules["path.pynccl"] == (2, 2, 1.0)
    assert rules["path.attention"] == (2, 0, 0.0)
    assert rules["size"] == (3, 2, pytest.approx(2 / 3))
    assert result.to_dict()["rules"][0]["share_of_regressions"] is not None


def test_no_outcomes_give_empty_figures_not_errors():
    result = calibrate([])
    assert (result.precision, result.recall, result.missed) == (None, None, 0)
    assert all(row.precision is None for row in result.levels)


def test_the_flagged_levels_are_the_vocabulary_s():
    """Calibration counts as flagged what the PR labels and the dashboard flags: one definition."""
    from bot.core import vocabulary
    from bot.core.risk import calibration

    assert calibration.FLAGGED_LEVELS is vocabulary.FLAGGED_LEVELS
