"""A bisection judges each run at the significance level split over the looks its runs may take,
wherever the most rounds come from: the command line or the config's ``bench.max_rounds``."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.core.config.schema import load as load_config
from bot.core.judge import results, stats
from bot.runner import bench
from bot.runner.bisect import BisectOptions, _Runner
from bot.runner.options import MeasureOptions


def alpha_of(config_text: str, measure: MeasureOptions) -> float:
    config = load_config(config_text)
    options = BisectOptions(good="a", bad="b", suite="s", out=Path("unused"), measure=measure)
    return _Runner(options, config, None, None, "a", None).alpha()  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("config", "measure", "rounds", "most"),
    [
        ("version: 1\nbench: {rounds: 3, max_rounds: 6}\n", MeasureOptions(), 3, 6),  # the config's
        ("version: 1\nbench: {rounds: 3}\n", MeasureOptions(max_rounds=8), 3, 8),
        ("version: 1\nbench: {rounds: 3, max_rounds: 6}\n", MeasureOptions(max_rounds=4), 3, 4),
        ("version: 1\nbench: {rounds: 3}\n", MeasureOptions(), 3, 3),
        ("version: 1\nbench: {rounds: 5, max_rounds: 2}\n", MeasureOptions(), 5, 5),
    ],
)
def test_the_level_is_split_over_the_looks_the_runs_may_take(config, measure, rounds, most):
    """The config's ``bench.max_rounds`` makes every run of the bisection adaptive (`bench.plan`),
    yet the level counted one look only when the command line gave no ``--max-rounds``: each
    peek of the extra rounds could raise a false alarm at the full level."""
    assert bench.round_limits(measure, load_config(config).bench) == (rounds, most)
    expected = stats.alpha_per_look(stats.DEFAULT_ALPHA, results.looks(rounds, most))
    assert alpha_of(config, measure) == pytest.approx(expected)
