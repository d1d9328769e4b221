"""Rounds run in ABBA order; adaptive rounds go on only while the statistics core is undecided."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.runner.adaptive import MetricSamples, should_continue
from bot.runner.schedule import pair_order, warmup_order

QUIET_BASE = [9.26, 9.25, 9.27, 9.26, 9.26]


def test_pairs_alternate_which_side_goes_first():
    order = [side for pair in range(4) for side in pair_order(pair)]
    assert order == ["base", "head", "head", "base", "base", "head", "head", "base"]


def test_warmups_alternate_sides():
    assert warmup_order(2) == ["base", "head", "base", "head"]
    assert warmup_order(0) == []


def test_rounds_continue_until_the_minimum_whatever_the_numbers():
    assert should_continue({"t": MetricSamples([1.0], [9.0], "lower")}, 1, min_rounds=3, max_rounds=10)


def test_a_clear_change_stops_at_the_minimum():
    clear = MetricSamples(QUIET_BASE, [10.46, 10.35, 10.38, 10.41, 10.44], "lower")
    assert not should_continue({"verify_ms": clear}, 5, min_rounds=5, max_rounds=20)


def test_no_change_on_quiet_rounds_stops_at_the_minimum():
    same = MetricSamples(QUIET_BASE, [9.26, 9.27, 9.25, 9.26, 9.26], "lower")
    assert not should_continue({"verify_ms": same}, 5, min_rounds=5, max_rounds=20)


def test_a_noisy_change_asks_for_more_rounds_while_they_could_decide_it():
    noisy = MetricSamples([9.3, 9.9, 9.1, 10.2, 9.5], [10.0, 10.3, 9.8, 10.6, 10.2], "lower")
    assert should_continue({"verify_ms": noisy}, 5, min_rounds=5, max_rounds=30)


def test_a_metric_that_the_cap_cannot_decide_does_not_keep_the_run_going():
    hopeless = MetricSamples([13.3, 28.1, 21.3, 18.4, 21.1], [23.6, 26.6, 22.7, 25.7, 19.9], "lower")
    assert not should_continue({"verify_eager_ms": hopeless}, 5, min_rounds=5, max_rounds=6)


@settings(max_examples=30, deadline=None)
@given(
    st.dictionaries(
        st.text(max_size=3),
        st.builds(
            MetricSamples,
            st.lists(st.floats(0, 1e6), max_size=6),
            st.lists(st.floats(0, 1e6), max_size=6),
            st.sampled_from(["lower", "higher"]),
        ),
        max_size=3,
    ),
    st.integers(1, 20),
    st.integers(1, 20),
)
def test_adaptive_rounds_never_exceed_the_maximum(samples, min_rounds, max_rounds):
    max_rounds = max(min_rounds, max_rounds)
    assert not should_continue(samples, max_rounds, min_rounds, max_rounds)


def test_an_undecided_diagnostic_does_not_keep_the_run_going():
    decided = MetricSamples(QUIET_BASE, [10.46, 10.35, 10.38, 10.41, 10.44], "lower")
    noisy = MetricSamples([9.3, 9.9, 9.1, 10.2, 9.5], [10.0, 10.3, 9.8, 10.6, 10.2], "lower", primary=False)
    assert not should_continue({"cycle_ms": decided, "allreduce_us": noisy}, 5, min_rounds=5, max_rounds=30)
    assert should_continue({"allreduce_us": noisy}, 5, min_rounds=5, max_rounds=30)  # nothing else decides


def test_a_regression_too_weak_to_stand_for_the_default_branch_goes_on_while_rounds_would_settle_it():
    # The sandbox's slow merge at 3 rounds a side: p = 3e-4, a regression at the run's level but
    # not at the watch's (1e-5 over 4 looks); at 6 rounds it reaches 1e-9. The old rule stopped at
    # 3, and the watch could not open the case.
    weak = MetricSamples([9.3, 9.0, 9.6], [55.0, 38.0, 71.0], "lower")
    assert should_continue({"cycle_ms": weak}, 3, min_rounds=3, max_rounds=6)
    assert not should_continue({"cycle_ms": weak}, 3, min_rounds=3, max_rounds=3)  # fixed length
    assert not should_continue({"cycle_ms": weak}, 3, min_rounds=3, max_rounds=6, watch_level=False)


def test_a_regression_goes_on_only_as_far_as_the_cap_would_bring_it_to_the_watch_s_level():
    # +3.6%, p = 5e-4 at 5 rounds a side: 9 a side would bring it to 1e-5 over the 5 looks of a
    # run of 5 to 9 rounds; a run of 5 to 8 would need 9 too, one more than it may take
    slight = MetricSamples([10.0, 10.1, 9.9, 10.05, 9.95], [10.3, 10.5, 10.2, 10.45, 10.35], "lower")
    assert should_continue({"verify_ms": slight}, 5, min_rounds=5, max_rounds=20)
    assert should_continue({"verify_ms": slight}, 5, min_rounds=5, max_rounds=9)
    assert not should_continue({"verify_ms": slight}, 5, min_rounds=5, max_rounds=8)


def test_the_watch_s_level_is_shared_among_the_looks_and_the_primary_metrics():
    base = [10.0, 10.1, 9.9, 10.05, 9.95]
    strong = MetricSamples(
        base, [v * 1.07 / 1.035 for v in (10.3, 10.5, 10.2, 10.45, 10.35)], "lower"
    )  # p 4e-6
    assert not should_continue({"verify_ms": strong}, 5, min_rounds=5, max_rounds=6)  # 1e-5 over 2 looks
    assert should_continue({"verify_ms": strong}, 5, min_rounds=5, max_rounds=8)  # over 4 looks: not yet
    assert should_continue({"verify_ms": strong, "cycle_ms": strong}, 5, min_rounds=5, max_rounds=6)
