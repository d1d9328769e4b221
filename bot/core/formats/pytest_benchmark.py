"""pytest-benchmark's JSON (``pytest --benchmark-json=FILE``): one metric per benchmark, its mean
time per call in ms, with the standard error of that mean from the benchmark's rounds.

The file has ``{"benchmarks": [{"name", "fullname", "stats": {"mean", "stddev", "rounds", ...,
"data"?}}]}``, times in seconds; ``data`` (each round's time, with ``--benchmark-save-data``) is
used where present. A benchmark is named by its ``name`` (``test_sort[10]`` becomes the metric
``test_sort_10``), by its ``fullname`` where two names would clash.
"""

from __future__ import annotations

import math
from typing import Any

from .base import (
    FormatError,
    Reading,
    Readings,
    averaged,
    count,
    load_json,
    mapping,
    metric_name,
    number,
    numbers,
    of_tool,
    put,
    required,
    sequence,
    text,
)

MS_PER_S = 1000.0


def parse(content: str, source: str) -> Readings:
    data = mapping(load_json(content, source), source, "")
    of_tool(data, "pytest-benchmark", source)
    benchmarks = sequence(required(data, "benchmarks", source, ""), source, "benchmarks")
    if not benchmarks:
        raise FormatError(source, "benchmarks", "empty: did pytest collect any benchmark?")
    entries = [mapping(entry, source, f"benchmarks[{i}]") for i, entry in enumerate(benchmarks)]
    short = [
        text(required(e, "name", source, f"benchmarks[{i}]"), source, f"benchmarks[{i}].name")
        for i, e in enumerate(entries)
    ]
    clash = len({metric_name(n, source, "name") for n in short}) < len(short)
    readings: Readings = {}
    for i, entry in enumerate(entries):
        where = f"benchmarks[{i}]"
        raw = short[i]
        if clash:
            raw = text(required(entry, "fullname", source, where), source, f"{where}.fullname")
        name = metric_name(raw, source, f"{where}.name")
        put(readings, name, _reading(entry, source, where), source, where)
    return readings


def _reading(entry: dict[str, Any], source: str, where: str) -> Reading:
    stats = mapping(required(entry, "stats", source, where), source, f"{where}.stats")
    field = f"{where}.stats"
    if isinstance(stats.get("data"), list) and stats["data"]:
        return averaged(numbers(stats["data"], source, f"{field}.data"), "ms", "lower", MS_PER_S)
    mean = number(required(stats, "mean", source, field), source, f"{field}.mean")
    rounds = count(required(stats, "rounds", source, field), source, f"{field}.rounds")
    if rounds < 2:
        return Reading(mean * MS_PER_S, "ms", "lower")
    stddev = number(required(stats, "stddev", source, field), source, f"{field}.stddev")
    return Reading(mean * MS_PER_S, "ms", "lower", stddev / math.sqrt(rounds) * MS_PER_S, rounds)
