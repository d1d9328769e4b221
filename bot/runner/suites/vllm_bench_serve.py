"""The `vllm-bench-serve` suite: ``vllm bench serve``'s result JSON, throughputs and latency quantiles.

The kind's options: `bot.core.config.suite_kinds.vllm_bench_serve`;
the format: `bot.core.formats.vllm_bench_serve`.
"""

from __future__ import annotations

from bot.core.config.suite_kinds.vllm_bench_serve import VllmBenchServeSuite
from bot.core.formats import vllm_bench_serve as fmt
from bot.core.formats.base import Readings

from .result_file import ResultFileBench


class VllmBenchServeBench(ResultFileBench, kind="vllm-bench-serve"):
    config: VllmBenchServeSuite
    FILE = "vllm-bench-serve.json"

    def read(self, content: str, source: str) -> Readings:
        return fmt.parse(content, source)
