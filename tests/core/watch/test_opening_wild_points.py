"""A single wild reading must not widen the span an established change opens.

docs/watch.md: a point that may belong to either level (a wild one next to the change) widens the
span to hold both places. A reading that belongs to neither level (one throttled run at 2.5 times
the level after a clean step, or one that skipped its work before it) is no such point: measured
in units of the two-level fit's residual variance, which that one reading inflates, every split
within 5 points of the change would pass and the bisect be handed ten points instead of one (each
point of a daily series being several commits). Such a reading is brought back to the levels'
bound before the splits are compared, above and below.
"""

from __future__ import annotations

from tests.core.watch.test_opening import NEW, QUIET, found_in, span


def test_a_single_wild_point_three_points_after_a_clean_step_leaves_the_span_at_the_step():
    values = [*QUIET, 12.0, 12.1, 11.9, 30.0, 11.95, 12.02]  # the step at commit 13, a 30 at 16
    assert [f.span for f in found_in(values)] == [span(12, 13)]


def test_a_single_reading_far_below_both_levels_before_the_step_leaves_the_span_at_it_too():
    # a run that skipped its work reads 3 (point 9, four points before the step): below both levels
    quiet = list(QUIET)
    quiet[8] = 3.0
    assert [f.span for f in found_in([*quiet, 12.0, 12.1, 11.9, 12.05, 11.95, 12.02])] == [span(12, 13)]


def test_a_wild_reading_in_a_new_level_longer_than_the_old_one_leaves_the_span_at_the_step():
    # 14 points after the step (more than the 12 before it), the 4th a throttled run
    after = [*NEW, *NEW][:14]
    after[3] = 30.0
    assert [f.span for f in found_in([*QUIET, *after])] == [span(12, 13)]
