"""The `google-benchmark` suite: a Google Benchmark binary's JSON, one metric per benchmark run.

The kind's options: `bot.core.config.suite_kinds.google_benchmark`;
the format: `bot.core.formats.google_benchmark`.
"""

from __future__ import annotations

from bot.core.config.suite_kinds.google_benchmark import GoogleBenchmarkSuite
from bot.core.formats import google_benchmark as fmt
from bot.core.formats.base import Readings

from .result_file import ResultFileBench


class GoogleBenchmarkBench(ResultFileBench, kind="google-benchmark"):
    config: GoogleBenchmarkSuite
    FILE = "google-benchmark.json"

    def read(self, content: str, source: str) -> Readings:
        return fmt.parse(content, source, self.config.time)
