"""A bisection's report is believed only where it places its culprit in GOOD..BAD: its range (the
commits bisected) must be GOOD..BAD's and hold the culprit and every commit it measured. A forged
report naming an older, innocent commit is refused whole."""

from __future__ import annotations

import pytest

from bot.core.bench import bisect_artifact
from tests.core.bench.test_bisect_artifact import (
    BAD,
    FIRST,
    GOOD,
    SECOND,
    artifact,
    culprit_report,
    read,
    results,
)

OLDER, OLDER_PARENT = "e" * 40, "f" * 40  # commits merged before GOOD: an innocent older pull request


def placed() -> dict:
    return {**culprit_report(), "range": [FIRST, SECOND, BAD]}


def forged() -> dict:
    """The report of GOOD..BAD naming OLDER (before GOOD), its confirmation made to match."""
    report = placed()
    report["culprit"] = {**report["culprit"], "sha": OLDER, "parent": OLDER_PARENT}
    report["measurements"][-1] = {**report["measurements"][-1], "base": OLDER_PARENT, "head": OLDER}
    return report


def forged_files(report: dict) -> dict[str, bytes]:
    return artifact(report, **{"confirm.results.json": results(OLDER_PARENT, OLDER)})


def test_a_culprit_placed_in_its_range_is_believed():
    outcome, problems = read(artifact(placed()))
    assert problems == [] and outcome is not None and outcome.culprit == SECOND


def test_a_forged_report_naming_a_commit_outside_good_bad_is_refused():
    outcome, problems = read(forged_files(forged()))
    assert outcome is None
    assert f"bisect.json: its culprit {OLDER[:10]} is not a commit of GOOD..BAD" in problems


@pytest.mark.parametrize(
    ("range_", "says"),
    [
        ([FIRST, SECOND, OLDER, BAD], "its range lists 4 commits (4 distinct), not the 3 it says"),
        ([OLDER, FIRST, BAD], f"its culprit {SECOND[:10]} is not a commit of GOOD..BAD"),
        ([FIRST, SECOND, OLDER], "its range does not end at BAD"),
        ([GOOD, SECOND, BAD], "its range holds GOOD"),
        ([SECOND, SECOND, BAD], "(2 distinct)"),
    ],
)
def test_a_range_that_is_not_good_bad_is_refused(range_, says):
    report = {**placed(), "range": range_}
    outcome, problems = read(artifact(report))
    assert outcome is None and any(says in p for p in problems), problems


def test_a_forged_range_that_takes_the_older_commit_in_is_caught_by_what_it_measured():
    # The forger lists OLDER and drops FIRST to keep the count: the probe of FIRST gives it away.
    report = {**forged(), "range": [OLDER, SECOND, BAD]}
    outcome, problems = read(forged_files(report))
    assert outcome is None
    assert f"bisect.json: its probe run measured {FIRST[:10]}, not a commit of GOOD..BAD" in problems


def test_a_report_without_a_range_is_refused_once_ranges_are_required(monkeypatch):
    monkeypatch.setattr(bisect_artifact, "UNPLACED_CULPRIT_BELIEVED", False)
    outcome, problems = read(forged_files({k: v for k, v in forged().items() if k != "range"}))
    assert outcome is None and "lists no commits of GOOD..BAD" in problems[0]
    outcome, problems = read(artifact(culprit_report()))
    assert outcome is None and f"its culprit {SECOND[:10]} cannot be placed" in problems[0]


def test_a_report_without_a_culprit_needs_no_range(monkeypatch):
    from tests.core.bench.test_bisect_artifact import not_reproduced_report

    monkeypatch.setattr(bisect_artifact, "UNPLACED_CULPRIT_BELIEVED", False)
    outcome, problems = read(artifact(not_reproduced_report()))
    assert problems == [] and outcome is not None and outcome.status == "not_reproduced"
