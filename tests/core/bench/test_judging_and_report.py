"""A finished run's artifact judged: each results file validated, checked against what was asked
for, compared; and what the check run and the sticky comment's section say about it."""

from __future__ import annotations

import json
import re

import pytest

from bot.core.bench import judging, report
from bot.core.bench.artifact import Artifact
from bot.core.render import bench as render_bench
from bot.core.render.bench import BenchSection, SuiteResult
from tests.core.judge.results_data import BASE_SHA, EAGLE3, HEAD_SHA, document

QUIET = {
    "verify_ms": (
        "ms",
        "lower",
        [583.0, 583.4, 582.9, 583.1, 583.2, 582.8, 583.0, 583.3],
        [583.1, 583.0, 583.2, 582.9, 583.3, 583.0, 582.8, 583.1],
    )
}


def files(**docs: dict) -> Artifact:
    return Artifact({name.replace("__", "."): json.dumps(doc).encode() for name, doc in docs.items()})


def test_a_results_file_becomes_a_verdict_with_its_report_and_history_points():
    judged = judging.judge(files(results__json=document(EAGLE3)), BASE_SHA, HEAD_SHA, ("sglang-eagle3",))
    assert judged.problems == () and judged.run_errors == ()
    [suite] = judged.suites
    assert (suite.suite, suite.verdict) == ("sglang-eagle3", "regression")
    assert suite.headline.startswith("This PR makes the EAGLE-3 cycle 52% slower")
    assert "| metric | base | head | change | interval the verdict used | verdict |" in suite.markdown
    stored = json.loads(suite.to_json())
    assert stored["verdict"] == "regression" and stored["markdown"] == suite.markdown and stored["headline"]
    assert suite.headline_metric and suite.headline_change is not None
    assert {name for name, *_ in suite.points} == set(EAGLE3)


def test_one_file_per_suite_each_judged():
    quiet = document(QUIET, suite="quick")
    judged = judging.judge(
        files(**{"results__sglang-eagle3__json": document(EAGLE3), "results__quick__json": quiet}),
        BASE_SHA,
        HEAD_SHA,
        ("sglang-eagle3", "quick"),
    )
    assert sorted((s.suite, s.verdict) for s in judged.suites) == [
        ("quick", "unchanged"),
        ("sglang-eagle3", "regression"),
    ]


def test_a_file_that_measured_other_commits_or_another_suite_is_a_problem_not_a_verdict():
    other = document(EAGLE3)
    other["head"]["sha"] = "c" * 40
    judged = judging.judge(files(results__json=other), BASE_SHA, HEAD_SHA, ("sglang-eagle3",))
    assert judged.suites == () and "not the requested" in judged.problems[0]
    judged = judging.judge(files(results__json=document(EAGLE3)), BASE_SHA, HEAD_SHA, ("verify-step",))
    assert judged.suites == () and "was not asked for" in judged.problems[0]


