"""The results file only declares measured metrics; the step summary renders it, escaped."""

from __future__ import annotations

import json
from pathlib import Path

from bot.core.config.schema import MetricDeclaration
from bot.runner.results import ResultsFile, out_path
from bot.runner.summary import markdown

FINGERPRINT = {"gpus": [{"name": "NVIDIA H200"}, {"name": "NVIDIA H200"}], "driver": "580.159.04",
               "torch": {"version": "2.11.0+cu130", "cuda": "13.0", "nccl": "2.28.9"},
               "cpu": {"model": "Intel(R) Xeon(R) Processor"}}


def results(tmp_path: Path) -> ResultsFile:
    file = ResultsFile(tmp_path / "results.json", "verify-step", "acme/engine",
                       {"sha": "a" * 40, "fingerprint": FINGERPRINT}, {"sha": "b" * 40, "fingerprint": FINGERPRINT},
                       {"verify_ms": MetricDeclaration(unit="ms", better="lower"),
                        "never_reported": MetricDeclaration(unit="ms", better="lower")},
                       {"rounds": 3}, started_at="2026-11-30T01:00:00+00:00")
    for index, (base, head) in enumerate([(9.26, 10.46), (9.25, 10.35), (9.27, 11.14)]):
        file.add_round("base", index, True, None, {"verify_ms": base}, {})
        file.add_round("head", index, True, None, {"verify_ms": head, "tok_s": 1.0},
                       {"tok_s": MetricDeclaration(unit="tok/s", better="higher")})
    file.add_round("head", 3, False, "cmd: exit status 1: <script>alert(1)</script>", {"verify_ms": 1.0}, {})
    return file


def test_the_file_declares_exactly_the_metrics_that_were_measured(tmp_path):
    file = results(tmp_path)
    data = json.loads(file.path.read_text())
    assert data["schema"] == "perfbot.results/1"
    assert data["status"] == "running" and data["finished_at"] is None
    assert data["metrics"] == {"tok_s": {"unit": "tok/s", "better": "higher"},
                               "verify_ms": {"unit": "ms", "better": "lower"}}
    failed = data["rounds"][-1]
    assert failed == {"side": "head", "index": 3, "ok": False, "metrics": {},
                      "error": "cmd: exit status 1: <script>alert(1)</script>"}


def test_a_finished_file_says_so_and_leaves_no_temporary_files(tmp_path):
    file = results(tmp_path)
    file.finish("stopped", "interrupted")
    data = json.loads(file.path.read_text())
    assert (data["status"], data["error"]) == ("stopped", "interrupted")
    assert data["finished_at"]
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_the_results_file_passes_the_statistics_side_validation(tmp_path):
    from bot.core.judge import results as contract

    file = results(tmp_path)
    file.finish("complete")
    loaded = contract.load(file.path.read_text())
    assert loaded.suite == "verify-step"


def test_several_suites_get_a_file_each_beside_the_one_named():
    assert out_path(Path("out/results.json"), "verify-step", several=False) == Path("out/results.json")
    assert out_path(Path("out/results.json"), "verify-step", several=True) == Path("out/results.verify-step.json")


def test_the_step_summary_markdown(tmp_path, file_regression):
    file = results(tmp_path)
    file.finish("complete")
    file_regression.check(markdown(file.to_dict()), extension=".md")
