"""One unit per metric in a results file: a round (of either side) that reports a metric in
another time unit than the file's is converted into it, value and standard error; a unit that
cannot be converted refuses the round. The rounds are Google Benchmark's real output, the same
benchmark timed with `->Unit(kMillisecond)` and with `->Unit(kMicrosecond)`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.core.config.schema import MetricDeclaration
from bot.core.formats import google_benchmark
from bot.core.judge import results as contract
from bot.core.judge.results import Revision
from bot.runner.results import ResultsFile
from bot.runner.suites.result_file import measurement

OUTPUTS = Path(__file__).parents[1] / "core" / "formats" / "outputs"


def new_file(tmp_path: Path) -> ResultsFile:
    return ResultsFile(
        tmp_path / "r.json", "micro", "acme/engine", Revision(sha="a" * 40), Revision(sha="b" * 40), {}, {}
    )


def add(file: ResultsFile, side, index: int, output: str):
    measured = measurement(google_benchmark.parse((OUTPUTS / output).read_text(), "gb.json"), {})
    return file.add_round(side, index, True, None, measured.values, measured.declarations, measured.spread)


def test_a_side_that_reports_a_benchmark_in_another_unit_is_converted_to_the_files_unit(tmp_path):
    """Before, the head's microseconds were compared with the base's milliseconds as one number:
    `BM_build_dict` read about 100,000% slower."""
    file = new_file(tmp_path)
    add(file, "base", 0, "google_benchmark_unit_ms.json")
    add(file, "head", 0, "google_benchmark_unit_us.json")
    add(file, "head", 1, "google_benchmark_unit_ms.json")
    add(file, "base", 1, "google_benchmark_unit_us.json")
    file.finish("complete")
    loaded = contract.load(file.path.read_text(), "r.json")
    assert loaded.metrics["BM_build_dict/1000"].unit == "ms"
    assert loaded.metrics["BM_sort/64"].unit == "ns"
    us = google_benchmark.parse((OUTPUTS / "google_benchmark_unit_us.json").read_text(), "gb.json")
    head = loaded.values("head", "BM_build_dict/1000")
    assert head[0] == pytest.approx(us["BM_build_dict/1000"].value / 1000)
    assert loaded.spreads("head", "BM_build_dict/1000")[0] == pytest.approx(
        us["BM_build_dict/1000"].se / 1000
    )
    assert loaded.values("base", "BM_sort/64")[1] == pytest.approx(us["BM_sort/64"].value * 1000)
    every = [v for side in ("base", "head") for v in loaded.values(side, "BM_build_dict/1000")]
    assert max(every) / min(every) < 2  # one machine, one work: the same order of magnitude


def test_a_unit_that_does_not_convert_refuses_the_round_saying_which(tmp_path):
    file = new_file(tmp_path)
    declared = {"speed": MetricDeclaration(unit="ms", better="lower")}
    assert file.add_round("base", 0, True, None, {"speed": 2.0}, declared).ok
    other = {"speed": MetricDeclaration(unit="tok/s", better="higher")}
    refused = file.add_round("head", 0, True, None, {"speed": 300.0}, other)
    assert not refused.ok
    assert refused.error == "measured, but not a valid result: metric speed is in tok/s here, in ms before"
    assert json.loads(file.path.read_text())["metrics"]["speed"]["unit"] == "ms"
