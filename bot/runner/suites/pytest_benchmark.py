"""The `pytest-benchmark` suite: pytest-benchmark's JSON, one metric per benchmark.

The kind's options: `bot.core.config.suite_kinds.pytest_benchmark`;
the format: `bot.core.formats.pytest_benchmark`.
"""

from __future__ import annotations

from bot.core.config.suite_kinds.pytest_benchmark import PytestBenchmarkSuite
from bot.core.formats import pytest_benchmark as fmt
from bot.core.formats.base import Readings

from .result_file import ResultFileBench


class PytestBenchmarkBench(ResultFileBench, kind="pytest-benchmark"):
    config: PytestBenchmarkSuite
    FILE = "pytest-benchmark.json"

    def read(self, content: str, source: str) -> Readings:
        return fmt.parse(content, source)
