"""The `google-benchmark` kind: a Google Benchmark binary with ``--benchmark_format=json`` (or
``--benchmark_out``), one metric per benchmark run, its time per iteration
(`bot.core.formats.google_benchmark`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import SuiteKind
from .result_file import ResultFileSuite


class GoogleBenchmarkSuite(ResultFileSuite):
    """Google Benchmark, its JSON written to ``$PERFBOT_RESULT_FILE``."""

    kind: Literal["google-benchmark"]
    time: Literal["real", "cpu"] = Field(
        default="real", description="Which time per iteration is the metric: real (wall) or cpu."
    )


class GoogleBenchmark(SuiteKind, name="google-benchmark"):
    options = GoogleBenchmarkSuite
