"""A quantised metric (whole megabytes, counts, a coarse clock) with one wild reading must still
show a clean step: the noise of a series whose consecutive differences are mostly exactly 0 falls
back to their standard deviation, which one wild reading inflates to more than the step itself."""

from __future__ import annotations

from bot.core.history import changepoints


def test_one_wild_reading_does_not_hide_a_twenty_percent_step_of_a_quantised_series():
    values = [10.0] * 30 + [12.0, 12.0, 12.0, 30.0] + [12.0] * 20  # one reading of 30 after the step
    assert [c.index for c in changepoints.detect(values, "lower")] == [30]
