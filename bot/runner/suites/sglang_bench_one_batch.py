"""The `sglang-bench-one-batch` suite: SGLang's ``bench_one_batch`` or ``bench_one_batch_server``
JSON lines, one set of metrics per case.

The kind's options: `bot.core.config.suite_kinds.sglang_bench_one_batch`;
the format: `bot.core.formats.sglang_bench_one_batch`.
"""

from __future__ import annotations

from bot.core.config.suite_kinds.sglang_bench_one_batch import SglangBenchOneBatchSuite
from bot.core.formats import sglang_bench_one_batch as fmt
from bot.core.formats.base import Readings

from .result_file import ResultFileBench


class SglangBenchOneBatchBench(ResultFileBench, kind="sglang-bench-one-batch"):
    config: SglangBenchOneBatchSuite
    FILE = "sglang-bench-one-batch.jsonl"

    def read(self, content: str, source: str) -> Readings:
        return fmt.parse(content, source)
