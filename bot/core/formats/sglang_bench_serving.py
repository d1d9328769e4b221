"""SGLang's ``python -m sglang.bench_serving --output-file FILE`` (JSON lines, one per run).

The last line is read (each run appends one). Read: ``output_throughput`` (tok/s) and
``request_throughput`` (req/s); the time to first token and the inter-token latency at p50 and
p99 (`serving`), from the per-request arrays ``ttfts`` and ``itls`` (seconds) where
``--output-details`` kept them, else from ``median_ttft_ms``, ``p99_ttft_ms``, ``median_itl_ms``,
``p99_itl_ms``; the end-to-end latency from ``median_e2e_latency_ms`` and ``p99_e2e_latency_ms``
(SGLang keeps no per-request array of it); and ``accept_length`` as SGLang reports it (the
server's average speculative accept length; null without speculation). A failed request (a
non-empty entry of ``errors``, or a ``failed`` count other than 0 where the line has one) makes
the file unusable, and so does a run in which no request ``completed``.
"""

from __future__ import annotations

from .base import FormatError, Readings, load_json_lines, of_tool
from .serving import (
    accept_length,
    all_succeeded,
    from_summary,
    per_request,
    rate,
)


def parse(content: str, source: str) -> Readings:
    where, data = load_json_lines(content, source)[-1]
    try:
        readings = _read(data, source)
    except FormatError as error:
        # Name the line: the field paths of a JSON-lines file are within one of its lines.
        raise FormatError(source, where, str(error).removeprefix(f"{source}: ")) from None
    return readings


def _read(data: dict[str, object], source: str) -> Readings:
    of_tool(data, "serving", source)
    all_succeeded(data, source)
    readings: Readings = {
        "output_tok_s": rate(data, "output_throughput", "tok/s", source),
        "request_s": rate(data, "request_throughput", "req/s", source),
    }
    if "ttfts" in data:
        per_request(readings, data, source, None)
    else:
        from_summary(readings, "ttft", {"p50": "median_ttft_ms", "p99": "p99_ttft_ms"}, data, source, True)
        from_summary(readings, "itl", {"p50": "median_itl_ms", "p99": "p99_itl_ms"}, data, source, True)
    from_summary(
        readings,
        "e2e",
        {"p50": "median_e2e_latency_ms", "p99": "p99_e2e_latency_ms"},
        data,
        source,
        needed=False,
    )
    accepted = accept_length(data, "accept_length", source)
    if accepted is not None:
        readings["accept_length"] = accepted
    return readings
