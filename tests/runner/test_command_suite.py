"""The `command` suite reads metrics from PERFBOT_METRIC lines or a JSON file, and fails bad ones."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.config.schema import MetricDeclaration
from bot.core.config.suite_kinds.command import CommandSuite
from bot.runner.suites.base import Output, RoundContext, RoundFailed, RoundId
from bot.runner.suites.command import CommandBench, parse_json, parse_lines

names = st.from_regex(r"[A-Za-z0-9_.:/-]{1,30}", fullmatch=True).filter(lambda n: n not in ("unit", "better"))
numbers = st.floats(allow_nan=False, allow_infinity=False, width=64)


def suite(**config) -> CommandBench:
    return CommandBench("mine", CommandSuite(kind="command", command="true", **config))


def context(tmp_path) -> RoundContext:
    return RoundContext(tmp_path, tmp_path, "base", RoundId("counted", 0))


@given(name=names, value=numbers, better=st.sampled_from(["lower", "higher"]))
def test_a_well_formed_metric_line_is_read_back_exactly(name, value, better):
    reported = parse_lines(f"noise\nPERFBOT_METRIC {name}={value!r} unit=ms better={better}\nmore noise")
    assert reported == {name: {"value": repr(value), "unit": "ms", "better": better}}


@given(st.text())
def test_any_output_either_parses_or_fails_the_round_cleanly(text):
    with contextlib.suppress(RoundFailed):
        parse_lines(text)


@pytest.mark.parametrize(
    "line",
    [
        "PERFBOT_METRIC",
        "PERFBOT_METRIC unit=ms",
        "PERFBOT_METRIC a=1 b=2",
        "PERFBOT_METRIC a=",
        "PERFBOT_METRIC =3",
        "PERFBOT_METRIC a b",
    ],
)
def test_a_malformed_metric_line_fails_the_round(line):
    with pytest.raises(RoundFailed, match="malformed metric line"):
        parse_lines(line)


def test_lines_that_do_not_start_with_the_marker_are_ignored():
    assert parse_lines("x PERFBOT_METRIC a=1 better=lower\nPERFBOT_METRICS b=2") == {}


def test_a_metric_without_a_direction_fails_unless_the_config_declares_it(tmp_path):
    output = [Output("mine", 0, "PERFBOT_METRIC t=3.5 unit=ms", "")]
    with pytest.raises(RoundFailed, match="better=lower or better=higher"):
        suite().parse(context(tmp_path), output)
    declared = suite(metrics={"t": MetricDeclaration(unit="s", better="lower")})
    measurement = declared.parse(context(tmp_path), output)
    assert measurement.values == {"t": 3.5}
    assert measurement.declarations["t"] == MetricDeclaration(unit="ms", better="lower")


@pytest.mark.parametrize("value", ["nan", "inf", "fast", "true", "-1"])
def test_a_value_that_is_not_a_finite_number_fails_the_round(tmp_path, value):
    with pytest.raises(RoundFailed, match="metric 't'"):
        suite().parse(context(tmp_path), [Output("mine", 0, f"PERFBOT_METRIC t={value} better=lower", "")])


def test_metrics_come_from_the_json_file_the_command_writes(tmp_path):
    (tmp_path / "metrics.json").write_text(
        json.dumps({"metrics": {"tok_s": {"value": 94, "unit": "tok/s", "better": "higher"}, "ms": 19}})
    )
    measurement = suite(metrics={"ms": MetricDeclaration(unit="ms", better="lower")}).parse(
        context(tmp_path), [Output("mine", 0, "", "")]
    )
    assert measurement.values == {"tok_s": 94.0, "ms": 19.0}
    assert measurement.declarations["tok_s"].better == "higher"


@pytest.mark.parametrize(
    "text", ["not json", "[1, 2]", '{"a": {"unit": "ms"}}', '{"a": {"value": 1, "x": 2}}', '{"bad name!": 1}']
)
def test_a_malformed_json_file_fails_the_round(text):
    with pytest.raises(RoundFailed):
        parse_json(text)


def test_no_metrics_at_all_fails_the_round_with_a_hint(tmp_path):
    with pytest.raises(RoundFailed, match="no metrics"):
        suite().parse(context(tmp_path), [Output("mine", 0, "all good!\n", "")])


def test_the_command_learns_where_to_write_its_json(tmp_path):
    (command,) = suite(env={"A": "1"}).round_commands(context(tmp_path))
    assert command.argv == ("bash", "-c", "true")
    assert command.env == {"A": "1", "PERFBOT_METRICS_FILE": str(tmp_path / "metrics.json")}


json_values = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@given(json_values)
def test_any_json_file_either_gives_metric_values_or_fails_the_round(data):
    try:
        reported = parse_json(json.dumps(data))
    except RoundFailed:
        return
    assert all(
        set(fields) <= {"value", "unit", "better"} and "value" in fields for fields in reported.values()
    )
