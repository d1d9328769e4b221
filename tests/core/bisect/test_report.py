"""Judging bisection probes against the reference regression, and the bisection report."""

from __future__ import annotations

import pytest

from bot.core.bisect import plan as bisection
from bot.core.bisect import report as bisect_report
from bot.core.bisect.report import BisectError
from bot.core.judge import stats
from bot.core.risk.scoring import RiskReport


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


GOOD, FIRST, SECOND, BAD = "a" * 40, "b" * 40, "c" * 40, "d" * 40


def suspects():
    blank = RiskReport(score=0, level="none", profile="generic", files=[], signals=[])
    return {sha: bisect_report.Suspect(sha, f"commit {sha[0]}", blank) for sha in (FIRST, SECOND, BAD)}


def run(purpose, base, head, outcome, ratio=1.5):
    return bisect_report.Measurement(
        purpose,
        base,
        head,
        outcome,
        "regression" if outcome == "bad" else "unchanged",
        ratio,
        (ratio - 0.1, ratio + 0.1),
        0.001,
        f"{purpose}-{head[:10]}.json",
        "why",
    )


def conclude(step, measurements, confirmation=None):
    return bisect_report.conclude(
        step,
        good=GOOD,
        bad=BAD,
        suite="spin",
        metric="step_ms",
        commits=[FIRST, SECOND, BAD],
        suspects=suspects(),
        measurements=measurements,
        confirmation=confirmation,
    )


def test_a_culprit_is_reported_with_its_confirmation_and_the_plain_bisection_count():
    runs = [
        run("reference", GOOD, BAD, "bad"),
        run("probe", GOOD, FIRST, "ok"),
        run("probe", GOOD, SECOND, "bad"),
    ]
    report = conclude(bisection.Culprit(SECOND, FIRST, 3), runs, run("confirm", FIRST, SECOND, "bad", 1.25))
    assert report.culprit.sha == SECOND and report.parent == FIRST
    assert (
        report.conclusion
        == f"first bad commit {SECOND[:10]} (commit c): step_ms +25.0% against its parent, confirmed"
    )
    assert [m.purpose for m in report.measurements] == ["reference", "probe", "probe", "confirm"]
    assert (report.probes, report.plain_probes) == (2, bisection.plain_probes(3, 1))
    assert report.to_dict()["candidates"] == [] and report.to_dict()["notes"] == []
    with pytest.raises(AttributeError):
        report.conclusion = "changed"  # frozen


def test_an_unconfirmed_culprit_says_so():
    report = conclude(
        bisection.Culprit(FIRST, None, 2),
        [run("reference", GOOD, BAD, "bad")],
        run("confirm", GOOD, FIRST, "ok", 1.0),
    )
    assert report.parent == GOOD and report.conclusion.endswith(
        "+0.0% against its parent, NOT confirmed against its parent"
    )


def test_a_culprit_without_its_confirmation_is_refused():
    with pytest.raises(ValueError, match="needs its confirmation"):
        conclude(bisection.Culprit(SECOND, FIRST, 3), [run("reference", GOOD, BAD, "bad")])
    with pytest.raises(ValueError, match="needs its confirmation"):
        conclude(bisection.Culprit(SECOND, FIRST, 3), [], run("confirm", GOOD, SECOND, "bad"))


def test_giving_up_lists_the_candidates_and_the_notes():
    step = bisection.GiveUp(
        "only commits that could not be measured are left", (FIRST, SECOND), 3, ("flaky",)
    )
    report = conclude(step, [run("reference", GOOD, BAD, "bad"), run("probe", GOOD, FIRST, "skipped")])
    assert report.culprit is None and report.plain_probes is None and report.confirmation is None
    assert report.conclusion == "no single culprit: only commits that could not be measured are left"
    assert report.to_dict()["candidates"] == [FIRST, SECOND] and report.to_dict()["notes"] == ["flaky"]


def test_a_probe_of_the_culprit_against_its_parent_is_its_confirmation():
    probe = run("probe", GOOD, FIRST, "bad", 2.0)
    confirmation = bisect_report.probe_as_confirmation(
        [run("reference", GOOD, BAD, "bad"), probe], GOOD, FIRST
    )
    assert confirmation is not None and confirmation.purpose == "confirm"
    assert (confirmation.ratio, confirmation.results_path) == (2.0, probe.results_path)
    assert confirmation.why == "why (the probe above)"
    assert bisect_report.probe_as_confirmation([probe], FIRST, SECOND) is None


def test_the_reference_run_confirms_the_culprit_of_a_one_commit_range():
    """BAD against its parent GOOD is the reference run itself: it is not measured a second time."""
    reference = run("reference", GOOD, BAD, "bad", 1.4)
    confirmation = bisect_report.probe_as_confirmation([reference], GOOD, BAD)
    assert confirmation is not None and confirmation.purpose == "confirm"
    assert (confirmation.ratio, confirmation.results_path) == (1.4, reference.results_path)
    assert confirmation.why == "why (the reference above)"
    assert bisect_report.probe_as_confirmation([reference], FIRST, BAD) is None


