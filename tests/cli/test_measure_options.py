"""The argparse types of `measure_options`: what they accept and the one-line reason they refuse; and
the one `MeasureOptions` both verbs read them into."""

from __future__ import annotations

import argparse

import pytest

from bot.cli import bisect as cli_bisect
from bot.cli.main import main
from bot.cli.measure_options import positive_float
from bot.runner import bench
from bot.runner.options import MeasureOptions


@pytest.mark.parametrize("text,value", [("30", 30.0), ("0.5", 0.5), ("1e-3", 0.001)])
def test_positive_float_accepts_a_positive_finite_number(text, value):
    assert positive_float(text) == value


@pytest.mark.parametrize(
    "text,message",
    [
        ("0", "expected a positive number, got 0"),
        ("-3", "expected a positive number, got -3"),
        ("nan", "expected a finite number, got nan"),
        ("inf", "expected a finite number, got inf"),
        ("-inf", "expected a finite number, got -inf"),
        ("Infinity", "expected a finite number, got Infinity"),
    ],
)
def test_positive_float_refuses_what_is_not_a_positive_finite_number(text, message):
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        positive_float(text)
    assert str(refused.value) == message


class Captured(Exception):
    """Stops a verb where it would start measuring, holding the options it was about to measure with."""


def test_bench_run_and_bisect_read_the_shared_options_into_one_measure_options(monkeypatch, tmp_path):
    def stop(options, config, progress, *rest):
        raise Captured(options)

    monkeypatch.setattr(bench, "run", stop)
    monkeypatch.setattr(cli_bisect, "bisect", stop)
    config = tmp_path / "perfbot.yml"
    config.write_text("version: 1\n")
    shared = [
        "--repo",
        str(tmp_path),
        "--rounds",
        "3",
        "--warmup",
        "0",
        "--max-rounds",
        "7",
        "--timeout",
        "90",
        "--config",
        str(config),
        "--command",
        "make bench",
        "--allow-dirty",
        "--python",
        "/engine/python",
    ]
    expected = MeasureOptions(
        repo=tmp_path,
        rounds=3,
        warmup=0,
        max_rounds=7,
        timeout=90.0,
        command="make bench",
        allow_dirty=True,
        python="/engine/python",
    )
    with pytest.raises(Captured) as ran:
        main(["bench", "run", "--base", "main", "--head", "topic", "--suite", "command", *shared])
    assert ran.value.args[0].measure == expected
    with pytest.raises(Captured) as bisected:
        main(["bisect", "good", "bad", "--suite", "command", *shared])
    assert bisected.value.args[0].measure == expected
