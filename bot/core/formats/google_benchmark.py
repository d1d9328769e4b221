"""Google Benchmark's JSON (``--benchmark_format=json`` or ``--benchmark_out=FILE``): one metric
per benchmark run (``run_name``), its real (or CPU) time per iteration in the file's ``time_unit``.

With ``--benchmark_repetitions=N`` the file has N ``iteration`` entries per benchmark: the metric
is their mean, with its standard error from their scatter. With
``--benchmark_report_aggregates_only`` only the ``aggregate`` entries are there: the ``mean``
aggregate, with the ``stddev`` aggregate over the repetitions as its scatter. The other aggregates
(median, cv, BigO, RMS) are not read, and neither are user counters. A benchmark that reported an
error (``error_occurred``) makes the file unusable, and so does a row without its
``time_unit`` (never left out by the tool: the number means nothing without it) or a second row
of one benchmark's repetition (a benchmark registered twice). Each round's unit is the file's;
the results file converts every round of a metric to one unit (`bot.runner.results`).
"""

from __future__ import annotations

import math
from typing import Any, Literal

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
    of_tool,
    put,
    required,
    sequence,
    text,
)

Clock = Literal["real", "cpu"]
UNITS = ("ns", "us", "ms", "s")


def parse(content: str, source: str, clock: Clock = "real") -> Readings:
    data = mapping(load_json(content, source), source, "")
    of_tool(data, "Google Benchmark", source)
    benchmarks = sequence(required(data, "benchmarks", source, ""), source, "benchmarks")
    if not benchmarks:
        raise FormatError(source, "benchmarks", "empty: did the filter match any benchmark?")
    runs: dict[str, list[float]] = {}
    aggregates: dict[str, dict[str, Any]] = {}
    units: dict[str, str] = {}
    where_of: dict[str, str] = {}
    seen: dict[tuple[str, int | None], str] = {}  # (run, repetition_index) to the row that had it
    for i, entry in enumerate(benchmarks):
        where = f"benchmarks[{i}]"
        entry = mapping(entry, source, where)
        if entry.get("error_occurred"):
            message = entry.get("error_message")
            raise FormatError(
                source,
                f"{where}.error_occurred",
                f"the benchmark failed: {message}" if isinstance(message, str) else "the benchmark failed",
            )
        key = "run_name" if "run_name" in entry else "name"  # files before run_name have name only
        run = text(required(entry, key, source, where), source, f"{where}.{key}")
        kind = entry.get("run_type", "iteration")
        if kind == "aggregate":
            which = entry.get("aggregate_name")
            if which not in ("mean", "stddev"):
                continue  # median, cv, BigO, RMS: not what the metric is
        elif kind != "iteration":
            raise FormatError(source, f"{where}.run_type", f"{kind!r} is neither 'iteration' nor 'aggregate'")
        # No default: a file without its unit could be any of four, a factor of up to 10^9 apart.
        unit = required(entry, "time_unit", source, where)
        if unit not in UNITS:
            raise FormatError(source, f"{where}.time_unit", f"{unit!r} is not one of {', '.join(UNITS)}")
        if units.setdefault(run, unit) != unit:
            raise FormatError(
                source, f"{where}.time_unit", f"{run!r} is timed in both {units[run]} and {unit}"
            )
        value = number(required(entry, f"{clock}_time", source, where), source, f"{where}.{clock}_time")
        where_of.setdefault(run, where)
        if kind == "iteration":
            _one_row_per_repetition(entry, run, seen, source, where)
            runs.setdefault(run, []).append(value)
        else:
            aggregates.setdefault(run, {})[str(which)] = (value, entry.get("repetitions"), where)
    readings: Readings = {}
    for run in where_of:
        where = where_of[run]
        reading = _reading(runs.get(run), aggregates.get(run, {}), units[run], source, where)
        put(readings, metric_name(run, source, f"{where}.run_name"), reading, source, where)
    return readings


def _one_row_per_repetition(
    entry: dict[str, Any], run: str, seen: dict[tuple[str, int | None], str], source: str, where: str
) -> None:
    """Rows of one benchmark are its repetitions only where each is a repetition of its own: a
    second row of a repetition index (a benchmark registered twice, two runs' output in one file)
    is refused, lest it be counted as one more sample (and the standard error shrink with them)."""
    index = entry.get("repetition_index")
    index = index if isinstance(index, int) and not isinstance(index, bool) else None
    first = seen.setdefault((run, index), where)
    if first != where:
        again = f"repetition {index}" if index is not None else "a run"
        raise FormatError(
            source,
            where,
            f"a second row of {run!r} ({again}, first at {first}): a benchmark registered twice, or two "
            f"runs' output in one file; repetitions are --benchmark_repetitions",
        )


def _reading(
    times: list[float] | None, aggregates: dict[str, Any], unit: str, source: str, where: str
) -> Reading:
    if times:
        return averaged(times, unit, "lower")
    if "mean" not in aggregates:
        raise FormatError(source, where, "an aggregate without its 'mean' aggregate")
    mean, repetitions, at = aggregates["mean"]
    if "stddev" not in aggregates:
        return Reading(mean, unit, "lower")
    stddev, _, _ = aggregates["stddev"]
    n = count(repetitions, source, f"{at}.repetitions")
    if n < 2:
        return Reading(mean, unit, "lower")
    return Reading(mean, unit, "lower", stddev / math.sqrt(n), n)
