"""Log lines are JSON objects that carry the delivery GUID being handled and keep their own keys."""

import io
import json
import logging

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.service import logs
from bot.service.logs import JsonFormatter, current_delivery


def record(message: str, **extra) -> logging.LogRecord:
    entry = logging.LogRecord("perfbot.test", logging.INFO, __file__, 1, message, (), None)
    entry.__dict__.update(extra)
    return entry


def test_a_line_written_while_handling_a_delivery_names_its_guid():
    token = current_delivery.set("72d3162e-cc78-11e3-81ab-4c9367dc0958")
    try:
        line = json.loads(JsonFormatter().format(record("reviewed", repo="o/r", pr=7)))
    finally:
        current_delivery.reset(token)
    assert line["delivery"] == "72d3162e-cc78-11e3-81ab-4c9367dc0958"
    assert (line["msg"], line["repo"], line["pr"], line["level"]) == ("reviewed", "o/r", 7, "INFO")


def test_a_line_outside_a_delivery_has_no_guid():
    assert "delivery" not in json.loads(JsonFormatter().format(record("started")))


def test_extras_named_like_the_formatters_own_keys_never_replace_them():
    token = current_delivery.set("the-delivery")
    try:
        extra = {"ts": 0, "level": "high", "logger": "mine", "delivery": "other", "exc": "no"}
        line = json.loads(JsonFormatter().format(record("merge recorded", **extra)))
    finally:
        current_delivery.reset(token)
    assert (line["level"], line["logger"], line["msg"], line["delivery"]) == (
        "INFO",
        "perfbot.test",
        "merge recorded",
        "the-delivery",
    )
    assert line["ts"].startswith("20") and "exc" not in line
    assert {key: line[f"extra.{key}"] for key in extra} == extra


def test_a_logger_call_with_a_level_extra_keeps_the_records_level(caplog):
    logger = logging.getLogger("perfbot.test.levels")
    with caplog.at_level(logging.WARNING, logger="perfbot.test.levels"):
        logger.warning("reviewed", extra={"level": "high", "extra.level": "taken"})
    line = json.loads(JsonFormatter().format(caplog.records[-1]))
    assert (line["level"], line["extra.level"], line["extra.extra.level"]) == ("WARNING", "high", "taken")


_KEYS = st.one_of(
    st.sampled_from(["ts", "level", "logger", "delivery", "exc", "extra.level"]),
    st.text(min_size=1, max_size=12),
)


@settings(max_examples=200)
@given(st.dictionaries(_KEYS, st.integers(), max_size=6))
def test_no_extra_ever_changes_the_formatters_keys_or_is_lost(extra):
    extra = {k: v for k, v in extra.items() if k not in _RECORD_ATTRIBUTES}
    line = json.loads(JsonFormatter().format(record("m", **extra)))
    assert (line["level"], line["logger"], line["msg"]) == ("INFO", "perfbot.test", "m")
    assert sorted(v for k, v in line.items() if k not in ("ts", "level", "logger", "msg")) == sorted(
        extra.values()
    )


_RECORD_ATTRIBUTES = set(record("").__dict__) | {"message", "asctime"}


def test_the_handler_writes_to_the_stderr_of_the_moment_not_the_one_it_was_set_up_with(monkeypatch):
    # pytest swaps sys.stderr for each test and closes the old one; a handler holding the stream
    # of the test that configured logging printed "ValueError: I/O operation on closed file"
    # tracebacks whenever a later test's consumer thread logged.
    root = logging.getLogger("perfbot")
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "propagate", root.propagate)
    monkeypatch.setattr(root, "level", root.level)
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stderr", first)
    logs.configure("INFO")
    first.close()
    monkeypatch.setattr("sys.stderr", second)
    logging.getLogger("perfbot.test").info("after the swap")
    assert json.loads(second.getvalue())["msg"] == "after the swap"
    assert "Logging error" not in second.getvalue()
