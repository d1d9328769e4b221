"""What the serving benchmarks (``vllm bench serve``, SGLang's ``bench_serving``) have in common:
the metrics read from their results, by name, and how per-request arrays become them.

Each latency is compared at its median (p50) and its 99th percentile (p99), not only its mean:
where the file has the per-request arrays (vLLM's ``--save-detailed``, SGLang's
``--output-details``), perfbot computes both quantiles from them, each with a standard error that
assumes nothing about the latencies' distribution (`base.quantile_se`), which the statistics use
as the round's own scatter; without the arrays it takes the tool's own summary numbers, and the
rounds alone give the scatter. Inter-token latencies are pooled over all requests' gaps.
"""

from __future__ import annotations

from typing import Any

from .base import FormatError, Reading, Readings, distribution, number, numbers, sequence

MS_PER_S = 1000.0
# The latencies, and the quantiles compared of each.
LATENCIES = ("ttft", "itl", "e2e")
QUANTILES = {"p50": 0.5, "p99": 0.99}


def latency_name(latency: str, quantile: str) -> str:
    return f"{latency}_{quantile}_ms"


def throughput(data: dict[str, Any], key: str, source: str) -> float:
    if key not in data:
        raise FormatError(source, key, "missing")
    return number(data[key], source, key)


def rate(data: dict[str, Any], key: str, unit: str, source: str) -> Reading:
    return Reading(throughput(data, key, source), unit, "higher")


def all_succeeded(data: dict[str, Any], source: str) -> None:
    """A serving run measures the serving of all its requests: the file is refused where its
    counts say some failed (``failed``, which vLLM writes with or without ``--save-detailed``) or
    none completed (``completed``: a run of zeros is no measurement)."""
    failed = data.get("failed")
    completed = data.get("completed")
    tried = failed + completed if isinstance(failed, int) and isinstance(completed, int) else None
    if isinstance(data.get("errors"), list):  # the per-request errors name the first failure
        succeeded(data, source, tried if tried is not None else len(data["errors"]))
    if failed is not None and failed != 0:
        of = f" of {tried}" if tried is not None else ""
        raise FormatError(
            source,
            "failed",
            f"{_show_count(failed)}{of} requests failed; perfbot compares runs whose requests all succeeded",
        )
    if completed is not None and completed == 0:
        raise FormatError(source, "completed", "0: no request completed, there is nothing to compare")


def _show_count(value: Any) -> str:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else repr(value)[:20]


def succeeded(data: dict[str, Any], source: str, total: int) -> None:
    """A serving run in which a request failed measured something else: the file is refused,
    naming the first failure."""
    errors = data.get("errors")
    if errors is None:
        return
    for index, error in enumerate(sequence(errors, source, "errors")):
        if error:
            raise FormatError(
                source,
                f"errors[{index}]",
                f"a request failed ({str(error)[:80]!r}); perfbot compares runs whose "
                f"{total} requests all succeeded",
            )


def from_arrays(readings: Readings, latency: str, samples: list[float], source: str, field: str) -> None:
    """``latency``'s quantiles from per-request samples in seconds."""
    if not samples:
        raise FormatError(source, field, "no per-request values")
    for quantile, p in QUANTILES.items():
        readings[latency_name(latency, quantile)] = distribution(samples, p, "ms", "lower", MS_PER_S)


def per_request(readings: Readings, data: dict[str, Any], source: str, e2e: str | None) -> None:
    """The latencies' quantiles from the per-request arrays: ``ttfts``, ``itls`` (each request's
    gaps, pooled) and ``e2e`` (the key of the end-to-end latencies, where the tool keeps them)."""
    ttfts = numbers(data["ttfts"], source, "ttfts")
    succeeded(data, source, len(ttfts))
    from_arrays(readings, "ttft", ttfts, source, "ttfts")
    if "itls" in data:
        gaps = [gap for request in request_arrays(data, "itls", source) for gap in request]
        from_arrays(readings, "itl", gaps, source, "itls")
    if e2e is not None and e2e in data:
        from_arrays(readings, "e2e", numbers(data[e2e], source, e2e), source, e2e)


def from_summary(
    readings: Readings, latency: str, keys: dict[str, str], data: dict[str, Any], source: str, needed: bool
) -> None:
    """``latency``'s quantiles from the tool's own summary (``keys``: quantile to the file's key);
    a latency the tool was not asked to report is left out unless ``needed``."""
    if not needed and not all(key in data for key in keys.values()):
        return
    for quantile, key in keys.items():
        readings[latency_name(latency, quantile)] = Reading(throughput(data, key, source), "ms", "lower")


def request_arrays(data: dict[str, Any], key: str, source: str) -> list[list[float]]:
    """A per-request array of arrays (the inter-token gaps of each request)."""
    return [
        numbers(item, source, f"{key}[{index}]")
        for index, item in enumerate(sequence(data[key], source, key))
    ]


def accept_length(data: dict[str, Any], key: str, source: str) -> Reading | None:
    """The speculative accept length the tool reported (null or absent without speculation)."""
    value = data.get(key)
    if value is None:
        return None
    return Reading(number(value, source, key), "tokens", "higher")
