"""Per-metric verdicts and the overall decision, with SciPy as the oracle for the numbers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from bot.core.judge import results, stats
from tests.core.judge.results_data import EAGLE3, FINGERPRINT, document

QUIET_BASE = [100.0, 100.2, 99.9, 100.1, 99.8, 100.0, 100.3, 99.7, 100.1, 99.9]


def shifted(values, factor):
    return [v * factor for v in values]


def test_a_clear_slowdown_of_a_time_is_a_regression_with_the_true_ratio_in_its_interval():
    j = stats.judge(QUIET_BASE, shifted(QUIET_BASE, 1.53), "lower")
    assert j.verdict == "regression"
    assert j.ratio == pytest.approx(1.53)
    assert j.estimate.ci[0] <= 1.53 <= j.estimate.ci[1]


def test_direction_decides_what_a_drop_means():
    assert stats.judge(QUIET_BASE, shifted(QUIET_BASE, 0.7), "higher").verdict == "regression"
    assert stats.judge(QUIET_BASE, shifted(QUIET_BASE, 0.7), "lower").verdict == "improvement"
    assert stats.judge(QUIET_BASE, shifted(QUIET_BASE, 1.3), "higher").verdict == "improvement"


def test_the_same_quiet_numbers_on_both_sides_are_unchanged():
    j = stats.judge(QUIET_BASE, list(reversed(QUIET_BASE)), "lower")
    assert j.verdict == "unchanged"
    assert 0.98 < j.estimate.ci[0] <= j.estimate.ci[1] < 1.02


def test_a_significant_change_smaller_than_the_minimum_effect_is_not_a_regression():
    j = stats.judge(QUIET_BASE, shifted(QUIET_BASE, 1.01), "lower")
    assert j.estimate.p_value < 0.01
    assert j.verdict in ("unchanged", "inconclusive")


def test_a_large_minimum_effect_turns_a_real_change_into_no_claim():
    j = stats.judge(QUIET_BASE, shifted(QUIET_BASE, 1.05), "lower", min_effect=0.10)
    assert j.verdict != "regression"


def test_too_few_rounds_are_inconclusive_and_say_how_many_more():
    j = stats.judge(QUIET_BASE[:2], shifted(QUIET_BASE[:2], 1.5), "lower")
    assert j.verdict == "inconclusive"
    assert j.extra_rounds >= stats.MIN_ROUNDS - 2


def test_noise_without_a_decision_asks_for_more_rounds_and_more_for_a_smaller_change():
    rng = np.random.default_rng(3)
    base = list(rng.normal(100, 8, 6))
    near = stats.judge(base, list(rng.normal(101, 8, 6)), "lower")
    assert near.verdict == "inconclusive" and near.extra_rounds > 0


def test_the_numbers_match_scipy():
    rng = np.random.default_rng(7)
    base, head = rng.lognormal(0, 0.05, 12), rng.lognormal(0.04, 0.05, 12)
    j = stats.judge(list(base), list(head), "lower")
    assert j.base_median == pytest.approx(np.median(base))
    assert j.head_median == pytest.approx(np.median(head))
    assert j.estimate.p_mwu == pytest.approx(scipy_stats.mannwhitneyu(base, head).pvalue)
    assert j.estimate.p_ks == pytest.approx(scipy_stats.ks_2samp(base, head).pvalue)
    welch = scipy_stats.ttest_ind(np.log(base), np.log(head), equal_var=False).pvalue
    assert j.estimate.p_t == pytest.approx(welch)
    # Without per-round spreads the round model is Student's t on the log round values.
    student = scipy_stats.ttest_ind(np.log(head), np.log(base), equal_var=True)
    assert j.estimate.p_value == pytest.approx(student.pvalue)
    assert j.ratio == pytest.approx(np.exp(np.log(head).mean() - np.log(base).mean()))
    interval = student.confidence_interval(0.95)
    assert j.estimate.ci == pytest.approx((np.exp(interval.low), np.exp(interval.high)))
    assert (j.estimate.fit.df, j.estimate.fit.weighted) == (22, False)


def test_the_same_rounds_give_the_same_judgement():
    rng = np.random.default_rng(1)
    base, head = list(rng.normal(10, 1, 8)), list(rng.normal(10.5, 1, 8))
    assert stats.judge(base, head) == stats.judge(base, head)


def test_values_that_are_not_finite_are_left_out():
    dirty = QUIET_BASE + [math.nan, math.inf, -math.inf]
    assert stats.judge(dirty, QUIET_BASE).estimate == stats.judge(QUIET_BASE, QUIET_BASE).estimate


def test_a_far_outlier_round_is_left_out_and_counted():
    j = stats.judge(QUIET_BASE + [400.0], shifted(QUIET_BASE, 1.05) + [105.1], "lower")
    assert j.estimate.outliers == (1, 0)
    assert j.verdict == "regression"


def test_a_real_mode_is_not_mistaken_for_outliers():
    bimodal = QUIET_BASE[:6] + [130.0, 130.2, 129.9, 130.1]
    assert stats.judge(bimodal, bimodal).estimate.outliers == (0, 0)


@pytest.mark.parametrize(
    "base,head,why",
    [
        ([], QUIET_BASE, "no successful measurement on the base side"),
        (QUIET_BASE, [math.nan], "no successful measurement on the head side"),
        ([0.0] * 6, [1.0] * 6, "not a positive number"),
        ([1e308, 1.7e308] * 3, [1.0] * 6, "too large"),
    ],
)
def test_what_cannot_be_judged_is_an_error_with_the_reason(base, head, why):
    j = stats.judge(base, head)
    assert j.verdict == "error" and why in j.reason


floats = st.floats(allow_nan=True, allow_infinity=True, width=64)


@settings(max_examples=300, deadline=None)
@given(
    base=st.lists(floats, max_size=14),
    head=st.lists(floats, max_size=14),
    better=st.sampled_from(["lower", "higher"]),
    min_effect=st.floats(0, 0.5),
)
def test_any_floats_give_a_verdict_and_claims_obey_the_rule(base, head, better, min_effect):
    j = stats.judge(base, head, better, min_effect=min_effect)
    assert j.verdict in ("regression", "improvement", "unchanged", "inconclusive", "error")
    if j.verdict in ("regression", "improvement"):
        assert j.p_value <= stats.DEFAULT_ALPHA and abs(j.change) >= min_effect
        assert j.estimate.rounds >= stats.MIN_ROUNDS
    if j.verdict == "inconclusive":
        assert 1 <= j.extra_rounds <= stats.MAX_EXTRA_ROUNDS
    json.dumps(j.to_dict(), allow_nan=False)


def test_holm_adjusts_like_the_textbook_step_down():
    adjusted = stats.holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])


@given(st.lists(st.floats(0, 1), min_size=1, max_size=12), st.floats(0.001, 0.2))
def test_holm_rejects_exactly_what_the_sequential_procedure_rejects(p_values, alpha):
    adjusted = stats.holm(p_values)
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    rejected = set()
    for rank, index in enumerate(order):
        if p_values[index] * (len(p_values) - rank) > alpha:
            break
        rejected.add(index)
    assert {i for i, p in enumerate(adjusted) if p <= alpha} == rejected
    assert all(a >= p for a, p in zip(adjusted, p_values, strict=True))


def test_three_quiet_rounds_per_side_decide_a_clear_change_and_two_do_not():
    assert stats.MIN_ROUNDS == 3
    assert stats.judge(QUIET_BASE[:3], shifted(QUIET_BASE[:3], 1.05), "lower").verdict == "regression"
    assert stats.judge(QUIET_BASE[:3], QUIET_BASE[3:6], "lower").verdict == "unchanged"
    assert stats.judge(QUIET_BASE[:2], shifted(QUIET_BASE[:2], 1.05), "lower").verdict == "inconclusive"


def test_an_obvious_change_is_called_from_five_quiet_rounds():
    base = [33.2, 33.0, 33.5, 33.1, 33.4]
    assert stats.judge(base, shifted(base, 2.6), "lower").verdict == "regression"


def test_looking_several_times_spends_alpha_per_look():
    assert stats.alpha_per_look(0.01, 4) == pytest.approx(0.0025)
    assert stats.alpha_per_look(0.01, 0) == pytest.approx(0.01)


def decide(doc: dict, **options) -> stats.Comparison:
    return stats.decide(results.load(json.dumps(doc)), **options)


def test_the_eagle3_regression_is_called_with_regressions_listed_first():
    comparison = decide(document(EAGLE3))
    assert comparison.verdict == "regression"
    verdicts = [m.verdict for m in comparison.metrics]
    assert verdicts == sorted(verdicts, key=stats.VERDICT_ORDER.index)
    by_name = {m.name: m for m in comparison.metrics}
    assert by_name["verify_ms"].verdict == "regression"
    assert by_name["accept_length"].verdict == "unchanged"
    assert comparison.speculation is not None and comparison.speculation.stopped_paying
    assert all(m.p_value >= m.estimate.p_value for m in comparison.metrics)


def test_different_environments_withhold_every_claim_but_keep_the_numbers():
    head_fp = json.loads(json.dumps(FINGERPRINT))
    head_fp["torch"]["nccl"] = "2.27.1"
    comparison = decide(document(EAGLE3, head_fingerprint=head_fp))
    assert comparison.environment_differs
    assert comparison.verdict == "inconclusive"
    assert not any(m.verdict in ("regression", "improvement") for m in comparison.metrics)
    assert comparison.extra_rounds is None
    assert comparison.environment[0].key == "torch.nccl"
    assert any("different environments" in w for w in comparison.warnings)
    by_name = {m.name: m for m in comparison.metrics}
    base, head = (np.log(EAGLE3["verify_ms"][position]) for position in (2, 3))
    assert by_name["verify_ms"].ratio == pytest.approx(np.exp(head.mean() - base.mean()))


def test_an_ignored_environment_key_does_not_withhold_the_verdict():
    head_fp = json.loads(json.dumps(FINGERPRINT))
    head_fp["torch"]["version"] = "2.12.0"
    comparison = decide(document(EAGLE3, head_fingerprint=head_fp), ignore_env=["torch.version"])
    assert comparison.verdict == "regression"


def test_a_power_limit_changed_during_the_run_withholds_the_verdict():
    fp = json.loads(json.dumps(FINGERPRINT))
    fp["after"] = {"gpus": [{"power.limit": "500.00"}]}
    comparison = decide(document(EAGLE3, head_fingerprint=fp))
    assert comparison.verdict == "inconclusive"
    assert any("changed during the run" in w for w in comparison.warnings)


def test_no_successful_head_round_is_an_error_verdict_naming_the_failure():
    empty_head = {n: (u, b, base, []) for n, (u, b, base, _) in EAGLE3.items()}
    comparison = decide(document(empty_head, failed={"head": 3}))
    assert comparison.verdict == "error"
    assert any("3 of 3 head rounds failed" in n and "out of memory" in n for n in comparison.notes)


def test_a_run_where_nothing_was_measured_is_an_error():
    doc = document(EAGLE3, failed={"base": 2, "head": 2})
    doc["metrics"] = {}
    doc["rounds"] = [r for r in doc["rounds"] if not r["ok"]]
    doc.update(status="failed", error="suite crashed")
    comparison = decide(doc)
    assert comparison.verdict == "error"
    assert any("suite crashed" in n for n in comparison.notes)


def test_an_adaptive_run_is_judged_at_alpha_split_over_its_looks():
    doc = document(EAGLE3)
    doc["options"] = {"rounds": 6, "max_rounds": 10}
    comparison = decide(doc)
    assert comparison.settings.looks == 5
    assert comparison.settings.alpha == pytest.approx(0.002)
    assert decide(document(EAGLE3)).settings.alpha == stats.DEFAULT_ALPHA


def test_failed_rounds_are_reported_and_left_out():
    comparison = decide(document(EAGLE3, failed={"head": 1}))
    assert comparison.verdict == "regression"
    assert any("1 of 11 head rounds failed" in n for n in comparison.notes)


def test_the_comparison_json_follows_the_contract():
    data = decide(document(EAGLE3)).to_dict()
    assert {"verdict", "metrics", "environment_diff", "notes"} <= data.keys()
    metric = data["metrics"][0]
    assert {
        "name",
        "unit",
        "better",
        "base_median",
        "head_median",
        "ratio",
        "ci",
        "p_value",
        "verdict",
    } <= metric.keys()
    json.dumps(data, allow_nan=False)


def test_a_diagnostic_is_judged_but_never_decides_the_verdict():
    doc = document(
        {
            "cycle_ms": ("ms", "lower", QUIET_BASE, list(reversed(QUIET_BASE))),
            "allreduce_us": ("us", "lower", QUIET_BASE, shifted(QUIET_BASE, 2.0)),
            "verify_eager_ms": ("ms", "lower", [10.0, 14.0, 7.0, 12.0], [9.0, 13.0, 8.0, 15.0]),
        }
    )
    comparison = decide(doc)
    judged = {m.name: m for m in comparison.metrics}
    assert comparison.verdict == "unchanged"
    assert (judged["allreduce_us"].verdict, judged["allreduce_us"].role) == ("regression", "diagnostic")
    assert judged["verify_eager_ms"].verdict == "inconclusive" and comparison.extra_rounds is None
    assert [m.name for m in comparison.deciding] == ["cycle_ms"]
    assert any(n.startswith("allreduce_us is a diagnostic") for n in comparison.notes)


def test_metrics_that_are_fixed_transforms_of_each_other_are_one_hypothesis():
    cycle = [10.0, 10.05, 9.97]
    doc = document(
        {
            "cycle_ms": ("ms", "lower", cycle, shifted(cycle, 1.05)),
            "tok_s": ("tok/s", "higher", [1800 / c for c in cycle], [1800 / (c * 1.05) for c in cycle]),
        }
    )
    comparison = decide(doc)
    judged = {m.name: m for m in comparison.metrics}
    assert judged["cycle_ms"].p_value == judged["tok_s"].p_value == judged["cycle_ms"].estimate.p_value
    assert judged["cycle_ms"].verdict == judged["tok_s"].verdict == "regression"
    other = document(
        {
            "cycle_ms": ("ms", "lower", cycle, shifted(cycle, 1.05)),
            "other_ms": ("ms", "lower", [5.0, 5.1, 4.9], [5.0, 4.9, 5.1]),
        }
    )
    assert {m.name: m for m in decide(other).metrics}["cycle_ms"].p_value == pytest.approx(
        2 * judged["cycle_ms"].estimate.p_value
    )


def test_a_round_whose_calls_scattered_widely_counts_less():
    base, head = [100.0, 100.1, 99.9, 100.0], [105.0, 104.9, 105.1, 112.0]
    even = stats.judge(base, head, base_se=[0.05] * 4, head_se=[0.05] * 4)
    doubtful = stats.judge(base, head, base_se=[0.05] * 4, head_se=[0.05, 0.05, 0.05, 50.0])
    assert doubtful.estimate.fit.weighted
    assert abs(doubtful.change - 0.05) < abs(even.change - 0.05)
    assert doubtful.head_center == pytest.approx(105.0, rel=1e-3)


def test_rounds_are_never_taken_as_quieter_than_their_own_calls():
    base, head = [100.0, 100.0001, 99.9999], [103.0, 103.0001, 102.9999]
    alone = stats.judge(base, head)
    with_calls = stats.judge(base, head, base_se=[1.5] * 3, head_se=[1.5] * 3)
    assert alone.verdict == "regression"
    assert with_calls.verdict == "inconclusive"
    half_width = (with_calls.estimate.ci[1] - with_calls.estimate.ci[0]) / 2
    assert half_width > scipy_stats.t.ppf(0.975, 4) * 0.015 * math.sqrt(2 / 3) * 0.99


def test_unchanged_is_an_equivalence_test_against_the_minimum_effect():
    base = [100.0, 100.4, 99.6, 100.2, 99.8]
    near = stats.judge(base, shifted(base, 1.01), min_effect=0.02)
    assert near.verdict == "unchanged" and near.estimate.ci[0] > 0.98 and near.estimate.ci[1] < 1.02
    assert stats.judge(base, shifted(base, 1.01), min_effect=0.005).verdict == "regression"


def _estimate_with_interval(low: float, high: float, rounds: int = 5) -> stats.Estimate:
    from bot.core.judge import model

    ratio = math.sqrt(low * high)
    fit = model.Fit(math.log(ratio), 0.01, 2 * rounds - 2, 10.0, 10.0 * ratio, False, 0.0)
    return stats.Estimate(rounds, rounds, 10.0, 10.0 * ratio, ratio, (low, high), 0.5, 0.5, fit=fit)


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (0.985, 1.015, "unchanged"),
        (0.995, 1.025, "inconclusive"),  # the upper end leaves the ±2% band
        (0.975, 1.005, "inconclusive"),  # the lower end does
        (0.98, 1.01, "inconclusive"),  # an end on the band's edge is not inside it
        (0.99, 1.02, "inconclusive"),
    ],
)
def test_unchanged_needs_both_ends_of_the_interval_inside_the_band(low, high, verdict):
    judged = stats.classify(
        "cycle_ms", "ms", "lower", _estimate_with_interval(low, high), 0.5, stats.Settings()
    )
    assert judged.verdict == verdict


def test_without_a_model_the_ratio_is_of_the_medians_and_there_is_no_interval():
    found = stats.estimate([10.0], [12.0])  # one round a side: no degree of freedom for the model
    assert found.fit is None and found.ratio == pytest.approx(1.2) and found.ci is None
    assert stats.judge([10.0], [12.0]).verdict == "inconclusive"
    two = stats.estimate([10.0, 10.0], [13.0])
    assert two.fit is not None and two.ratio == pytest.approx(1.3)


def _two_metrics(first: tuple[list[float], list[float]], second: tuple[list[float], list[float]]) -> dict:
    return document({"a_ms": ("ms", "lower", *first), "b_ms": ("ms", "lower", *second)})


# Two primary metrics: a's change is significant on its own (p = 0.0064) but not after Holm over
# two hypotheses (0.0127 > 0.01); its 95% interval (+3.7% … +17.3%) leaves out "no change".
NOT_AFTER_HOLM = ([100.0, 104.0, 97.0, 101.0, 99.0], [110.0, 116.0, 103.0, 117.0, 107.0])
NOISE = ([50.0, 55.0, 45.0, 52.0, 48.0], [51.0, 47.0, 54.0, 49.0, 53.0])


def test_the_interval_shown_is_the_one_the_verdict_used_not_a_looser_95_percent_one():
    comparison = decide(_two_metrics(NOT_AFTER_HOLM, NOISE))
    a = next(m for m in comparison.metrics if m.name == "a_ms")
    assert a.estimate.p_value < 0.01 < a.p_value and a.verdict == "inconclusive"
    assert a.estimate.ci[0] > 1, "the plain 95% interval excludes no change: the contradiction"
    assert a.interval[0] < 1 < a.interval[1]
    assert a.interval_confidence == pytest.approx(1 - 0.01 * a.estimate.p_value / a.p_value)
    assert a.interval_confidence == pytest.approx(0.995)


rounds = st.lists(st.floats(1.0, 1000.0), min_size=3, max_size=8)


@settings(max_examples=60, deadline=None)
@given(rounds, rounds, rounds, rounds)
def test_a_verdicts_interval_excludes_no_change_exactly_when_it_found_a_significant_one(
    a_base, a_head, b_base, b_head
):
    comparison = decide(_two_metrics((a_base, a_head), (b_base, b_head)))
    for m in comparison.metrics:
        if m.interval is None:
            continue
        low, high = m.interval
        if m.verdict == "unchanged":
            assert (m.interval, m.interval_confidence) == (m.estimate.ci, 0.95)
            continue
        assert 1 - comparison.settings.alpha <= m.interval_confidence <= 1 - comparison.settings.alpha / 2
        if math.isclose(m.p_value, comparison.settings.alpha, rel_tol=1e-6):
            continue  # on the boundary, rounding decides either way
        assert (low > 1 or high < 1) == (m.p_value <= comparison.settings.alpha)
        if m.verdict in ("regression", "improvement"):
            assert low > 1 or high < 1
