"""hyperfine's JSON (``hyperfine --export-json FILE``): one metric per command, its mean wall time
in ms, with the standard error of that mean from the command's timed runs.

The file has ``{"results": [{"command", "mean", "stddev", "times": [...], "exit_codes": [...]}]}``,
times in seconds. A command is named by ``command`` (what ``--command-name`` gave, else the
command line: ``sleep 0.1`` becomes the metric ``sleep_0.1``). A run that exited non-zero (kept by
``--ignore-failure``) makes the file unusable: its times are not those of the work.
"""

from __future__ import annotations

from typing import Any

from .base import (
    FormatError,
    Reading,
    Readings,
    averaged,
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
    of_tool(data, "hyperfine", source)
    results = sequence(required(data, "results", source, ""), source, "results")
    if not results:
        raise FormatError(source, "results", "empty: hyperfine timed no command")
    readings: Readings = {}
    for i, entry in enumerate(results):
        where = f"results[{i}]"
        entry = mapping(entry, source, where)
        name = text(required(entry, "command", source, where), source, f"{where}.command")
        _exited_cleanly(entry, source, where)
        put(
            readings,
            metric_name(name, source, f"{where}.command"),
            _reading(entry, source, where),
            source,
            where,
        )
    return readings


def _exited_cleanly(entry: dict[str, Any], source: str, where: str) -> None:
    codes = entry.get("exit_codes")
    if codes is None:
        return
    for j, code in enumerate(sequence(codes, source, f"{where}.exit_codes")):
        if code != 0:
            raise FormatError(source, f"{where}.exit_codes[{j}]", f"a timed run exited {code!r}")


def _reading(entry: dict[str, Any], source: str, where: str) -> Reading:
    times = entry.get("times")
    if isinstance(times, list) and times:
        return averaged(numbers(times, source, f"{where}.times"), "ms", "lower", MS_PER_S)
    mean = number(required(entry, "mean", source, where), source, f"{where}.mean")
    return Reading(mean * MS_PER_S, "ms", "lower")
