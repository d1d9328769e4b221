"""The `sglang-bench-serving` kind: ``python -m sglang.bench_serving --output-file
$PERFBOT_RESULT_FILE`` against a server the command starts (or finds), read by
`bot.core.formats.sglang_bench_serving`; its metrics are the serving benchmarks' (`serving`)."""

from __future__ import annotations

from typing import Literal

from . import serving
from .base import SuiteKind
from .result_file import ResultFileSuite


class SglangBenchServingSuite(ResultFileSuite):
    """SGLang's ``bench_serving``, its JSON lines written to ``$PERFBOT_RESULT_FILE``."""

    kind: Literal["sglang-bench-serving"]


class SglangBenchServing(SuiteKind, name="sglang-bench-serving"):
    options = SglangBenchServingSuite
    metrics = serving.METRICS