@pytest.mark.parametrize(
    "content, says",
    [
        (b"{not json", "not valid JSON"),
        (b'{"schema": "other/2"}', "unsupported schema"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[]", "must be a JSON object"),
    ],
)
def test_an_invalid_results_file_is_one_problem_line(content, says):
    judged = judging.judge(Artifact({"results.json": content}), BASE_SHA, HEAD_SHA, ())
    assert judged.suites == () and says in judged.problems[0] and "\n" not in judged.problems[0]


def test_an_artifact_without_results_says_so_and_skipped_entries_are_named():
    judged = judging.judge(
        Artifact({"summary.md": b"# hi"}, ("../x.json: not at the top level",)), BASE_SHA, HEAD_SHA, ()
    )
    assert judged.suites == ()
    assert judged.problems == (
        "skipped ../x.json: not at the top level",
        "the artifact holds no results file (results.json or results.SUITE.json)",
    )


def test_failed_rounds_and_the_runs_own_error_explain_a_failed_run():
    doc = document(QUIET, failed={"head": 2}, error="CUDA error: out of memory")
    doc["error"] = "round 9 timed out"
    judged = judging.judge(files(results__json=doc), BASE_SHA, HEAD_SHA, ())
    assert judged.run_errors[0] == "results.json: round 9 timed out"
    assert "head round" in judged.run_errors[1] and "out of memory" in judged.run_errors[1]


def test_failed_rounds_past_the_first_three_are_counted_in_words_that_fit_the_count():
    for failed, last in ((4, "results.json: 1 more round failed"), (5, "results.json: 2 more rounds failed")):
        doc = document(QUIET, failed={"head": failed}, error="CUDA error: out of memory")
        judged = judging.judge(files(results__json=doc), BASE_SHA, HEAD_SHA, ())
        assert judged.run_errors[-1] == last


# ---------------------------------------------------------------- the section and the check

RESULT = SuiteResult("verify-step", "regression", "This PR makes verify_ms 40% slower", "### 🔴 table")
RUN = "https://github.com/o/r/actions/runs/9"


def section(status: str, **changes) -> BenchSection:
    base = dict(
        status=status,
        base_sha=BASE_SHA,
        head_sha=HEAD_SHA,
        suites=("verify-step",),
        trigger="command",
        requested_by="maintainer",
        run_url=RUN,
    )
    return BenchSection(**{**base, **changes})


SECTIONS = {
    "running": section("running"),
    "running_unlinked": section("dispatching", run_url=None, trigger="auto"),
    "completed": section("completed", conclusion="success", results=(RESULT,)),
    "failed_run": section(
        "failed",
        conclusion="failure",
        problems=("results.json: head round 2 failed: CUDA error: out of memory",),
    ),
    "timed_out": section("failed", conclusion="timed_out"),
    "refused": section(
        "failed", run_url=None, error="GitHub refused to start the benchmark workflow (404 Not Found)"
    ),
    "superseded": section("superseded"),
    "cancelled": section("cancelled"),
    "outdated": section("outdated", results=(RESULT,)),
}


@pytest.mark.parametrize("name", SECTIONS)
def test_the_section_of_each_state_matches_its_golden_file(name, file_regression):
    file_regression.check(
        render_bench.section_markdown(SECTIONS[name]), extension=".md", basename=f"section_{name}"
    )


@pytest.mark.parametrize("name", ["failed_run", "timed_out", "refused", "cancelled", "superseded", "running"])
def test_a_run_without_results_never_says_no_regression(name):
    text = render_bench.section_markdown(SECTIONS[name]) + report.check(SECTIONS[name], "c", True).title
    assert "regression" not in text.lower().replace("/bench", "") or name == "running"
    assert "no change" not in text.lower() and "unchanged" not in text.lower()


@pytest.mark.parametrize(
    "name, gate, status, conclusion",
    [
        ("running", True, "in_progress", None),
        ("completed", True, "completed", "failure"),
        ("completed", False, "completed", "neutral"),
        ("failed_run", True, "completed", "neutral"),
        ("refused", True, "completed", "neutral"),
        ("superseded", True, "completed", "cancelled"),
        ("cancelled", False, "completed", "cancelled"),
    ],
)
def test_the_check_fails_only_a_confirmed_regression_under_a_gate(name, gate, status, conclusion):
    check = report.check(SECTIONS[name], "pb-1", gate)
    assert (check.name, check.status, check.conclusion) == ("perfbot / bench", status, conclusion)
    assert check.external_id == "pb-1" and check.head_sha == HEAD_SHA


def test_check_titles_say_the_state_or_the_verdict():
    assert (
        report.check(SECTIONS["completed"], "c", False).title
        == "Regression: This PR makes verify_ms 40% slower"
    )
    assert report.check(SECTIONS["running"], "c", False).title == "Benchmarks running"
    assert report.check(SECTIONS["timed_out"], "c", False).title == "The benchmark run timed out: no verdict"
    assert report.check(SECTIONS["refused"], "c", False).title == "The benchmark could not start: no verdict"


def test_hostile_problems_and_names_cannot_notify_link_or_open_html():
    hostile = section(
        "failed",
        conclusion="failure",
        requested_by="a`b|c",
        suites=("x`|y",),
        problems=("<script>alert(1)</script> @everyone [x](http://evil.example) ![i](http://e/i.png)",),
    )
    text = render_bench.section_markdown(hostile)
    assert re.search(r"(?<!\\)<script", text) is None
    assert "`@everyone`" in text and "](http" not in text.replace(
        "](https://github.com/o/r/actions/runs/9)", ""
    )


def test_the_help_and_refusals_are_escaped_and_short():
    reply = render_bench.refusal_reply("'@team' is not a suite name", "use /bench help")
    assert "`@team`" in reply and reply.count("\n") == 2
    assert "`/bench ack REASON`" in render_bench.help_reply(("verify-step",), ("a", "b"), 50)


def test_the_section_fits_its_budget_with_any_number_of_large_reports():
    huge = tuple(SuiteResult(f"s{i}", "regression", "h", "x" * 20_000) for i in range(5))
    text = render_bench.section_markdown(section("completed", results=huge))
    assert len(text) <= render_bench.SECTION_BUDGET and "left out" in text
