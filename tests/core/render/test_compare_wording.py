"""Counts in the comparison's words agree with their numbers ("after 1 round", "≈1 more round"),
the outlier rule names the rounds it needs without claiming they ran, and rounds that repeat one
value to the last bit (a deterministic number, a saved file read again) are flagged, not
reported with an interval of zero width as if it were precise."""

from __future__ import annotations

import dataclasses
import json

from bot.core.judge import results, stats
from bot.core.render import compare as render_compare
from tests.core.judge.results_data import document


def judged(metrics):
    loaded = results.load(json.dumps(document(metrics)))
    return loaded, stats.decide(loaded)


def test_one_round_per_side_is_one_round_in_the_headline():
    _, comparison = judged({"step_ms": ("ms", "lower", [10.0], [10.5])})
    line = render_compare.headline(comparison)
    assert "after 1 round per side" in line and "1 rounds" not in line, line


def test_one_more_round_is_singular_in_the_table_and_the_text():
    loaded, comparison = judged({"step_ms": ("ms", "lower", [10.0, 10.2, 9.9], [10.4, 10.9, 10.1])})
    metric = dataclasses.replace(comparison.metrics[0], verdict="inconclusive", extra_rounds=1)
    comparison = dataclasses.replace(comparison, metrics=(metric,))
    markdown = render_compare.compare_markdown(loaded, comparison)
    text = render_compare.compare_text(loaded, comparison)
    assert "(≈1 more round)" in markdown and "more rounds)" not in markdown
    assert "(~1 more round)" in text and "more rounds)" not in text


def test_the_outlier_rule_does_not_say_five_rounds_ran_when_three_did():
    loaded, comparison = judged({"step_ms": ("ms", "lower", [10.0, 10.2, 9.9], [10.4, 10.9, 10.1])})
    markdown = render_compare.compare_markdown(loaded, comparison)
    assert "from 5 rounds per side" not in markdown
    assert (
        "(far outliers, over 5 robust deviations from the pooled median, left out where a side has at least 5 rounds)"
        in markdown
    )


def test_bit_identical_rounds_are_flagged_in_the_report():
    """A command that copies one saved file every round: every round of each side reads the same
    number. Before, the interval had zero width and nothing said why."""
    loaded, comparison = judged(
        {
            "tokens": ("tokens", "higher", [812.0] * 5, [812.0] * 5),
            "step_ms": ("ms", "lower", [10.0, 10.2, 9.9, 10.1, 10.0], [10.4, 10.9, 10.1, 10.3, 10.2]),
        }
    )
    [warning] = [w for w in comparison.warnings if "tokens" in w]
    assert warning == (
        "tokens: every round of both sides gave the same value to the last bit (812 on base, 812 on "
        "head): a number that does not vary (a deterministic count, a saved file read again) is no "
        "timing, and its interval's zero width is not precision"
    )
    assert not any("step_ms" in w for w in comparison.warnings)
    markdown = render_compare.compare_markdown(loaded, comparison)
    assert "> **Warning:** tokens: every round of both sides gave the same value" in markdown


def test_one_side_of_identical_rounds_is_flagged_too():
    _, comparison = judged({"step_ms": ("ms", "lower", [10.0, 10.2, 9.9], [11.0, 11.0, 11.0])})
    assert any(
        w.startswith("step_ms: every round of the head side gave the same value") for w in comparison.warnings
    )
