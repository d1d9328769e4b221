"""Judging bisection probes against the reference regression, and the bisection report."""

from __future__ import annotations

import pytest

from bot.core.bisect import report as bisect_report
from bot.core.bisect.report import BisectError
from bot.core.judge import stats


def judged(base, head, better="lower"):
    return stats.judge(base, head, better=better, name="verify_ms", unit="ms")


QUIET = [10.0, 10.01, 9.99, 10.02, 9.98]
NOISY = [10.0, 14.0, 7.0, 12.0, 9.0]


def test_a_clear_regression_is_bad_and_no_change_is_ok():
    reference = judged(QUIET, [x * 1.5 for x in QUIET])
    assert bisect_report.judge_probe(judged(QUIET, [x * 1.5 for x in QUIET]), reference)[0] == "bad"
    assert bisect_report.judge_probe(judged(QUIET, list(QUIET)), reference)[0] == "ok"


def test_an_undecided_probe_goes_to_the_nearer_side_on_a_ratio_scale():
    reference = judged(QUIET, [x * 4 for x in QUIET])
    near_bad = judged(NOISY, [x * 2.6 for x in NOISY[::-1]])  # past the geometric midpoint, 2x
    near_good = judged(NOISY, [x * 1.5 for x in NOISY[::-1]])
    assert near_good.verdict == "inconclusive"
    assert bisect_report.judge_probe(near_bad, reference)[0] == "bad"
    outcome, why = bisect_report.judge_probe(near_good, reference)
    assert outcome == "ok" and "nearer the good side" in why


def test_higher_is_better_metrics_regress_downwards():
    reference = judged(QUIET, [x * 0.5 for x in QUIET], better="higher")
    assert reference.verdict == "regression"
    probe = judged(QUIET, [x * 0.55 for x in QUIET], better="higher")
    assert bisect_report.judge_probe(probe, reference)[0] == "bad"


def test_a_probe_that_measured_nothing_is_skipped():
    reference = judged(QUIET, [x * 1.5 for x in QUIET])
    assert bisect_report.judge_probe(None, reference)[0] == "skipped"


def test_a_named_metric_must_exist_and_have_regressed():
    with pytest.raises(BisectError, match=r"not measured by this suite \(it measures: a, b\)"):
        bisect_report.named_metric_regressed(None, "nope", ["a", "b"])
    with pytest.raises(BisectError, match="did not regress"):
        bisect_report.named_metric_regressed(judged(QUIET, list(QUIET)), "verify_ms")
