"""SGLang's one-batch benchmarks' ``--result-filename FILE`` (JSON lines, one per case): the
static ``python -m sglang.bench_one_batch`` and the server-backed ``bench_one_batch_server``.

Each line is one case (``batch_size``, ``input_len``, ``output_len``); where the file has more than
one, each metric's name starts with its case (``bs8_in1024_out256/decode_ms``). Read:

- ``bench_one_batch`` (its lines have ``prefill_latency``): ``prefill_ms`` (``prefill_latency``),
  ``decode_ms`` (``median_decode_latency``, the median step), ``total_ms`` (``total_latency``)
  and ``overall_tok_s`` (``overall_throughput``).
- ``bench_one_batch_server`` (its lines have ``last_gen_throughput``): ``latency_ms``
  (``latency``), ``ttft_ms`` (``last_ttft``, one request's: a diagnostic),
  ``gen_tok_s`` (``last_gen_throughput``, the decode
  speed) and ``overall_tok_s`` (``overall_throughput``); and ``accept_length`` (``acc_length``),
  reported separately, where speculation was on (SGLang writes -1 without it).

Latencies are in seconds in the file and in ms here.
"""

from __future__ import annotations

from typing import Any

from .base import FormatError, Reading, Readings, count, load_json_lines, number, of_tool, put

MS_PER_S = 1000.0
STATIC = {"prefill_ms": "prefill_latency", "decode_ms": "median_decode_latency", "total_ms": "total_latency"}


def parse(content: str, source: str) -> Readings:
    cases = load_json_lines(content, source)
    readings: Readings = {}
    for where, case in cases:
        of_tool(case, "SGLang bench_one_batch", f"{source}: {where}")
        prefix = f"{_case(case, source, where)}/" if len(cases) > 1 else ""
        for name, reading in _read(case, source, where).items():
            put(readings, prefix + name, reading, source, where)
    return readings


def _case(case: dict[str, Any], source: str, where: str) -> str:
    size = [
        count(case.get(key), source, f"{where}.{key}") for key in ("batch_size", "input_len", "output_len")
    ]
    return "bs{}_in{}_out{}".format(*size)


def _read(case: dict[str, Any], source: str, where: str) -> Readings:
    def value(key: str) -> float:
        if key not in case:
            raise FormatError(source, f"{where}.{key}", "missing")
        return number(case[key], source, f"{where}.{key}")

    if "prefill_latency" in case:
        found = {name: Reading(value(key) * MS_PER_S, "ms", "lower") for name, key in STATIC.items()}
    elif "last_gen_throughput" in case:
        found = {
            "latency_ms": Reading(value("latency") * MS_PER_S, "ms", "lower"),
            # One request's time to first token: reported, too noisy to decide the verdict.
            "ttft_ms": Reading(value("last_ttft") * MS_PER_S, "ms", "lower", role="diagnostic"),
        }
        found["gen_tok_s"] = Reading(value("last_gen_throughput"), "tok/s", "higher")
        accepted = case.get("acc_length")
        if accepted is not None and accepted != -1:
            found["accept_length"] = Reading(value("acc_length"), "tokens", "higher")
    else:
        raise FormatError(
            source,
            where,
            "neither bench_one_batch's 'prefill_latency' nor bench_one_batch_server's 'last_gen_throughput'",
        )
    found["overall_tok_s"] = Reading(value("overall_throughput"), "tok/s", "higher")
    return found
