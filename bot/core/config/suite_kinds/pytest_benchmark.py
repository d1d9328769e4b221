"""The `pytest-benchmark` kind: ``pytest --benchmark-json=$PERFBOT_RESULT_FILE``, one metric per
benchmark, its mean time per call in ms (`bot.core.formats.pytest_benchmark`)."""

from __future__ import annotations

from typing import Literal

from .base import SuiteKind
from .result_file import ResultFileSuite


class PytestBenchmarkSuite(ResultFileSuite):
    """pytest-benchmark, its JSON written to ``$PERFBOT_RESULT_FILE``."""

    kind: Literal["pytest-benchmark"]


class PytestBenchmark(SuiteKind, name="pytest-benchmark"):
    options = PytestBenchmarkSuite
