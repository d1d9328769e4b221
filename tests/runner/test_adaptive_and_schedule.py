"""Rounds run in ABBA order, and adaptive rounds stop when the interim rule is decided."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.runner.adaptive import should_continue
from bot.runner.schedule import pair_order, warmup_order


def test_pairs_alternate_which_side_goes_first():
    order = [side for pair in range(4) for side in pair_order(pair)]
    assert order == ["base", "head", "head", "base", "base", "head", "head", "base"]


def test_warmups_alternate_sides():
    assert warmup_order(2) == ["base", "head", "base", "head"]
    assert warmup_order(0) == []


def test_rounds_continue_until_the_minimum_whatever_the_numbers():
    assert should_continue({"t": ([1.0, 1.0], [9.0, 9.0])}, 1, min_rounds=3, max_rounds=10)


def test_separated_ranges_or_equal_medians_are_decided():
    assert not should_continue({"t": ([1.0, 1.1, 1.2], [2.0, 2.1, 2.2])}, 3, 3, 10)
    assert not should_continue({"t": ([1.0, 1.5, 2.0], [1.0, 1.502, 2.0])}, 3, 3, 10)


def test_overlapping_ranges_with_different_medians_ask_for_more_rounds():
    assert should_continue({"t": ([1.0, 1.5, 2.0], [1.4, 1.8, 2.4])}, 3, 3, 10)


@given(st.dictionaries(st.text(max_size=3), st.tuples(st.lists(st.floats(0, 1e6), max_size=6),
                                                       st.lists(st.floats(0, 1e6), max_size=6))),
       st.integers(1, 20), st.integers(1, 20))
def test_adaptive_rounds_never_exceed_the_maximum(samples, min_rounds, max_rounds):
    max_rounds = max(min_rounds, max_rounds)
    assert not should_continue(samples, max_rounds, min_rounds, max_rounds)
