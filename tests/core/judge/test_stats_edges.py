"""The judgement at its edges: each error path, boundary and constant pinned to what
docs/statistics.md says (the mutants of `make mutation` that the broader tests let pass)."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from bot.core.judge import estimate as estimating
from bot.core.judge import model, multiplicity, stats, verdicts
from bot.core.judge import notes as wording

QUIET = [10.0, 10.01, 9.99, 10.02, 9.98]


def estimate(ratio: float, ci: tuple[float, float], *, p_ks: float = 0.5, rounds: int = 5, problem=None):
    fit = model.Fit(math.log(ratio), 0.01, 2 * rounds - 2, 10.0, 10.0 * ratio, False, 0.0)
    return stats.Estimate(rounds, rounds, 10.0, 10.0 * ratio, ratio, ci, 0.5, p_ks, problem, fit=fit)


def test_the_constants_are_the_documented_ones():
    assert (stats.DEFAULT_MIN_EFFECT, stats.DEFAULT_ALPHA, stats.DEFAULT_CONFIDENCE) == (0.02, 0.01, 0.95)
    assert (stats.MIN_ROUNDS, stats.MAX_EXTRA_ROUNDS) == (3, 1000)
    assert multiplicity._LOCKSTEP == 1e-9 and pytest.approx(0.9539, abs=1e-4) == estimating._PAIR_TO_SD
    settings = stats.Settings()
    assert settings.looks == 1 and [f.name for f in dataclasses.fields(settings)] == [
        "min_effect",
        "alpha",
        "confidence",
        "looks",
    ]  # no seed: the judgement never resamples


@pytest.mark.parametrize(
    ("base", "head", "problem"),
    [
        ([], [1.0, 2.0], "no successful measurement on the base side"),
        ([1.0, float("nan")], [float("inf")], "no successful measurement on the head side"),
        ([1.7e308, 1.7e308], [1.0, 1.0], "values too large to compare"),
        (
            [0.0, 0.0, 0.0],
            [1.0, 1.0, 1.0],
            "the base median is not a positive number: no ratio can be formed",
        ),
        ([1.0, 0.0, 1.0], [1.0, 1.0, 1.0], "a round measured 0: the change cannot be judged as a ratio"),
        ([1.0, 1.0, 1.0], [1.0, 0.0, 1.0], "a round measured 0: the change cannot be judged as a ratio"),
        ([1e-300, 1e-300], [1e300, 1e300], "values too far apart to form a ratio"),
    ],
)
def test_what_cannot_be_judged_says_why_and_claims_nothing(base, head, problem):
    found = stats.estimate(base, head)
    assert found.problem == problem and found.ratio is None and found.ci is None
    assert (found.p_mwu, found.p_ks, found.p_value, found.p_t, found.outliers) == (1.0, 1.0, 1.0, 1.0, (0, 0))
    judged = stats.classify("m", "ms", "lower", found, 1.0, stats.Settings())
    assert judged.verdict == "error" and judged.shape_changed is False


def test_a_problem_is_an_error_even_with_a_ratio():
    found = estimate(1.5, (1.4, 1.6), problem="broken")
    judged = stats.classify("m", "ms", "lower", found, 0.0001, stats.Settings())
    assert (judged.verdict, judged.reason) == ("error", "broken")


def test_one_round_a_side_has_no_tests_and_no_model():
    found = stats.estimate([10.0], [11.0])
    assert (found.p_mwu, found.p_ks, found.p_t, found.p_value, found.fit) == (1.0, 1.0, 1.0, 1.0, None)
    assert found.outliers == (0, 0)


def test_identical_rounds_give_p_values_of_one_not_nan():
    found = stats.estimate([5.0, 5.0, 5.0], [5.0, 5.0, 5.0])
    assert found.p_t == 1.0 and found.p_mwu == 1.0


def test_the_significance_and_the_minimum_effect_are_inclusive_bounds():
    settings = stats.Settings()
    at_both = stats.classify("m", "ms", "lower", estimate(1.02, (1.01, 1.03)), 0.01, settings)
    assert at_both.verdict == "regression"
    just_over = stats.classify("m", "ms", "lower", estimate(1.02, (1.01, 1.03)), 0.0101, settings)
    assert just_over.verdict == "inconclusive"
    higher = stats.classify("m", "tok/s", "higher", estimate(1.03, (1.01, 1.05)), 0.001, settings)
    assert higher.verdict == "improvement"


def test_a_change_of_shape_is_flagged_within_the_family_level_only_when_no_change_is_claimed():
    settings = stats.Settings()
    unchanged = estimate(1.0, (0.99, 1.01), p_ks=0.01)
    assert stats.classify("m", "ms", "lower", unchanged, 0.9, settings).shape_changed
    assert not stats.classify("m", "ms", "lower", unchanged, 0.9, settings, family=2).shape_changed
    regression = estimate(1.5, (1.4, 1.6), p_ks=0.0001)
    assert not stats.classify("m", "ms", "lower", regression, 0.0001, settings).shape_changed


def test_too_few_rounds_say_so_and_ask_for_what_is_missing():
    judged = stats.judge([10.0, 10.1], [10.5, 10.4])
    assert judged.verdict == "inconclusive" and judged.reason == "fewer than 3 successful rounds per side"
    assert stats.extra_rounds(stats.estimate([10.0], [10.0]), 0.02, 0.01, 0.95) == 2
    found = stats.estimate([10.0, 10.3, 9.8, 10.1], [10.2, 10.5, 9.9, 10.4])
    needed = model.rounds_to_decide(found.fit, 0.02, 0.01, 0.95, 4, 4 + stats.MAX_EXTRA_ROUNDS)
    assert stats.extra_rounds(found, 0.02, 0.01, 0.95) == max(1, min(stats.MAX_EXTRA_ROUNDS, needed - 4))
    family = stats.classify("m", "ms", "lower", found, 0.5, stats.Settings(), family=2)
    assert family.extra_rounds == stats.extra_rounds(found, 0.02, 0.005, 0.95)


def test_heading_worse_is_direction_aware_and_needs_the_minimum_effect():
    settings = stats.Settings()

    def judged(change, better):
        return stats.MetricJudgement(
            "m", "", better, estimate(1 + change, (1.0, 1.1)), 0.5, "inconclusive", ""
        )

    assert verdicts._heading_worse(judged(0.03, "lower"), settings)
    assert verdicts._heading_worse(judged(0.02, "lower"), settings)
    assert not verdicts._heading_worse(judged(0.01, "lower"), settings)
    assert not verdicts._heading_worse(judged(-0.03, "lower"), settings)
    assert verdicts._heading_worse(judged(-0.03, "higher"), settings)
    assert not verdicts._heading_worse(judged(0.03, "higher"), settings)


def test_the_overall_extra_rounds_is_the_sooner_of_a_regression_and_every_metric_settled():
    def judged(change, extra):
        return stats.MetricJudgement(
            "m", "", "lower", estimate(1 + change, (0.9, 1.2)), 0.5, "inconclusive", "", extra
        )

    comparison = stats.Comparison(
        "inconclusive", (judged(0.05, 3), judged(0.0, 10)), (), None, stats.Settings()
    )
    assert comparison.extra_rounds == 3 and not comparison.drifted
    settled = stats.Comparison("inconclusive", (judged(0.0, 4), judged(0.01, 10)), (), None, stats.Settings())
    assert settled.extra_rounds == 10


def test_lockstep_needs_the_same_rounds_positive_values_and_a_fixed_transform():
    cycle = ([19.0, 19.5, 18.7], [20.1, 20.0, 19.9])
    tok = ([1800 / v for v in cycle[0]], [1800 / v for v in cycle[1]])
    assert multiplicity._lockstep(cycle, tok) and multiplicity._lockstep(
        cycle, ([2 * v for v in cycle[0]], [2 * v for v in cycle[1]])
    )
    assert not multiplicity._lockstep(cycle, ([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]))
    assert not multiplicity._lockstep(cycle, (cycle[0][:2], cycle[1]))  # other rounds
    assert not multiplicity._lockstep(([1.0], []), ([2.0], []))  # one round says nothing
    assert not multiplicity._lockstep(([0.0, 1.0], [1.0]), ([0.0, 2.0], [2.0]))
    drift = ([19.0, 19.5, 18.7], [20.1, 20.0, 19.9 * (1 + 2e-9)])
    assert not multiplicity._lockstep(cycle, drift) and multiplicity._lockstep(
        cycle, ([19.0, 19.5, 18.7], [20.1, 20.0, 19.9 * (1 + 5e-10)])
    )


def test_exclusions_of_another_shape_are_ignored_and_the_metrics_own_are_used():
    head = [*QUIET[:4], 15.0]
    found = stats.estimate(QUIET, head, exclude=(np.zeros(2, dtype=bool), np.zeros(2, dtype=bool)))
    assert found.outliers == (0, 1)
    given = stats.estimate(QUIET, head, exclude=(np.zeros(5, dtype=bool), np.zeros(5, dtype=bool)))
    assert given.outliers == (0, 0)


def test_outliers_need_positive_finite_values_a_nonzero_spread_and_may_take_a_fifth_exactly():
    assert not any(m.any() for m in stats.outliers([*QUIET[:4], 0.0], [*QUIET[:4], 15.0]))
    assert not any(m.any() for m in stats.outliers([*QUIET[:4], 15.0], [*QUIET[:4], 0.0]))
    assert not any(m.any() for m in stats.outliers([*QUIET[:4], 15.0], [*QUIET[:4], float("nan")]))
    assert not any(m.any() for m in stats.outliers([*QUIET[:4], float("inf")], [*QUIET[:4], 15.0]))
    flat = stats.outliers([10.0] * 5, [10.0, 10.0, 10.0, 10.0, 15.0])  # no spread: nothing to measure by
    assert not flat[0].any() and not flat[1].any()
    fifth = stats.outliers(QUIET, [*QUIET[:3], 15.0, 16.0])  # 2 of 10 rounds: exactly the share allowed
    assert fifth[1].tolist() == [False, False, False, True, True]


def test_the_outlier_threshold_is_five_of_shamos_deviations():
    """The head's far round lies just inside, then just outside, five deviations from its side's
    median; the deviation is the median of both sides' pairwise log differences over 0.954."""
    clean = [QUIET[0], QUIET[1], QUIET[4], QUIET[3]]

    def pairs(values):
        logs = np.log(np.asarray(values))
        return list(np.abs(logs[:, None] - logs[None, :])[np.triu_indices(len(values), 1)])

    far = 1000.0  # its own pairs are the largest four, whatever it is
    spread = float(np.median(pairs(QUIET) + pairs([*clean, far]))) / estimating._PAIR_TO_SD
    center = float(np.median(np.log([*clean, far])))
    inside, outside = math.exp(center + 4.9 * spread), math.exp(center + 5.1 * spread)
    assert not stats.outliers(QUIET, [*clean, inside])[1].any()
    assert stats.outliers(QUIET, [*clean, outside])[1][-1]