def test_a_confirmation_that_only_leaned_makes_the_culprit_likely_not_confirmed():
    leaning = bisect_report.Measurement(
        "confirm", FIRST, SECOND, "bad", "inconclusive", 1.09, (0.99, 1.2), 0.02, "confirm.json", "leaned"
    )
    runs = [
        run("reference", GOOD, BAD, "bad"),
        run("probe", GOOD, FIRST, "ok"),
        run("probe", GOOD, SECOND, "bad"),
    ]
    report = conclude(bisection.Culprit(SECOND, FIRST, 3), runs, leaning)
    assert "confirmed" not in report.conclusion.replace("not confirmed", "")
    assert report.conclusion.endswith(
        "+9.0% against its parent, likely, not confirmed: the run against its "
        "parent leaned towards the regression but did not decide it (more rounds would)"
    )
    assert report.notes == (
        f"confirm {SECOND[:10]} was inconclusive (+9.0%); it was counted bad by the side it leaned to",
    )


def test_a_regression_short_of_halfway_to_bad_is_counted_with_the_good_side():
    """Two modes of a noise floor, or the first step of a regression in steps: significantly slower
    than GOOD, but nearer GOOD than BAD on a ratio scale (sqrt(9) = 3)."""
    reference = judged(QUIET, [x * 9 for x in QUIET])
    short = judged(QUIET, [x * 2.9 for x in QUIET])
    past = judged(QUIET, [x * 3.1 for x in QUIET])
    assert short.verdict == past.verdict == "regression"
    outcome, why = bisect_report.judge_probe(short, reference)
    assert (
        outcome == "ok"
        and why == "regressed +190.0% against GOOD, short of halfway to the +800.0% from GOOD to BAD"
    )
    assert bisect_report.judge_probe(past, reference) == ("bad", "regressed +210.0% against GOOD")


def test_the_halfway_point_is_on_the_reference_side_for_either_direction():
    assert bisect_report.past_halfway(2.0, 4.0) and not bisect_report.past_halfway(1.99, 4.0)
    assert bisect_report.past_halfway(0.5, 0.25) and not bisect_report.past_halfway(0.51, 0.25)
    assert bisect_report.past_halfway(1.0, None) and not bisect_report.past_halfway(0.99, 0.0)


def test_a_confirmation_short_of_halfway_is_not_confirmed_and_the_probes_that_leaned_are_noted():
    short = bisect_report.Measurement(
        "confirm", FIRST, SECOND, "ok", "regression", 1.1, (1.05, 1.15), 0.001, "confirm.json", "short"
    )
    runs = [
        run("reference", GOOD, BAD, "bad", 2.0),
        run("probe", GOOD, FIRST, "ok"),
        bisect_report.Measurement(
            "probe", GOOD, SECOND, "ok", "regression", 1.2, (1.1, 1.3), 0.001, "probe.json", "short"
        ),
    ]
    report = conclude(bisection.Culprit(SECOND, FIRST, 3), runs, short)
    assert report.conclusion.endswith(
        "+10.0% against its parent, NOT confirmed: it regressed against "
        "its parent, but its measured change is less than halfway to BAD's; "
        "another commit may carry part of the regression"
    )
    assert report.notes == (
        f"probe {SECOND[:10]} regressed +20.0% against {GOOD[:10]}, short of halfway to BAD: counted ok "
        "(the regression may come in steps)",
        f"confirm {SECOND[:10]} regressed +10.0% against {FIRST[:10]}, short of halfway to BAD: counted ok "
        "(the regression may come in steps)",
    )


def test_the_latest_measurement_of_the_pair_is_the_confirmation_and_the_last_confirm_counts():
    probe, recheck = run("probe", GOOD, FIRST, "ok", 1.0), run("recheck", GOOD, FIRST, "bad", 2.0)
    confirmation = bisect_report.probe_as_confirmation([probe, recheck], GOOD, FIRST)
    assert confirmation is not None and (confirmation.ratio, confirmation.outcome) == (2.0, "bad")
    assert confirmation.why == "why (the recheck above)"
    contradicted = run("confirm", FIRST, SECOND, "ok", 1.0)
    runs = [
        run("reference", GOOD, BAD, "bad"),
        run("probe", GOOD, SECOND, "bad"),
        contradicted,
        run("recheck", GOOD, SECOND, "ok", 1.0),
    ]
    report = conclude(bisection.Culprit(BAD, SECOND, 4), runs, run("confirm", SECOND, BAD, "bad", 1.4))
    assert report.confirmation.head == BAD and report.rechecks == 1 and report.probes == 1
    assert report.to_dict()["runs"] == {"total": 5, "probes": 1, "rechecks": 1, "plain_bisection_probes": 2}


@pytest.mark.parametrize(
    ("verdict", "says"),
    [
        (
            "unchanged",
            "step_ms unchanged (+1.0%) from GOOD to BAD, measured again now; no culprit to look for",
        ),
        (
            "inconclusive",
            "step_ms inconclusive (+150.0%) from GOOD to BAD, measured again now, without a decision "
            "(more rounds, or --max-rounds, would decide); no culprit looked for",
        ),
    ],
)
def test_not_reproduced_says_whether_the_ends_did_not_differ_or_were_not_decided(verdict, says):
    ratio = 2.5 if verdict == "inconclusive" else 1.01
    reference = bisect_report.Measurement(
        "reference", GOOD, BAD, None, verdict, ratio, None, None, "r.json", ""
    )
    prints = {"good": {"driver": "1"}, "bad": {"driver": "2"}}
    report = bisect_report.not_reproduced(
        reference, suite="spin", metric="step_ms", commits=3, fingerprints=prints
    )
    assert report.status == "not_reproduced" and report.culprit is None
    assert report.conclusion == f"not reproduced in today's environment: {says}"
    assert report.to_dict()["fingerprints"] == prints and report.to_dict()["reference"]["verdict"] == verdict
