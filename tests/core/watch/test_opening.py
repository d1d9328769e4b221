"""What opens a regression case, and what a later point does to the cases a series has."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.watch import cases as states
from bot.core.watch import opening
from bot.core.watch.cases import Span
from bot.core.watch.opening import Found, KnownCase, Move, Open, Recover, Rules, SeriesPoint, Widen


def sha(n: int) -> str:
    return f"{n:040x}"


def chain(values, gaps=()):
    """Points of commits 1..n; each measured against its parent, except at ``gaps`` (where commits
    were not measured: the point's base is not the previous point)."""
    return [SeriesPoint(sha(i + 1), sha(i + 1000) if i in gaps else sha(i), v) for i, v in enumerate(values)]


def daily(values):
    """One point a day, several commits apart: every point's base is not the previous point."""
    return chain(values, gaps=set(range(len(values))))


QUIET = [10.0, 10.1, 9.9, 10.0, 10.05, 9.95, 10.0, 10.02, 9.98, 10.03, 9.97, 10.0]
NEW = [12.0, 12.1, 11.9, 12.0, 12.05, 11.95, 12.02, 11.98]


def span(good: int, bad: int) -> Span:
    return Span("o/r", "s", "m", sha(good), sha(bad))


def found_in(values, **kw):
    return opening.established("o/r", "s", "m", "lower", daily(values), **kw)


def test_a_merge_run_regression_opens_a_case_of_that_merge():
    found = opening.from_merge_run(
        "o/r", "verify-step", "verify_ms", sha(1), sha(2), "regression", 0.12, 1e-6
    )
    assert found == Found(Span("o/r", "verify-step", "verify_ms", sha(1), sha(2)), "merge", 0.12)
    for verdict in ("unchanged", "improvement", "inconclusive", "error"):
        assert opening.from_merge_run("o/r", "s", "m", sha(1), sha(2), verdict, 0.1, 1e-6) is None
    assert opening.from_merge_run("o/r", "s", None, sha(1), sha(2), "regression", 0.1, 1e-6) is None


def test_a_merge_run_regression_opens_a_case_only_at_the_watch_s_level_divided_over_its_looks():
    # The run's own level (0.01) opened a false case on 43% of quiet 90-merge streams when every
    # merge was measured (benchmarks/bench_watch.py --mode runs): one run is one look of many.
    level = Rules().merge_alpha
    assert level <= 1e-4

    def opens(p, looks=1, rules=opening.RULES):
        found = opening.from_merge_run(
            "o/r", "s", "m", sha(1), sha(2), "regression", 0.1, p, looks, rules=rules
        )
        return found is not None

    assert opens(level) and opens(level / 2)
    assert not opens(level * 1.01) and not opens(0.009) and not opens(None)
    assert opens(level / 3, looks=3) and not opens(level / 2, looks=3)
    assert not opens(float("nan")) and opens(level, looks=0)
    assert opens(0.005, rules=Rules(merge_alpha=0.01))


def test_a_step_opens_nothing_until_six_points_of_the_new_level_then_the_exact_span():
    # The old rule opened a case at the 3rd, 4th and 5th new points, each a span too early: the
    # detection needs five points a side, so a step seen with fewer is placed early.
    for seen in range(1, 6):
        assert found_in(QUIET + NEW[:seen]) == [], seen
    found = found_in(QUIET + NEW[:6])
    assert [f.span for f in found] == [span(len(QUIET), len(QUIET) + 1)]
    assert found[0].source == "changepoint" and abs(found[0].change - 0.2) < 0.02


def test_a_step_between_a_commit_and_its_parent_opens_a_case_too_and_an_improvement_none():
    # Every merge measured, the slow merge's own run inconclusive: the series' one-commit span is
    # re-measured by a case, not left to that run.
    values = QUIET + NEW
    found = opening.established("o/r", "s", "m", "lower", chain(values))
    assert [f.span for f in found] == [span(len(QUIET), len(QUIET) + 1)]
    assert opening.established("o/r", "s", "m", "higher", chain(values)) == []


def test_one_commit_measured_twice_is_no_span():
    points = daily(QUIET + NEW)
    points[len(QUIET)] = SeriesPoint(points[len(QUIET) - 1].sha, sha(0), NEW[0])
    assert opening.established("o/r", "s", "m", "lower", points) == []


def test_the_confirmation_is_split_across_the_suites_primary_metrics():
    # Seven points before, six after, fully apart: a one-sided rank test gives p = 1/1716 now and
    # 1/792 one look ago (five after), when the change must have been confirmed too.
    values = [10.0, 10.1, 9.9, 10.05, 9.95, 10.02, 9.98, 12.0, 12.1, 11.9, 12.05, 11.95, 12.02]
    loose = Rules(alpha=0.0015)
    assert len(found_in(values, rules=loose)) == 1
    assert found_in(values, rules=loose, metrics=2) == []  # 0.00075 each: not one look ago
    assert found_in(values) == []  # the default 0.0002: not with so few points before


def test_a_change_confirmed_only_now_and_not_one_look_ago_waits_one_point():
    # Six points before, fully apart from those after: p = 1/924 with six after, 1/462 one look
    # ago with five; at 0.0015 only the latest look confirms it, so it waits for the next point.
    values = [10.0, 10.1, 9.9, 10.05, 9.95, 10.02, 12.0, 12.1, 11.9, 12.05, 11.95, 12.02]
    rules = Rules(alpha=0.0015)
    assert found_in(values, rules=rules) == []
    assert len(found_in([*values, 12.03], rules=rules)) == 1


def test_a_shift_within_twice_the_noise_opens_nothing_however_many_points_confirm_it():
    rng = np.random.default_rng(3)
    noisy = 10 * (1 + rng.normal(0, 0.02, 40))
    noisy[20:] *= 1.03  # 1.5 noise deviations: the rank test alone, over 20 points, would take it
    assert found_in(noisy.tolist(), rules=Rules(alpha=0.01, sigmas=2.0)) == []


def test_a_change_needs_as_many_points_before_it_as_it_waits_for_after():
    values = [10.0, 10.1, 9.9, 10.0, 10.05, *NEW, *NEW]
    assert found_in(values, rules=Rules(alpha=0.01)) == []


def test_quiet_noisy_series_open_nothing():
    rng = np.random.default_rng(7)
    for _ in range(20):
        values = (10 * (1 + rng.normal(0, 0.02, 60))).tolist()
        assert found_in(values) == []


def test_a_wild_point_next_to_the_change_widens_the_span_to_hold_both_places():
    values = [*QUIET, 10.0, 11.0, *NEW]  # point 14 (of commit 14) sits halfway between the levels
    (found,) = found_in(values)
    assert found.span == span(13, 15)  # the change is at 14 or at 15: the span holds both


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=1, max_value=100), max_size=40), st.sets(st.integers(0, 40)))
def test_any_series_gives_spans_of_its_own_points_good_before_bad(values, gaps):
    points = chain(values, gaps)
    order = [p.sha for p in points]
    for found in opening.established("o/r", "s", "m", "lower", points):
        assert order.index(found.span.good) < order.index(found.span.bad)