def test_holm_never_goes_above_one():
    assert stats.holm([0.6, 0.7]) == [1.0, 1.0]
    assert stats.holm([0.2]) == [0.2]


def test_the_report_order_puts_primary_before_diagnostic_at_the_same_verdict():
    def judged(name, role, change):
        return stats.MetricJudgement(
            name, "", "lower", estimate(1 + change, (1.0, 1.1)), 0.5, "inconclusive", "", role=role
        )

    ordered = sorted([judged("a", "diagnostic", 0.5), judged("b", "primary", 0.01)], key=stats._report_order)
    assert [m.name for m in ordered] == ["b", "a"]


def test_the_json_of_a_judgement_keeps_each_sides_outliers_apart():
    found = stats.estimate(QUIET, [*QUIET[:4], 15.0])
    doc = stats.judge(QUIET, [*QUIET[:4], 15.0]).to_dict()
    assert found.outliers == (0, 1) and doc["outliers"] == {"base": 0, "head": 1}
    notes = wording.metric_notes([stats.judge(QUIET, [*QUIET[:4], 15.0], name="cycle_ms")])
    assert notes == [
        "cycle_ms: 0 base and 1 head rounds were far outliers (over 5 robust deviations from "
        "their side's median) and were left out"
    ]


def test_a_judgement_built_without_options_claims_no_change_of_shape():
    judged = stats.MetricJudgement("m", "", "lower", estimate(1.0, (0.99, 1.01)), 0.5, "unchanged", "")
    assert (judged.shape_changed, judged.role, judged.mode, judged.extra_rounds) == (
        False,
        "primary",
        None,
        None,
    )
    assert stats.Comparison("unchanged", (), (), None, stats.Settings()).drifted is False


