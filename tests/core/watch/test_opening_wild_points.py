"""A single wild point after an established change must not widen the span it opens.

docs/watch.md: a point that may belong to either level (a wild one next to the change) widens the
span to hold both places. A reading that belongs to neither level (one throttled run at 2.5 times
the level, several points after a clean step) is no such point; yet the span's profile-likelihood
set measures the fit in units of the two-level fit's residual variance, which that one reading
inflates, so every split within 5 points of the change passes and the bisect is handed ten points
instead of one (each point of a daily series being several commits). The rank test and the
change-point detection are both robust to such a reading; this bound is not.
"""

from __future__ import annotations

from tests.core.watch.test_opening import QUIET, found_in, span


def test_a_single_wild_point_three_points_after_a_clean_step_leaves_the_span_at_the_step():
    values = [*QUIET, 12.0, 12.1, 11.9, 30.0, 11.95, 12.02]  # the step at commit 13, a 30 at 16
    assert [f.span for f in found_in(values)] == [span(12, 13)]
