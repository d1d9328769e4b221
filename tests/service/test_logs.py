"""Log lines are JSON objects that carry the delivery GUID being handled."""

import json
import logging

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