def test_two_rounds_a_side_are_enough_for_the_rank_tests():
    found = stats.estimate([10.0, 10.1], [12.0, 12.1])
    assert found.p_mwu < 1.0 and found.p_ks < 1.0 and found.p_t < 1.0


def test_a_change_of_exactly_the_minimum_effect_is_claimed():
    found = estimate(1.03, (1.02, 1.04))
    exact = stats.Settings(min_effect=found.ratio - 1)
    assert stats.classify("m", "ms", "lower", found, 0.001, exact).verdict == "regression"


def test_a_file_without_metrics_says_there_is_nothing_to_judge_and_failed_rounds_are_not_counted():
    from bot.core.judge import results
    from tests.core.judge.results_data import document

    doc = document({"cycle_ms": ("ms", "lower", [19.0, 19.1, 19.2], [19.0, 19.1, 19.2])}, failed={"head": 2})
    comparison = stats.decide(results.load(json.dumps(doc)))
    assert comparison.rounds == {"base": 3, "head": 3}
    empty = {
        **doc,
        "metrics": {},
        "rounds": [{**r, "metrics": {}, "ok": False, "error": "x"} for r in doc["rounds"]],
    }
    nothing = stats.decide(results.load(json.dumps(empty)))
    assert (
        nothing.verdict == "error"
        and "no round measured anything, so there is nothing to judge" in nothing.notes
    )


