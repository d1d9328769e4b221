"""The `sglang-bench-serving` suite: SGLang's ``bench_serving`` JSON lines: throughputs and latency
quantiles.

The kind's options: `bot.core.config.suite_kinds.sglang_bench_serving`;
the format: `bot.core.formats.sglang_bench_serving`.
"""

from __future__ import annotations

from bot.core.config.suite_kinds.sglang_bench_serving import SglangBenchServingSuite
from bot.core.formats import sglang_bench_serving as fmt
from bot.core.formats.base import Readings

from .result_file import ResultFileBench


class SglangBenchServingBench(ResultFileBench, kind="sglang-bench-serving"):
    config: SglangBenchServingSuite
    FILE = "sglang-bench-serving.jsonl"

    def read(self, content: str, source: str) -> Readings:
        return fmt.parse(content, source)
