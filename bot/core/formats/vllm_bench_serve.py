"""``vllm bench serve --save-result --result-filename FILE`` (one JSON object).

Read: ``output_throughput`` (tok/s) and ``request_throughput`` (req/s); the time to first token,
inter-token latency and end-to-end latency at p50 and p99 (`serving`), from the per-request
arrays ``ttfts``, ``itls`` and ``latencies`` (seconds) where ``--save-detailed`` kept them, else
from ``median_ttft_ms``, ``p99_ttft_ms``, ``median_itl_ms``, ``p99_itl_ms`` (and
``median_e2el_ms``, ``p99_e2el_ms`` where ``--percentile-metrics`` asked for ``e2el``); and, with
speculative decoding, ``spec_decode_acceptance_length`` as ``accept_length``. A failed request
makes the file unusable: a ``failed`` count other than 0 (written with or without
``--save-detailed``) or a non-empty entry of ``errors``; so does a run in which no request
``completed``.
"""

from __future__ import annotations

from .base import Readings, load_json, mapping, of_tool
from .serving import (
    accept_length,
    all_succeeded,
    from_summary,
    per_request,
    rate,
)

SUMMARY = {"ttft": "ttft", "itl": "itl", "e2e": "e2el"}  # perfbot's name to vLLM's


def parse(content: str, source: str) -> Readings:
    data = mapping(load_json(content, source), source, "")
    of_tool(data, "serving", source)
    all_succeeded(data, source)
    readings: Readings = {
        "output_tok_s": rate(data, "output_throughput", "tok/s", source),
        "request_s": rate(data, "request_throughput", "req/s", source),
    }
    if "ttfts" in data:
        per_request(readings, data, source, "latencies")
    else:
        for latency, theirs in SUMMARY.items():
            from_summary(
                readings,
                latency,
                {"p50": f"median_{theirs}_ms", "p99": f"p99_{theirs}_ms"},
                data,
                source,
                needed=latency != "e2e",
            )
    accepted = accept_length(data, "spec_decode_acceptance_length", source)
    if accepted is not None:
        readings["accept_length"] = accepted
    return readings
