"""The runner writes the results model after every round, declaring only measured metrics and
failing rounds the model refuses; the step summary renders it, escaped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.core.config.schema import MetricDeclaration
from bot.core.judge import results as contract
from bot.core.judge.results import Revision
from bot.core.render.rounds import markdown
from bot.runner.results import ResultsFile, out_path

FINGERPRINT = {
    "gpus": [{"name": "NVIDIA H200"}, {"name": "NVIDIA H200"}],
    "driver": "580.159.04",
    "torch": {"version": "2.11.0+cu130", "cuda": "13.0", "nccl": "2.28.9"},
    "cpu": {"model": "Intel(R) Xeon(R) Processor"},
}


def results(tmp_path: Path) -> ResultsFile:
    file = ResultsFile(
        tmp_path / "results.json",
        "verify-step",
        "acme/engine",
        Revision(sha="a" * 40, fingerprint=FINGERPRINT),
        Revision(sha="b" * 40, fingerprint=FINGERPRINT),
        {
            "verify_ms": MetricDeclaration(unit="ms", better="lower"),
            "never_reported": MetricDeclaration(unit="ms", better="lower"),
        },
        {"rounds": 3},
        started_at="2026-11-30T01:00:00+00:00",
    )
    for index, (base, head) in enumerate([(9.26, 10.46), (9.25, 10.35), (9.27, 11.14)]):
        file.add_round("base", index, True, None, {"verify_ms": base}, {})
        file.add_round(
            "head",
            index,
            True,
            None,
            {"verify_ms": head, "tok_s": 1.0},
            {"tok_s": MetricDeclaration(unit="tok/s", better="higher")},
        )
    file.add_round("head", 3, False, "cmd: exit status 1: <script>alert(1)</script>", {"verify_ms": 1.0}, {})
    return file


def test_the_file_declares_exactly_the_metrics_that_were_measured(tmp_path):
    file = results(tmp_path)
    data = json.loads(file.path.read_text())
    assert data["schema"] == "perfbot.results/1"
    assert data["status"] == "running" and data["finished_at"] is None
    assert data["metrics"] == {
        "tok_s": {"unit": "tok/s", "better": "higher"},
        "verify_ms": {"unit": "ms", "better": "lower"},
    }
    failed = data["rounds"][-1]
    assert failed == {
        "side": "head",
        "index": 3,
        "ok": False,
        "metrics": {},
        "error": "cmd: exit status 1: <script>alert(1)</script>",
    }


def test_a_finished_file_says_so_and_leaves_no_temporary_files(tmp_path):
    file = results(tmp_path)
    file.finish("stopped", "interrupted")
    data = json.loads(file.path.read_text())
    assert (data["status"], data["error"]) == ("stopped", "interrupted")
    assert data["finished_at"]
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_the_results_file_passes_the_statistics_side_validation(tmp_path):
    file = results(tmp_path)
    file.finish("complete")
    loaded = contract.load(file.path.read_text())
    assert loaded.suite == "verify-step"


def test_several_suites_get_a_file_each_beside_the_one_named():
    assert out_path(Path("out/results.json"), "verify-step", several=False) == Path("out/results.json")
    assert out_path(Path("out/results.json"), "verify-step", several=True) == Path(
        "out/results.verify-step.json"
    )


def test_the_step_summary_markdown(tmp_path, file_regression):
    file = results(tmp_path)
    file.finish("complete")
    file_regression.check(markdown(file.snapshot()), extension=".md")


def test_the_file_on_disk_is_the_whole_model_after_every_round(tmp_path):
    file = results(tmp_path)
    written = [file.path.read_text()]
    for index in range(4, 6):
        file.add_round("base", index, True, None, {"verify_ms": 9.3}, {})
        written.append(file.path.read_text())
        assert contract.Results.model_validate_json(written[-1]) == file.snapshot()
    assert len(set(written)) == len(written)
    file.finish("stopped", "interrupted", after={"clocks": {"sm": 1980}})
    loaded = contract.load(file.path.read_text())
    assert loaded == file.snapshot()
    assert loaded.base.fingerprint["after"] == loaded.head.fingerprint["after"] == {"clocks": {"sm": 1980}}
    assert loaded.base.fingerprint["driver"] == FINGERPRINT["driver"]


def test_a_round_whose_metrics_the_model_refuses_fails_and_says_why(tmp_path):
    file = results(tmp_path)
    refused = file.add_round(
        "base", 7, True, None, {"-dash": 1.0}, {"-dash": MetricDeclaration(unit="ms", better="lower")}
    )
    undeclared = file.add_round("base", 8, True, None, {"surprise": 1.0}, {})
    assert not refused.ok and refused.metrics == {}
    assert refused.error == (
        "measured, but not a valid result: metrics.-dash: metric names are 1-100 "
        "characters: letters, digits and _.:/@+-"
    )
    assert (undeclared.ok, undeclared.error) == (
        False,
        "measured, but not a valid result: metric surprise has no unit and direction declared",
    )
    loaded = contract.load(file.path.read_text())
    assert set(loaded.metrics) == {"tok_s", "verify_ms"} and len(loaded.failures("base")) == 2


def test_a_file_without_rounds_is_written_but_cannot_be_judged(tmp_path):
    file = ResultsFile(
        tmp_path / "r.json", "s", "acme/engine", Revision(sha="a" * 40), Revision(sha="b" * 40), {}, {}
    )
    file.finish("failed", "set-up failed")
    assert contract.Results.model_validate_json(file.path.read_text()).status == "failed"
    with pytest.raises(contract.ResultsError, match="^r.json: no rounds for the base side$"):
        contract.load(file.path.read_text(), "r.json")


def test_a_round_s_spread_and_the_mode_a_suite_learned_are_written(tmp_path):
    file = results(tmp_path)
    declared = {"verify_ms": MetricDeclaration(unit="ms", better="lower", role="headline", mode="piecewise")}
    file.add_round(
        "base", 4, True, None, {"verify_ms": 9.3}, declared, {"verify_ms": {"se": 0.01, "calls": 100}}
    )
    file.add_round("head", 4, True, None, {"verify_ms": 9.3}, {}, {"verify_ms": {"se": -1.0, "calls": 100}})
    data = json.loads(file.path.read_text())
    assert data["metrics"]["verify_ms"] == {
        "unit": "ms",
        "better": "lower",
        "role": "headline",
        "mode": "piecewise",
    }
    assert data["rounds"][-2]["spread"] == {"verify_ms": {"se": 0.01, "calls": 100}}
    refused = data["rounds"][-1]
    assert not refused["ok"] and "measured, but not a valid result: spread" in refused["error"]
