"""The one rule for a metric's name, as every door that takes one applies it: a results file
(`bot.core.judge.results`), a format's benchmark names made to fit it (`bot.core.formats`), a
bisect's dispatch (`bot.core.bench.contract`), `/bench bisect --metric` and the action's ``metric``
input. Anything a results file can carry can therefore be bisected.

A name starts with a letter, a digit or ``_`` (never ``-``, so that it can never be read as an
option) and holds at most 100 of letters, digits and ``_ . : / @ + -``: no space, quote, shell
character or Markdown bracket, so that it stays one word everywhere it goes.
"""

from __future__ import annotations

import re

MAX_LENGTH = 100
# As a regular expression both Python and POSIX ERE (bash's `[[ =~ ]]`) read the same way.
NAME = r"[A-Za-z0-9_][A-Za-z0-9_.:/@+-]{0,99}"
PATTERN = f"^{NAME}$"  # the results contract's (pydantic) pattern
METRIC_NAME = re.compile(NAME)
WHAT = "1-100 letters, digits, '_', '.', ':', '/', '@', '+' or '-', starting with a letter, digit or '_'"


def is_metric_name(text: str) -> bool:
    """Whether ``text`` is a metric name a results file may carry."""
    return METRIC_NAME.fullmatch(text) is not None


def optional_pattern() -> str:
    """The action's check of its ``metric`` input, for bash's ``[[ =~ ]]``: empty or a name."""
    return f"^({NAME})?$"
