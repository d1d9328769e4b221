"""The watch's thresholds at their exact boundaries: one point, one p-value, one noise deviation
either side of each figure docs/watch.md gives (6 points after, 30 before, the latest 100, p at most
0.0002 per primary metric, two noise deviations, the profile-likelihood bound, cases within 5
points, ranges widened by 2 each side), each side asserted."""

from __future__ import annotations

import math

import numpy as np

from bot.core.history import changepoints
from bot.core.watch import cases as states
from bot.core.watch import opening
from bot.core.watch.cases import Span
from bot.core.watch.opening import Found, KnownCase, Move, Open, Recover, Rules, Widen
from tests.core.watch.test_opening import NEW, QUIET, daily, found_in, sha, span

# An old level long enough to give the confirmation all the points before a change it may use;
# every point of it is below every point of NEW (fully apart: the rank test's p-value is then one
# arrangement in all of them, 1 / C(before + after, after)).
OLD = [*QUIET, *QUIET, *QUIET, *QUIET][:40]


def spans(found):
    return [f.span for f in found]


def below(alpha: float) -> float:
    """The largest float smaller than ``alpha``: a p-value of ``alpha`` itself is then above it."""
    return math.nextafter(alpha, 0.0)


# ---------------------------------------------------------------- established


def test_at_the_default_alpha_a_step_with_eleven_points_before_it_waits_and_twelve_open_at_six():
    # One look ago (five points after) the rank test gives 1/C(16,5) = 0.000229 with eleven points
    # before: above 0.0002, so the sixth point opens nothing (the seventh does, at 1/C(17,6));
    # with twelve, 1/C(17,5) = 0.000162 one look ago and the sixth point opens the case.
    assert found_in(OLD[:11] + NEW[:6]) == []
    assert spans(found_in(OLD[:11] + NEW[:7])) == [span(11, 12)]
    assert spans(found_in(OLD[:12] + NEW[:6])) == [span(12, 13)]


def test_a_p_value_equal_to_alpha_confirms_and_only_the_thirty_points_before_count():
    # Forty points of the old level: the confirmation compares with the 30 just before the change,
    # so one look ago (five after) p = 1/C(35,5); at exactly that alpha the change is confirmed
    # (p <= alpha), a hair below it is not (31 points before would give a smaller p and pass).
    values = OLD + NEW[:6]
    alpha = 1 / math.comb(30 + 5, 5)
    assert spans(found_in(values, rules=Rules(alpha=alpha))) == [span(40, 41)]
    assert found_in(values, rules=Rules(alpha=below(alpha))) == []


def test_the_window_is_the_latest_hundred_points():
    # 101 points: the latest 100 hold five points of the old level (fewer than the six a change
    # needs before it: the change is left as decided when it was new), or six (found).
    five_left = OLD[:6] + (NEW * 12)[:95]
    six_left = OLD[:7] + (NEW * 12)[:94]
    assert len(five_left) == len(six_left) == 101
    assert found_in(five_left) == []
    assert spans(found_in(six_left)) == [span(7, 8)]


def test_the_levels_must_be_two_noise_deviations_apart_not_four():
    # 20 points a side, noise 1%, a step of 0.3: the medians about three noise deviations apart
    rng = np.random.default_rng(3)
    values = 10 * (1 + rng.normal(0, 0.01, 40))
    values[20:] += 0.3
    apart = (np.median(values[20:]) - np.median(values[:20])) / changepoints.noise(values)
    assert 2.5 < apart < 3.5
    assert spans(found_in(values.tolist())) == [span(20, 21)]


def test_a_neighbouring_split_within_six_point_six_noise_variances_of_the_best_widens_the_span():
    # Point 14 (commit 14) between the levels (10 and 12) fits the old level better; put on the
    # new one, the two-level fit of the 22 points is worse by 6.8 noise variances at 10.912 (the
    # residual variance, over 20 degrees of freedom): beyond the 6.6 of the 99% set, the change is
    # at commit 15 alone; at 10.916, 6.4 worse: it may be at 14 or 15, the span holds both.
    assert spans(found_in([*QUIET, 10.0, 10.912, *NEW])) == [span(14, 15)]
    assert spans(found_in([*QUIET, 10.0, 10.916, *NEW])) == [span(13, 15)]


def test_a_step_that_falls_part_way_back_and_rises_again_is_spanned_to_its_second_rise():
    # Up at commit 13, part way back for three points, up again at commit 17: the change may be at
    # either rise. The span reaches the second rise, the last split that leaves two points after it.
    (found,) = found_in([*QUIET, 12.0, 10.2, 10.4, 10.6, 12.05, 11.95])
    good, bad = int(found.span.good, 16), int(found.span.bad, 16)
    assert good < 13 and bad == 17


