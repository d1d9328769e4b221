"""What a check says as a commit status in token mode: statuses know only pending, success,
failure and error, so a benchmark that measured nothing is an error and an informational risk
leads its description with its level instead of hiding it behind a green tick."""

from __future__ import annotations

import pytest

from bot.core.bench import report
from bot.core.checks import Check, commit_status
from bot.core.review.plan import plan
from tests.core.bench.test_judging_and_report import SECTIONS
from tests.core.review.test_plan import facts
from tests.service import diffs


@pytest.mark.parametrize(
    "name, gate, state",
    [
        ("running", True, "pending"),
        ("completed", True, "failure"),
        ("completed", False, "success"),
        ("failed_run", True, "error"),
        ("timed_out", True, "error"),
        ("refused", False, "error"),
        ("cancelled", False, "error"),
        ("superseded", True, "error"),
    ],
)
def test_a_benchmark_that_measured_nothing_is_an_error_not_a_success(name, gate, state):
    status = commit_status(report.check(SECTIONS[name], "pb-1", gate))
    assert status.state == state
    assert status.description == report.check(SECTIONS[name], "pb-1", gate).title


@pytest.mark.parametrize("diff, level", [(diffs.HIGH, "high"), (diffs.MEDIUM, "medium")])
def test_an_informational_risk_leads_its_status_with_the_level(diff, level):
    planned = plan(facts(diff))
    status = commit_status(planned.check)
    assert status.state == "success", "the risk is informational: it never blocks a merge"
    assert status.description.startswith(f"{level.upper()} risk ({planned.score}/100)")
    assert "informational" in status.description


def test_a_quiet_risk_stays_a_plain_success():
    planned = plan(facts(diffs.COLD))
    assert commit_status(planned.check) == (("success", planned.check.title))


def test_descriptions_fit_githubs_limit():
    check = Check(name="n", head_sha="a" * 40, conclusion="neutral", title="x" * 500, summary="")
    assert len(commit_status(check).description) == 140