def test_a_diagnostic_is_adjusted_in_a_family_of_its_own_and_an_error_stays_an_error_in_another_environment():
    from bot.core.judge import results
    from tests.core.judge.results_data import FINGERPRINT, document

    values = {
        "cycle_ms": ("ms", "lower", [19.0, 19.1, 18.9, 19.05, 19.0], [19.5, 19.6, 19.4, 19.55, 19.5]),
        "tok_s": ("tok/s", "higher", [94.0, 93.0, 95.0, 94.5, 93.5], [94.2, 93.1, 95.3, 94.0, 93.9]),
        "allreduce_us": ("us", "lower", [30.0, 33.0, 29.0, 31.0, 30.5], [30.5, 32.0, 29.5, 31.5, 30.0]),
    }
    doc = document(values)
    doc["metrics"]["allreduce_us"]["role"] = "diagnostic"
    judged = {m.name: m for m in stats.decide(results.load(json.dumps(doc))).metrics}
    assert judged["allreduce_us"].p_value == pytest.approx(judged["allreduce_us"].estimate.p_value)  # alone
    other = {**FINGERPRINT, "driver": "580.00"}
    broken = document(
        {"cycle_ms": ("ms", "lower", [19.0, 19.1, 19.2], [])}, head_fingerprint=other, failed={"head": 3}
    )
    assert stats.decide(results.load(json.dumps(broken))).verdict == "error"


def test_two_rounds_in_all_can_show_a_fixed_transform_and_values_below_one_count():
    assert multiplicity._lockstep(([0.5], [0.25]), ([0.2], [0.1]))  # one round a side, every value below 1
    assert multiplicity._lockstep(([0.5, 0.4], [0.25, 0.3]), ([2.0, 2.5], [4.0, 1 / 0.3]))  # the inverse


