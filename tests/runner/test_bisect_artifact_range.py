"""`bot.runner.bisect_artifact.write` records the range bisected (GOOD..BAD, oldest first) in
``bisect.json``, where the App places the culprit; a range that is not the report's is refused."""

from __future__ import annotations

import json

import pytest

from bot.core.bisect import plan as bisection
from bot.core.bisect import report as bisect_report
from bot.core.bisect.report import BisectError
from bot.core.risk.scoring import RiskReport
from bot.runner import bisect_artifact
from tests.core.bench.test_bisect_artifact import BAD, FIRST, GOOD, SECOND, SUITE, measurement


def report() -> bisect_report.BisectReport:
    blank = RiskReport(score=0, level="none", profile="generic", files=[], signals=[])
    suspects = {sha: bisect_report.Suspect(sha, "subject", blank) for sha in (FIRST, SECOND, BAD)}
    return bisect_report.conclude(
        bisection.Culprit(SECOND, FIRST, 3),
        good=GOOD,
        bad=BAD,
        suite=SUITE,
        metric="step_ms",
        commits=[FIRST, SECOND, BAD],
        suspects=suspects,
        measurements=[measurement("reference", GOOD, BAD, "bad"), measurement("probe", GOOD, SECOND, "bad")],
        confirmation=measurement("confirm", FIRST, SECOND, "bad", 1.25),
    )


def test_the_range_is_written_and_the_culprit_is_placed_in_it_on_reading(tmp_path):
    bisect_artifact.write(report(), tmp_path, {}, commits=[FIRST, SECOND, BAD])
    written = json.loads((tmp_path / "bisect.json").read_text())
    assert written["range"] == [FIRST, SECOND, BAD]
    status, markdown = bisect_artifact.read_folder(tmp_path)
    assert status == "confirmed", markdown


def test_without_a_range_the_report_is_as_before(tmp_path):
    bisect_artifact.write(report(), tmp_path, {})
    assert "range" not in json.loads((tmp_path / "bisect.json").read_text())


@pytest.mark.parametrize(
    "commits",
    [[FIRST, BAD], [FIRST, SECOND], [FIRST, "e" * 40, BAD], []],
    ids=["short", "end", "culprit", "empty"],
)
def test_a_range_that_is_not_the_reports_is_refused(tmp_path, commits):
    with pytest.raises(BisectError):
        bisect_artifact.write(report(), tmp_path, {}, commits=commits)
    assert not (tmp_path / "bisect.json").exists()
