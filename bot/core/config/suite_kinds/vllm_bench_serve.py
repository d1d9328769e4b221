"""The `vllm-bench-serve` kind: ``vllm bench serve --save-result --result-filename
$PERFBOT_RESULT_FILE`` against a server the command starts (or finds), read by
`bot.core.formats.vllm_bench_serve`; its metrics are the serving benchmarks' (`serving`)."""

from __future__ import annotations

from typing import Literal

from . import serving
from .base import SuiteKind
from .result_file import ResultFileSuite


class VllmBenchServeSuite(ResultFileSuite):
    """``vllm bench serve``, its result JSON written to ``$PERFBOT_RESULT_FILE``."""

    kind: Literal["vllm-bench-serve"]


class VllmBenchServe(SuiteKind, name="vllm-bench-serve"):
    options = VllmBenchServeSuite
    metrics = serving.METRICS