def test_after_an_earlier_improvement_the_span_is_placed_within_the_regressions_own_levels():
    # The series improved at commit 13 (11.5 -> 10) and regressed at 26 or 27 (a point halfway at
    # 26): the span is the one a series with the regression alone gives, moved by 12 points.
    higher = [v + 1.5 for v in QUIET]
    assert spans(found_in([*QUIET, 10.0, 11.0, *NEW])) == [span(13, 15)]
    assert spans(found_in([*higher, *QUIET, 10.0, 11.0, *NEW])) == [span(25, 27)]


def test_the_latest_point_alone_is_no_place_for_the_change():
    # Up at commit 13, four points part way back, up again at the latest point (commit 18): a
    # split leaving one point after it is no level, so the span stays at the first rise.
    assert spans(found_in([*QUIET, 12.0, 10.2, 10.2, 10.2, 10.2, 12.0])) == [span(12, 13)]


def test_two_flat_levels_of_a_quantised_metric_give_the_exact_span():
    # no residual noise at all (a count, whole megabytes): the best split is the only place
    assert spans(found_in([10.0] * 12 + [12.0] * 6)) == [span(12, 13)]


# ---------------------------------------------------------------- decide

POINTS = daily(QUIET + NEW)  # point i is commit i + 1: the step is at point 12, commit 13
STEP = Found(span(12, 13), "changepoint", 0.2)


def case(key, good, bad, state, source="changepoint", metric="m"):
    return KnownCase(key, Span("o/r", "s", metric, sha(good), sha(bad)), source, state)


def decide(known, found=(STEP,), points=POINTS, rules=opening.RULES):
    return opening.decide(list(found), list(known), points, "lower", metric="m", rules=rules)


def test_a_case_five_points_from_the_change_holds_it_and_one_six_points_away_does_not():
    # Before the change: a case ending 5 points before it (commits 3..8) moves to the change;
    # ending 6 before (3..7), a case of its own opens. After it: starting 5 points after (17..21)
    # or 6 (18..22). Ranges of several points, so that the near end is the one measured.
    detected, longer = states.DETECTED, daily(QUIET + NEW + NEW)
    assert decide([case("k", 3, 8, detected)]) == [Move("k", STEP)]
    assert decide([case("k", 3, 7, detected)]) == [Open(STEP)]
    assert decide([case("k", 17, 21, detected)], points=longer) == [Move("k", STEP)]
    assert decide([case("k", 18, 22, detected)], points=longer) == [Open(STEP)]


def test_the_case_whose_range_holds_the_change_wins_over_one_beside_it():
    # A bisect over commits 10..14 holds the change; a detected case starting at the change's
    # commit 13 (its range 13..14 begins after it) is one point away: the bisect holds it, nothing moves.
    known = [case("z", 10, 14, states.BISECTING), case("a", 13, 14, states.DETECTED)]
    assert decide(known) == []


def test_a_bisect_range_ending_at_the_change_holds_it_and_one_starting_there_is_widened():
    assert decide([case("k", 10, 13, states.BISECTING)]) == []
    assert decide([case("k", 13, 15, states.BISECTING)]) == [
        Widen("k", Found(span(12, 15), "changepoint", 0.2))
    ]


def test_another_metrics_bisect_is_widened_with_its_own_metric_and_source():
    other = KnownCase("k", Span("o/r", "s", "p99_ms", sha(14), sha(16)), "merge", states.BISECTING)
    wide = Span("o/r", "s", "p99_ms", sha(12), sha(16))
    assert decide([other]) == [Widen("k", Found(wide, "merge", 0.2))]


def test_a_range_that_did_not_reproduce_holds_a_change_at_its_last_point_but_not_at_its_first():
    for ended in (states.NOT_REPRODUCED, states.RECOVERED, states.FAILED, states.INCONCLUSIVE):
        assert decide([case("k", 11, 13, ended)]) == [], ended  # the range 11..13 holds commit 13
        assert decide([case("k", 13, 15, ended)]) == [Open(STEP)], ended  # 13 is its good commit


def test_a_range_not_reproduced_is_widened_by_two_each_side_but_not_past_the_series_ends():
    first = Found(span(1, 2), "changepoint", 0.2)
    assert decide([case("k", 1, 2, states.NOT_REPRODUCED)], found=(first,)) == [
        Open(Found(span(1, 4), "changepoint", 0.2))
    ]
    last = Found(span(19, 20), "changepoint", 0.2)
    assert decide([case("k", 19, 20, states.NOT_REPRODUCED)], found=(last,)) == [
        Open(Found(span(17, 20), "changepoint", 0.2))
    ]


def test_a_superseded_case_or_one_the_series_cannot_place_holds_nothing():
    assert decide([case("k", 12, 13, states.SUPERSEDED)]) == [Open(STEP)]
    # another metric's case whose good commit this series never measured
    unplaced = KnownCase("k", Span("o/r", "s", "p99_ms", sha(999), sha(13)), "changepoint", states.DETECTED)
    assert decide([unplaced]) == [Open(STEP)]
    reversed_ = case("k", 14, 13, states.DETECTED)  # its good commit measured after its bad one
    assert decide([reversed_]) == [Open(STEP)]
    itself = case("k", 12, 12, states.DETECTED, source="merge")  # a run of a commit against itself
    assert decide([itself]) == [Open(STEP)]