# ---------------------------------------------------------------- decide


def case(key, good, bad, state, source="changepoint"):
    return KnownCase(key, span(good, bad), source, state)


POINTS = daily(QUIET + NEW)
STEP = Found(span(12, 13), "changepoint", 0.2)


def decide(known, found=(STEP,), points=POINTS):
    return opening.decide(list(found), list(known), points, "lower", metric="m")


def test_a_new_change_opens_one_case_and_a_known_one_opens_none():
    assert decide([]) == [Open(STEP)]
    for state in (states.DETECTED, states.BISECTING, states.CONFIRMED, states.CANCELLED):
        assert decide([case("k", 12, 13, state)]) == [], state


def test_a_change_near_a_known_case_belongs_to_it():
    # confirmed or cancelled beside it: the same change, not a second bisect
    for state in (states.CONFIRMED, states.CANCELLED, states.UNCONFIRMED):
        assert decide([case("k", 10, 11, state)]) == [], state
    assert decide([case("k", 10, 11, states.DETECTED)]) == [Move("k", STEP)]
    assert decide([case("k", 10, 11, states.DETECTED, source="merge")]) == []


def test_a_bisecting_case_is_widened_when_its_range_misses_the_change_and_kept_when_it_holds_it():
    assert decide([case("k", 9, 14, states.BISECTING)]) == []
    widened = decide([case("k", 9, 11, states.BISECTING)])
    assert widened == [Widen("k", Found(span(9, 13), "changepoint", 0.2))]


def test_a_range_not_reproduced_beside_the_change_does_not_hide_it():
    assert decide([case("k", 13, 14, states.NOT_REPRODUCED)]) == [Open(STEP)]
    assert decide([case("k", 13, 14, states.RECOVERED)]) == [Open(STEP)]


def test_the_same_range_not_reproduced_while_the_step_stays_is_widened_once():
    wide = Found(span(10, 15), "changepoint", 0.2)
    assert decide([case("k", 12, 13, states.NOT_REPRODUCED)]) == [Open(wide)]
    known = [case("k", 12, 13, states.NOT_REPRODUCED), case("w", 10, 15, states.BISECTING)]
    assert decide(known) == []


def test_an_open_case_whose_series_came_back_recovers_and_one_still_stepping_does_not():
    back = daily(QUIET + [12.0, 12.1] + QUIET)
    assert decide([case("k", 12, 13, states.DETECTED)], found=(), points=back) == [Recover("k")]
    assert decide([case("k", 12, 13, states.DETECTED)], found=(), points=POINTS) == []
    assert decide([case("k", 12, 13, states.BISECTING)], found=(), points=back) == []


def test_another_metrics_series_coming_back_recovers_no_case():
    # a quiet p99 series says nothing of the step_ms case beside it in the suite
    back = daily(QUIET + [12.0, 12.1] + QUIET)
    other = KnownCase("k", Span("o/r", "s", "step_ms", sha(12), sha(13)), "changepoint", states.DETECTED)
    assert opening.decide([], [other], back, "lower", metric="p99_ms") == []
