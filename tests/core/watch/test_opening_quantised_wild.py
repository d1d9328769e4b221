"""A wild reading of a quantised series (whole megabytes, counts) must not widen the span either.

The bound on readings beyond both levels is set in robust deviations of the two-level fit's
residuals; when most residuals are exactly 0 that deviation is 0, and the bound is then not
applied at all, so one throttled reading makes every split within 5 points of the change fit alike.
"""

from __future__ import annotations

from tests.core.watch.test_opening import found_in, span


def test_one_wild_reading_after_a_step_of_a_quantised_series_leaves_the_span_at_the_step():
    values = [10.0] * 12 + [12.0, 12.0, 12.0, 30.0, 12.0, 12.0]  # the step at commit 13, a 30 at 16
    assert [f.span for f in found_in(values)] == [span(12, 13)]
