"""What the sandbox says of the watch and the calibration once its history is replayed, from the
dashboard's JSON answers: it waits for the case of a merge that regressed until its culprit is
named, and says why there is no case in its quick mode."""

from __future__ import annotations

import pytest

from bot.sandbox import outcome
from bot.sandbox.session import Options, Sandbox, SandboxError
from tests.support.serving import free_port

BOT = "http://127.0.0.1:8010"
SLOW = "3e4bb76d9da013e8b68744a70392fbfbc90e4881"


def merge(number: int, verdict: str | None) -> dict:
    return {"number": number, "benchmark": {"verdict": verdict} if verdict else None}


def case(state: str, **fields) -> dict:
    return {
        "key": "case-80660da9",
        "number": 6,
        "suite": "verify-step",
        "metric": "cycle_ms",
        "bad": SLOW,
        "state": state,
        "label": {"bisecting": "bisecting", "confirmed": "culprit confirmed"}.get(state, state),
        "culprit": None,
        "culprit_number": None,
        "comment_url": None,
        "note": None,
        **fields,
    }


def test_a_merge_that_regressed_is_waited_for_until_its_culprit_is_named():
    merges = [merge(7, "inconclusive"), merge(6, "regression"), merge(10, "improvement"), merge(3, None)]
    assert [m["number"] for m in outcome.regressed(merges)] == [6]
    assert not outcome.settled([])  # the watch has not looked yet
    assert not outcome.settled([case("detected")])
    assert not outcome.settled([case("bisecting")])
    confirmed = case("confirmed", culprit=SLOW, culprit_number=6)
    assert not outcome.settled([confirmed])  # confirmed, not yet named on its pull request
    named = {**confirmed, "comment_url": "http://127.0.0.1:8011/sandbox/mini-engine/pull/6#issuecomment-1"}
    assert outcome.settled([named])
    assert outcome.settled([case("not_reproduced")])
    assert not outcome.settled([named, case("bisecting")])
    assert outcome.case_lines([named, case("superseded")], BOT) == [
        "Regression case of #6 (verify-step cycle_ms): culprit confirmed, 3e4bb76d9da0 named on #6: "
        f"{BOT}/regressions/case-80660da9"
    ]
    failed = case("failed", label="bisect failed", note="the bisect run measured nothing")
    assert outcome.case_lines([failed], BOT) == [
        "Regression case of #6 (verify-step cycle_ms): bisect failed (the bisect run measured nothing): "
        f"{BOT}/regressions/case-80660da9"
    ]


def test_without_a_verdict_no_case_is_waited_for_and_the_quick_mode_is_named():
    assert outcome.regressed([merge(1, "inconclusive"), merge(2, None)]) == []
    assert outcome.no_case_line(1, 3) == (
        "No regression case: with 1 round per side no merge's benchmark has a verdict (quick mode), "
        "and a case opens for a merge that regressed or a change point with enough points after it"
    )
    assert outcome.no_case_line(3, 3) == "No regression case: no merge's benchmark said regression"


def test_the_calibration_line_counts_the_merges_with_an_outcome():
    merges = [merge(n, "inconclusive") for n in range(1, 9)] + [
        merge(9, "regression"),
        merge(10, "improvement"),
    ]
    calibration = {"all": {"merges": 2, "regressions": 1}}
    assert outcome.calibration_line(calibration, merges, BOT) == (
        f"Calibration:  {BOT}/calibration   (2 merges with an outcome (1 regressed, 1 did not); "
        "8 measured without a clear verdict have none)"
    )
    empty = {"all": {"merges": 0, "regressions": 0}}
    assert outcome.calibration_line(empty, merges[:2], BOT) == (
        f"Calibration:  {BOT}/calibration   (no merge has an outcome yet; "
        "2 measured without a clear verdict have none)"
    )


def test_a_bot_that_does_not_answer_is_said_in_one_line(tmp_path):
    """No traceback when the sandbox's own server is gone by the time it reads the dashboard."""
    sandbox = Sandbox(Options(tmp_path, port=free_port()), say=lambda line: None)
    with pytest.raises(SandboxError) as refused:
        sandbox.conclude()
    said = str(refused.value)
    assert said.startswith(f"{sandbox.bot_url}/api/v1/merges?repo=sandbox/mini-engine: ") and "\n" not in said
    assert said.endswith(f"see {tmp_path.resolve() / 'perfbot.log'}")