def test_heading_worse_at_exactly_the_minimum_effect_and_never_at_no_change():
    def judged(ratio, better):
        return stats.MetricJudgement("m", "", better, estimate(ratio, (1.0, 1.1)), 0.5, "inconclusive", "")

    assert verdicts._heading_worse(judged(1.5, "lower"), stats.Settings(min_effect=0.5))  # 1.5 - 1 is exact
    assert not verdicts._heading_worse(judged(1.0, "lower"), stats.Settings(min_effect=0.0))
    assert not verdicts._heading_worse(judged(1.0, "higher"), stats.Settings(min_effect=0.0))


def test_extra_rounds_from_two_rounds_a_side_follow_the_model_not_the_floor():
    found = stats.estimate([10.0, 10.3], [10.2, 10.6])
    needed = model.rounds_to_decide(found.fit, 0.02, 0.01, 0.95, 2, 2 + stats.MAX_EXTRA_ROUNDS)
    assert 1 < needed - 2 < stats.MAX_EXTRA_ROUNDS  # neither the floor nor the cap
    assert stats.extra_rounds(found, 0.02, 0.01, 0.95) == needed - 2
    in_family = stats.classify("m", "ms", "lower", found, 0.5, stats.Settings(), family=2)
    tighter = model.rounds_to_decide(found.fit, 0.02, 0.005, 0.95, 2, 2 + stats.MAX_EXTRA_ROUNDS)
    assert in_family.extra_rounds == tighter - 2 > needed - 2  # the family's level asks for more


def test_a_model_that_already_decides_still_asks_for_one_more_round_not_two():
    found = stats.estimate([10.0, 10.01, 9.99, 10.02, 9.98], [10.1, 10.12, 10.09, 10.11, 10.1])
    assert model.rounds_to_decide(found.fit, 0.02, 0.01, 0.95, 5, 5 + stats.MAX_EXTRA_ROUNDS) - 5 <= 1
    assert stats.extra_rounds(found, 0.02, 0.01, 0.95) == 1


def test_a_ratio_past_e_to_the_700_has_no_model_and_extra_rounds_fall_back_to_the_floor():
    far = math.exp(700.5)
    found = stats.estimate([1.0, 1.1, 0.9], [far, far * 1.1, far * 0.9])
    assert found.fit is None and found.ratio == pytest.approx(far)
    assert stats.extra_rounds(found, 0.02, 0.01, 0.95) == 1


def test_the_same_p_value_alone_does_not_make_two_metrics_one_hypothesis():
    values = {"a": ([10.0, 10.2, 9.9], [10.1, 10.4, 10.0]), "b": ([5.0, 5.3, 4.8], [5.2, 5.1, 5.6])}
    same_p = {n: stats.estimate(*v) for n, v in values.items()}
    same_p["b"] = dataclasses.replace(same_p["b"], fit=same_p["a"].fit)
    adjusted, hypotheses = stats.family_adjusted(["a", "b"], same_p, values)
    assert hypotheses == 2 and adjusted["a"] == adjusted["b"] == min(1.0, 2 * same_p["a"].p_value)


def test_exclusions_for_sides_of_different_sizes_are_used():
    head = [*QUIET, 10.0]
    marks = (np.zeros(5, dtype=bool), np.array([False] * 5 + [True]))
    assert stats.estimate(QUIET, head, exclude=marks).outliers == (0, 1)


def test_outliers_are_found_among_values_below_one():
    base, head = [v / 100 for v in QUIET], [v / 100 for v in [*QUIET[:4], 15.0]]
    assert stats.outliers(base, head)[1].tolist() == [False, False, False, False, True]
    assert stats.outliers(head, base)[0].tolist() == [False, False, False, False, True]


