"""The metrics of the serving benchmarks (`vllm-bench-serve`, `sglang-bench-serving`), one name
each whatever the engine, with their words: throughputs, and the time to first token, the
inter-token latency and the end-to-end latency at their median and 99th percentile
(`bot.core.formats.serving`). This module registers no kind of its own.

The output throughput is the headline; the median and p99 of the time to first token and of the
inter-token latency are primary (a slower tail is a regression as much as a slower median); the
end-to-end latency, which those two make up, and the request rate, which follows the output
throughput, are diagnostics. The accept length, where the engine speculates, is primary and is
the same metric as the EAGLE-3 kinds' (`sglang_eagle3`).
"""

from __future__ import annotations

from typing import Literal

from .base import Metric, MetricDeclaration, MetricRole
from .sglang_eagle3 import SglangEagle3

WHAT = {
    "ttft": ("time to first token", "from sending a request to its first token"),
    "itl": ("inter-token latency", "the gap between two tokens of a request, over all requests"),
    "e2e": ("end-to-end latency", "from sending a request to its last token"),
}
QUANTILE_WORDS = {"p50": "median", "p99": "99th percentile"}
DIAGNOSTIC_LATENCIES = ("e2e",)


def _latency(latency: str, quantile: str) -> Metric:
    label, meaning = WHAT[latency]
    role: Literal["primary", "diagnostic"] = "diagnostic" if latency in DIAGNOSTIC_LATENCIES else "primary"
    return Metric(
        MetricDeclaration(unit="ms", better="lower", role=role),
        MetricRole(
            f"{QUANTILE_WORDS[quantile]} {label}",
            "time",
            f"{meaning}; the {QUANTILE_WORDS[quantile]} over the round's requests",
        ),
    )


METRICS: dict[str, Metric] = {
    "output_tok_s": Metric(
        MetricDeclaration(unit="tok/s", better="higher", role="headline"),
        MetricRole("output throughput", "rate", "generated tokens per second, all requests"),
    ),
    "request_s": Metric(
        MetricDeclaration(unit="req/s", better="higher", role="diagnostic"),
        MetricRole("request throughput", "rate", "completed requests per second"),
    ),
    **{
        f"{latency}_{quantile}_ms": _latency(latency, quantile)
        for latency in WHAT
        for quantile in QUANTILE_WORDS
    },
    "accept_length": SglangEagle3.metrics["accept_length"],
}
