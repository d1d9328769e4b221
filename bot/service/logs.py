"""Structured logging: one JSON object per line, carrying the delivery GUID being worked on."""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TextIO

current_delivery: ContextVar[str | None] = ContextVar("current_delivery", default=None)
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}
OWN_KEYS = frozenset({"ts", "level", "logger", "msg", "delivery", "exc"})


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "msg", "delivery", ...extra, "exc"}`` on one line.

    The formatter's own keys always mean what it put there: an ``extra`` named like one of them
    (``extra={"level": "high"}`` for a risk level) is written as ``extra.level`` instead.
    """

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        delivery = current_delivery.get()
        if delivery is not None:
            entry["delivery"] = delivery
        for key, value in record.__dict__.items():
            if key not in _STANDARD:
                entry[_extra_key(key, entry)] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def _extra_key(key: str, entry: dict[str, object]) -> str:
    while key in OWN_KEYS or key in entry:
        key = f"extra.{key}"
    return key


class StderrHandler(logging.StreamHandler):
    """A handler that writes to `sys.stderr` as it is when a line is written, not as it was when
    logging was set up: a test runner swaps the stream for every test (and closes the old one)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass  # always the current sys.stderr


def configure(level: str = "INFO") -> None:
    """Send perfbot's logs to stderr as JSON lines (once per process)."""
    root = logging.getLogger("perfbot")
    if any(isinstance(h.formatter, JsonFormatter) for h in root.handlers):
        return
    handler = StderrHandler()
    handler.setFormatter(JsonFormatter())
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False
