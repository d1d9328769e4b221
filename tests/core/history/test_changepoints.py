"""Change points: planted steps are found where they are, noise and spikes are not news."""

from __future__ import annotations

import numpy as np
import pytest

from bot.core.history import changepoints


def steps(levels: list[tuple[int, float]], noise: float = 0.015, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = np.concatenate([np.full(n, level) for n, level in levels])
    return values * (1 + rng.normal(0, noise, len(values)))


def test_a_step_up_in_a_lower_is_better_metric_is_a_regression_at_its_first_point():
    [found] = changepoints.detect(steps([(120, 19.0), (80, 29.0)]), "lower")
    assert abs(found.index - 120) <= 1
    assert found.direction == "regression"
    assert found.change == pytest.approx(29 / 19 - 1, rel=0.05)
    assert found.before == pytest.approx(19.0, rel=0.01) and found.after == pytest.approx(29.0, rel=0.01)


def test_the_same_step_in_a_higher_is_better_metric_is_an_improvement():
    [found] = changepoints.detect(steps([(120, 19.0), (80, 29.0)]), "higher")
    assert found.direction == "improvement"


def test_a_regression_and_its_fix_are_two_change_points():
    found = changepoints.detect(steps([(300, 100.0), (300, 110.0), (300, 101.0)]), "lower")
    assert [(round(p.index, -1), p.direction) for p in found] == [(300, "regression"), (600, "improvement")]


@pytest.mark.parametrize("seed", range(5))
def test_noise_alone_has_no_change_points(seed):
    rng = np.random.default_rng(seed)
    assert changepoints.detect(100 + rng.normal(0, 2, 2_000)) == []
    assert changepoints.detect(100 + 2 * rng.standard_t(3, 2_000)) == [], "heavy tails are still noise"


def test_a_lone_spike_is_not_a_new_level():
    values = steps([(200, 50.0)])
    values[100] = 500.0
    assert changepoints.detect(values) == []


def test_a_shift_smaller_than_the_minimum_effect_is_dropped():
    values = steps([(500, 100.0), (500, 101.0)], noise=0.001)
    assert len(changepoints.detect(values, min_effect=0.005)) == 1
    assert changepoints.detect(values, min_effect=0.02) == []


def test_a_long_series_is_reduced_to_blocks_yet_each_change_is_placed_exactly():
    values = steps([(3_001, 100.0), (3_999, 110.0), (3_000, 104.0)], noise=0.005)
    found = changepoints.detect(values)
    assert [p.index for p in found] == [3_001, 7_000]


def test_points_that_are_not_numbers_are_skipped_and_indices_stay_those_of_the_input():
    values = list(steps([(50, 10.0), (50, 20.0)]))
    values[10] = float("nan")
    values[60] = float("inf")
    [found] = changepoints.detect(values)
    assert abs(found.index - 50) <= 1


@pytest.mark.parametrize("values", [[], [1.0] * 3, [5.0] * 100])
def test_short_or_flat_series_have_none(values):
    assert changepoints.detect(values) == []
