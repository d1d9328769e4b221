"""A bisection's artifact read back as untrusted input: validated, checked against what was
dispatched, rendered with every string escaped; never an exception, whatever the bytes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.bench import bisect_artifact
from bot.core.bisect import plan as bisection
from bot.core.bisect import report as bisect_report
from bot.core.risk.scoring import RiskReport
from tests.core.judge.results_data import FINGERPRINT, document

GOOD, FIRST, SECOND, BAD = "a" * 40, "b" * 40, "c" * 40, "d" * 40
SUITE = "spin"
METRIC = {"step_ms": ("ms", "lower", [10.0, 10.1, 9.9, 10.0, 10.05], [15.0, 15.1, 14.9, 15.0, 15.05])}
FLAT = bisect_report.side_fingerprints(FINGERPRINT, {**FINGERPRINT, "driver": "999.1"})


def measurement(purpose, base, head, outcome, ratio=1.5, path=None):
    verdict = "regression" if outcome == "bad" else "unchanged"
    return bisect_report.Measurement(
        purpose,
        base,
        head,
        outcome,
        verdict,
        ratio,
        (ratio - 0.1, ratio + 0.1),
        0.001,
        path or f"/runner/tmp/{purpose}-{head[:10]}.json",
        "why",
    )


def culprit_report(subject: str = "Fix PCG MoE error") -> dict[str, Any]:
    blank = RiskReport(score=0, level="none", profile="generic", files=[], signals=[])
    suspects = {sha: bisect_report.Suspect(sha, subject, blank) for sha in (FIRST, SECOND, BAD)}
    runs = [
        measurement("reference", GOOD, BAD, "bad", path=bisect_report.REFERENCE_RESULTS),
        measurement("probe", GOOD, FIRST, "ok"),
        measurement("probe", GOOD, SECOND, "bad"),
    ]
    report = bisect_report.conclude(
        bisection.Culprit(SECOND, FIRST, 3),
        good=GOOD,
        bad=BAD,
        suite=SUITE,
        metric="step_ms",
        commits=[FIRST, SECOND, BAD],
        suspects=suspects,
        measurements=runs,
        confirmation=measurement("confirm", FIRST, SECOND, "bad", 1.25, path=bisect_report.CONFIRM_RESULTS),
        fingerprints=FLAT,
    )
    return dict(report.to_dict())


def not_reproduced_report() -> dict[str, Any]:
    reference = measurement("reference", GOOD, BAD, None, 1.0, path=bisect_report.REFERENCE_RESULTS)
    report = bisect_report.not_reproduced(
        reference, suite=SUITE, metric="step_ms", commits=3, fingerprints=FLAT
    )
    return dict(report.to_dict())


def results(base: str, head: str, suite: str = SUITE) -> bytes:
    doc = document(METRIC, suite=suite)
    doc["base"]["sha"], doc["head"]["sha"] = base, head
    return json.dumps(doc).encode()


def artifact(report: dict[str, Any], **extra: bytes) -> dict[str, bytes]:
    files = {"bisect.json": json.dumps(report).encode(), "reference.results.json": results(GOOD, BAD)}
    if report["culprit"] is not None:
        files["confirm.results.json"] = results(FIRST, SECOND)
    return {**files, **extra}


def read(files, good=GOOD, bad=BAD, suite=SUITE):
    return bisect_artifact.read(files, good=good, bad=bad, suite=suite)


def test_a_confirmed_culprit_is_read_with_its_confirmation_and_the_reference():
    outcome, problems = read(artifact(culprit_report()))
    assert problems == [] and outcome is not None
    assert (outcome.status, outcome.culprit, outcome.parent) == ("confirmed", SECOND, FIRST)
    assert outcome.culprit_subject == "Fix PCG MoE error"
    assert (outcome.change, outcome.ci) == ("+25.0%", (1.15, 1.35))
    assert (outcome.reference_verdict, outcome.reference_change) == ("regression", "+50.0%")
    assert (outcome.runs, outcome.commits, outcome.metric, outcome.suite) == (4, 3, "step_ms", SUITE)


def test_a_confirmation_taken_from_a_probe_is_not_counted_as_a_run_of_its_own():
    report = culprit_report()
    probe = report["measurements"][2]
    report["measurements"][-1] = {**report["measurements"][-1], "base": GOOD, "results": probe["results"]}
    report["culprit"] = {**report["culprit"], "parent": GOOD}
    outcome, problems = read(artifact(report, **{"confirm.results.json": results(GOOD, SECOND)}))
    assert problems == [] and outcome is not None
    assert (outcome.runs, report["runs"]["total"]) == (3, 4) and "3 benchmark runs" in outcome.markdown
    assert outcome.kernels_markdown is None  # neither side of the confirmation was profiled
    assert f"**Culprit:** `{SECOND}` Fix PCG MoE error: +25.0% against its parent" in outcome.markdown
    assert outcome.fingerprints["bad"]["driver"] == "999.1"


def test_not_reproduced_keeps_the_reference_and_shows_both_fingerprints():
    outcome, problems = read(artifact(not_reproduced_report()))
    assert problems == [] and outcome is not None
    assert (outcome.status, outcome.culprit, outcome.change) == ("not_reproduced", None, None)
    assert outcome.reference_verdict == "unchanged" and outcome.reference_change == "+0.0%"
    assert "not reproduced in today's environment" in outcome.markdown
    assert "(1 differ)" in outcome.markdown
    assert "| `driver` | `" in outcome.markdown and "`999.1` | yes |" in outcome.markdown
    assert outcome.fingerprints == FLAT


def test_a_report_about_other_commits_or_another_suite_is_a_problem_and_no_outcome():
    files = artifact(culprit_report())
    for asked, says in (
        ({"good": FIRST}, "GOOD is aaaa"),
        ({"bad": FIRST}, "BAD is dddd"),
        ({"suite": "other"}, "suite is spin"),
    ):
        outcome, problems = read(files, **asked)
        assert outcome is None and len(problems) == 1 and says in problems[0], problems


def test_results_files_that_measured_other_commits_are_problems():
    outcome, problems = read(artifact(culprit_report(), **{"reference.results.json": results(GOOD, FIRST)}))
    assert outcome is None and "reference.results.json: measured" in problems[0]
    outcome, problems = read(artifact(culprit_report(), **{"confirm.results.json": results(GOOD, SECOND)}))
    assert outcome is None and "confirm.results.json: measured" in problems[0]
    outcome, problems = read(
        artifact(culprit_report(), **{"confirm.results.json": results(FIRST, SECOND, "x")})
    )
    assert outcome is None and "on x" in problems[0]


def test_a_missing_report_and_a_missing_reference_are_said():
    assert read({}) == (None, ["the artifact holds no bisect.json"])
    files = artifact(not_reproduced_report())
    del files["reference.results.json"]
    outcome, problems = read(files)
    assert outcome is not None and problems == ["the artifact holds no reference.results.json"]


def test_statuses_that_contradict_the_culprit_are_refused():
    report = culprit_report()
    outcome, problems = read(artifact({**report, "status": "not_reproduced"}))
    assert outcome is None and problems == ["bisect.json: status not_reproduced cannot name a culprit"]
    report = not_reproduced_report()
    outcome, problems = read(artifact({**report, "status": "confirmed"}))
    assert outcome is None and problems == ["bisect.json: status confirmed names no culprit"]


def test_an_unknown_schema_or_status_is_one_problem():
    outcome, problems = read(artifact({**culprit_report(), "schema": 2}))
    assert outcome is None and problems == ["bisect.json: unsupported schema 2 (this perfbot reads 1)"]
    outcome, problems = read(artifact({**culprit_report(), "status": "great"}))
    assert outcome is None and problems[0].startswith("bisect.json: status 'great' is none of confirmed")
    outcome, problems = read(artifact({**culprit_report(), "good": "A" * 40}))
    assert outcome is None and problems[0].startswith("bisect.json: good")


def test_strings_from_the_artifact_are_inert_in_the_markdown():
    subject = "@team see [this](https://evil.example) <img src=x> | row"
    outcome, _ = read(artifact(culprit_report(subject)))
    assert outcome is not None
    assert "@team" not in outcome.markdown.replace("`@team`", "") and "](https://" not in outcome.markdown
    assert outcome.markdown.count("<img") == outcome.markdown.count("\\<img") > 0  # escaped, inert


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
FIELDS = st.sampled_from(
    [
        "schema",
        "status",
        "good",
        "bad",
        "suite",
        "metric",
        "commits",
        "culprit",
        "conclusion",
        "runs",
        "reference",
        "measurements",
        "fingerprints",
    ]
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["bisect.json", "reference.results.json", "confirm.results.json", "summary.md"]),
        st.binary(max_size=200),
    )
)
def test_arbitrary_bytes_never_raise(files):
    outcome, problems = read(files)
    assert outcome is None and problems


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(FIELDS, JSON), max_size=4), st.booleans())
def test_a_valid_report_with_arbitrary_values_in_its_fields_never_raises(changes, reproduced):
    report = culprit_report() if reproduced else not_reproduced_report()
    for key, value in changes:
        report[key] = value
    outcome, problems = read(
        artifact(report)
        if isinstance(report.get("culprit"), dict | None)
        else {"bisect.json": json.dumps(report).encode()}
    )
    assert outcome is not None or problems
    if outcome is not None:
        assert outcome.good == GOOD and outcome.bad == BAD and outcome.suite == SUITE


@settings(max_examples=100, deadline=None)
@given(JSON)
def test_arbitrary_json_as_the_report_never_raises(value):
    outcome, problems = read({"bisect.json": json.dumps(value).encode()})
    assert outcome is None and len(problems) == 1
