"""The `hyperfine` kind: ``hyperfine --export-json $PERFBOT_RESULT_FILE``, one metric per timed
command, its mean wall time in ms (`bot.core.formats.hyperfine`)."""

from __future__ import annotations

from typing import Literal

from .base import SuiteKind
from .result_file import ResultFileSuite


class HyperfineSuite(ResultFileSuite):
    """hyperfine, its JSON exported to ``$PERFBOT_RESULT_FILE``."""

    kind: Literal["hyperfine"]


class Hyperfine(SuiteKind, name="hyperfine"):
    options = HyperfineSuite