def test_a_metric_without_a_change_sorts_after_one_with_a_change_at_the_same_verdict():
    without = stats.MetricJudgement(
        "a", "", "lower", dataclasses.replace(estimate(1.0, (1.0, 1.1)), ratio=None), 0.5, "inconclusive", ""
    )
    changed = stats.MetricJudgement("b", "", "lower", estimate(1.5, (1.0, 2.0)), 0.5, "inconclusive", "")
    assert [m.name for m in sorted([without, changed], key=stats._report_order)] == ["b", "a"]


def test_only_a_diagnostics_claim_is_noted_as_explaining_not_deciding():
    def judged(name, role, verdict):
        return stats.MetricJudgement(
            name, "", "lower", estimate(1.5, (1.4, 1.6)), 0.001, verdict, "", role=role
        )

    notes = wording.metric_notes(
        [judged("cycle_ms", "primary", "regression"), judged("allreduce_us", "diagnostic", "unchanged")]
    )
    assert not any("is a diagnostic" in n for n in notes)
    notes = wording.metric_notes(
        [judged("cycle_ms", "primary", "unchanged"), judged("allreduce_us", "diagnostic", "regression")]
    )
    assert [n for n in notes if "is a diagnostic" in n] == [
        "allreduce_us is a diagnostic: its regression explains, the verdict follows the primary metrics"
    ]


@pytest.mark.parametrize(("changed", "more"), [(1, ""), (2, " (and 1 more)"), (3, " (and 2 more)")])
def test_a_drift_warning_names_the_first_setting_and_counts_the_others(changed, more):
    from bot.core.judge import results
    from tests.core.judge.results_data import FINGERPRINT, document

    after = {"gpus": [{"power.limit": "500.00", "clocks.max.sm": "1500", "name": "NVIDIA H100"}][:1]}
    keys = ["power.limit", "clocks.max.sm", "name"][:changed]
    after["gpus"] = [{k: after["gpus"][0][k] for k in keys}]
    fp = {**FINGERPRINT, "after": after}
    doc = document({"cycle_ms": ("ms", "lower", [19.0, 19.1, 19.2], [19.0, 19.1, 19.2])}, head_fingerprint=fp)
    [warning] = [
        w for w in stats.decide(results.load(json.dumps(doc))).warnings if "changed during the run" in w
    ]
    assert warning.endswith(more if more else "500.00")


def test_a_long_error_is_cut_to_200_characters_in_the_notes():
    from bot.core.judge import results
    from tests.core.judge.results_data import document

    long = "x" * 300
    doc = document(
        {"cycle_ms": ("ms", "lower", [19.0, 19.1, 19.2], [19.0, 19.1, 19.2])}, failed={"head": 1}, error=long
    )
    doc["status"], doc["error"] = "failed", long
    notes = stats.decide(results.load(json.dumps(doc))).notes
    assert f"the run did not complete (status failed): {'x' * 200}" in notes
    assert f"1 of 4 head rounds failed and was left out (first: {'x' * 200})" in notes


def test_a_lone_metric_is_judged_as_a_family_of_one():
    base, head = [10.0, 10.3], [10.2, 10.6]
    assert stats.judge(base, head).extra_rounds == stats.extra_rounds(
        stats.estimate(base, head), 0.02, 0.01, 0.95
    )


def test_neighbouring_rounds_count_in_the_outliers_deviation():
    """Rounds that alternate 10, 12: only neighbours differ, so without their pairs the deviation
    would halve and a head round of 22 would look far."""
    assert not stats.outliers([10.0, 12.0, 10.0, 12.0, 10.0], [10.0, 12.0, 10.0, 12.0, 22.0])[1].any()


def test_above_500_rounds_the_spread_is_taken_over_500_quantiles_from_the_least_to_the_greatest():
    assert stats.SPREAD_ROUNDS == 500
    side = np.arange(1000.0)[::-1]  # in run order, not value order
    sample = estimating._spread_sample(side)
    assert sample.size == 500 and (sample[0], sample[-1]) == (0.0, 999.0) and np.all(np.diff(sample) > 0)
    assert np.array_equal(
        estimating._spread_sample(side[:500]), side[:500]
    )  # up to 500: every round, as it is
