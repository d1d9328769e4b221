"""The `sglang-bench-one-batch` kind: SGLang's ``bench_one_batch`` or ``bench_one_batch_server``
with ``--result-filename $PERFBOT_RESULT_FILE``, one set of metrics per case, read by
`bot.core.formats.sglang_bench_one_batch` (metric names follow the cases the command runs)."""

from __future__ import annotations

from typing import Literal

from .base import SuiteKind
from .result_file import ResultFileSuite


class SglangBenchOneBatchSuite(ResultFileSuite):
    """SGLang's one-batch benchmark, its JSON lines written to ``$PERFBOT_RESULT_FILE``."""

    kind: Literal["sglang-bench-one-batch"]


class SglangBenchOneBatch(SuiteKind, name="sglang-bench-one-batch"):
    options = SglangBenchOneBatchSuite