def test_a_case_moves_once_in_a_look_however_many_changes_land_near_it():
    second = Found(span(14, 15), "changepoint", 0.05)
    assert decide([case("k", 10, 11, states.DETECTED)], found=(STEP, second)) == [Move("k", STEP)]


def test_an_open_case_of_another_metric_near_the_change_holds_it_without_moving():
    assert decide([case("k", 10, 11, states.DETECTED, metric="p99_ms")]) == []


# ---------------------------------------------------------------- recovery

BACK = [10.15, 10.16, 10.17, 10.18, 10.19, 10.2]  # 1.5% above the old level, above all its points


def test_a_series_back_within_the_noise_floor_but_worse_by_the_rank_test_has_not_recovered():
    # Six latest points within 2% of the level, but every one above every point of the 12 before
    # the case: p = 1/C(18,6) = 0.000054, worse at 0.0002. Its case does not end by itself.
    points = daily(QUIET + NEW + BACK)
    assert decide([case("k", 12, 13, states.DETECTED)], found=(), points=points) == []
    # at an alpha of that p exactly it is still worse (p <= alpha, as the confirmation reads it);
    # a hair below it, it is back
    p = 1 / math.comb(12 + 6, 6)
    assert decide([case("k", 12, 13, states.DETECTED)], found=(), points=points, rules=Rules(alpha=p)) == []
    loose = Rules(alpha=below(p))
    assert decide([case("k", 12, 13, states.DETECTED)], found=(), points=points, rules=loose) == [
        Recover("k")
    ]


def test_recovery_weighs_the_thirty_points_before_the_case_and_a_p_equal_to_alpha_is_worse():
    points = daily(OLD + NEW + BACK)  # the case's good point is commit 40, with 40 points before it
    known = [case("k", 40, 41, states.DETECTED)]
    alpha = 1 / math.comb(30 + 6, 6)  # the latest six against the 30 points before the case
    assert decide(known, found=(), points=points, rules=Rules(alpha=alpha)) == []
    assert decide(known, found=(), points=points, rules=Rules(alpha=below(alpha))) == [Recover("k")]


def test_recovery_needs_the_latest_six_points_after_the_cases_good_point():
    known = [case("k", 12, 13, states.DETECTED)]
    assert decide(known, found=(), points=daily(QUIET + QUIET[:6])) == [Recover("k")]
    assert decide(known, found=(), points=daily(QUIET + QUIET[:5])) == []


def test_a_case_whose_level_before_was_zero_cannot_recover_by_a_relative_floor():
    # e.g. a count of recompiles: 0 before, 1 since; back to 0 is no relative change to judge
    zeros = [0.0] * 12
    known = [case("k", 12, 13, states.DETECTED)]
    assert decide(known, found=(), points=daily([*zeros, 1.0, 1.0, *zeros[:6]])) == []


def test_only_an_open_change_point_case_recovers():
    back = daily(QUIET + [12.0, 12.1] + QUIET)
    assert decide([case("k", 12, 13, states.OUT_OF_BUDGET)], found=(), points=back) == [Recover("k")]
    assert decide([case("k", 12, 13, states.DETECTED, source="merge")], found=(), points=back) == []
    assert decide([case("k", 12, 13, states.SUPERSEDED)], found=(), points=back) == []


def test_a_case_moved_in_this_look_does_not_also_recover():
    back = daily(QUIET + [12.0, 12.1] + QUIET)
    elsewhere = Found(span(10, 11), "changepoint", 0.2)
    assert decide([case("k", 12, 13, states.DETECTED)], found=(elsewhere,), points=back) == [
        Move("k", elsewhere)
    ]


def test_recovery_needs_two_points_before_the_case_one_is_no_level():
    # the case's good commit is the series' second point (two before it: back) or its first (one)
    back = [10.0, 10.1, 12.0, 12.1, *QUIET[:6]]
    assert decide([case("k", 2, 3, states.DETECTED)], found=(), points=daily(back)) == [Recover("k")]
    assert decide([case("k", 1, 2, states.DETECTED)], found=(), points=daily(back[1:])) == []


def test_the_rank_test_judges_from_two_points_a_side():
    # Fewer than two points on a side is no evidence; two are (p = 1/C(8,2) for two points before
    # the case below six latest ones, 1/C(14,2) for twelve before and two latest): at a loose alpha
    # the series is still worse, so its case does not recover.
    loose = Rules(alpha=0.05)
    two_before = daily([9.9, 9.95, 12.0, 12.1, 10.0, 10.02, 10.03, 10.05, 10.04, 10.01])
    assert decide([case("k", 2, 3, states.DETECTED)], found=(), points=two_before, rules=loose) == []
    two_latest = daily([*QUIET, 12.0, 12.1, 10.15, 10.16])
    short = Rules(alpha=0.05, settle=2)
    assert decide([case("k", 12, 13, states.DETECTED)], found=(), points=two_latest, rules=short) == []
