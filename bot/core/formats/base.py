"""What every format's parser shares: the reading of one metric, the one-line error that names the
file and the field, and the checks and statistics the parsers apply to a tool's numbers.

A parser takes a file's text and its name and gives `Reading`s by metric name, or raises
`FormatError`; nothing else escapes it, whatever the text (the tests feed it arbitrary input).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

Better = Literal["lower", "higher"]
Role = Literal["headline", "primary", "diagnostic"]
Z95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval
# The results contract's metric names (`bot.core.judge.results.METRIC_NAME`), which a tool's
# benchmark names are made to fit.
_NAME_START = re.compile(r"^[^A-Za-z0-9_]+")
_NAME_OTHER = re.compile(r"[^A-Za-z0-9_.:/@+-]+")
MAX_NAME = 100
# The largest result file read: a summary of thousands of benchmarks, or per-request arrays of
# tens of thousands of requests, is a few MB; beyond this a file is read whole into memory for
# nothing a comparison needs (vLLM's --save-detailed keeps every generated text).
MAX_FILE_BYTES = 16 * 2**20


class FormatError(ValueError):
    """A tool's output that cannot be read: one line naming the file, the field and what is wrong."""

    def __init__(self, source: str, field: str, problem: str):
        where = f"{source}: {field}" if field else source
        super().__init__(" ".join(f"{where}: {problem}".split()))


@dataclass(frozen=True, slots=True)
class Reading:
    """One metric of one round: its value in ``unit``, which direction is better, and, where the
    tool timed many calls or requests, the standard error of the value from their scatter (``se``)
    and how many there were (``calls``). ``role``: the verdict's use of it, where the format says."""

    value: float
    unit: str
    better: Better
    se: float | None = None
    calls: int | None = None
    role: Role | None = None


Readings = dict[str, Reading]


def too_large(size: int, source: str) -> FormatError | None:
    """The error of a result file of ``size`` bytes, where it is over `MAX_FILE_BYTES`."""
    if size <= MAX_FILE_BYTES:
        return None
    return FormatError(
        source,
        "",
        f"{size / 2**20:.1f} MB, over the {MAX_FILE_BYTES // 2**20} MB a result file may be "
        f"(leave out per-item details the comparison does not need)",
    )


def present(text: str, source: str) -> None:
    """`FormatError` for a file too large to read, or one the tool left empty."""
    error = too_large(len(text), source)
    if error is not None:
        raise error
    if not text.strip():
        raise FormatError(source, "", "empty: the tool wrote nothing to the file")


def load_json(text: str, source: str) -> Any:
    """The JSON value of ``text``; `FormatError` where it is none."""
    present(text, source)
    try:
        return json.loads(text)
    except RecursionError:
        raise FormatError(source, "", "nested too deeply to be a result file") from None
    except ValueError as error:
        raise FormatError(source, "", f"not JSON ({error})") from None


def load_json_lines(text: str, source: str) -> list[tuple[str, dict[str, Any]]]:
    """The objects of a JSON-lines file, each with its field path (``line 3``); blank lines skipped."""
    present(text, source)
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            value = json.loads(line)
        except RecursionError:
            raise FormatError(source, where, "nested too deeply to be a result line") from None
        except ValueError:
            raise FormatError(source, where, "not JSON") from None
        found.append((where, mapping(value, source, where)))
    if not found:
        raise FormatError(source, "", "no result lines")
    return found


def looks_like(data: Any) -> str | None:
    """Which tool's output ``data`` (a file's JSON value) looks like, by the fields only that tool
    writes; None where it looks like none of them."""
    if not isinstance(data, dict):
        return None
    first = data.get("benchmarks")
    first = first[0] if isinstance(first, list) and first and isinstance(first[0], dict) else {}
    results = data.get("results")
    if "machine_info" in data or ("stats" in first and "fullname" in first):
        return "pytest-benchmark"
    if "context" in data and ("run_type" in first or "time_unit" in first or "real_time" in first):
        return "Google Benchmark"
    if isinstance(results, list) and results and isinstance(results[0], dict) and "command" in results[0]:
        return "hyperfine"
    if "request_throughput" in data and "completed" in data:
        return "serving"
    if "prefill_latency" in data or "last_gen_throughput" in data:
        return "SGLang bench_one_batch"
    return None


def of_tool(data: Any, tool: str, source: str) -> None:
    """`FormatError` where ``data`` is another tool's output than ``tool``'s (a name `looks_like`
    gives): naming the tool it looks like says more than the first field this format misses."""
    other = looks_like(data)
    if other is not None and other != tool:
        whose = "a serving benchmark's" if other == "serving" else f"{other}'s"
        name = "serving benchmark" if tool == "serving" else tool
        raise FormatError(source, "", f"not a {name} file: it looks like {whose} output")


def mapping(value: Any, source: str, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FormatError(source, field, f"expected an object, got {_kind(value)}")
    return value


def sequence(value: Any, source: str, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise FormatError(source, field, f"expected a list, got {_kind(value)}")
    return value


def required(data: dict[str, Any], key: str, source: str, field: str) -> Any:
    if key not in data:
        raise FormatError(source, _join(field, key), "missing")
    return data[key]


def number(value: Any, source: str, field: str) -> float:
    """``value`` as a finite float >= 0 (times, rates and counts), or `FormatError` naming the field."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FormatError(source, field, f"expected a number, got {_kind(value)}")
    try:
        result = float(value)
    except OverflowError:
        raise FormatError(source, field, "number out of range") from None
    if not math.isfinite(result) or result < 0:
        raise FormatError(source, field, f"{result} is not a finite number >= 0")
    return result


def count(value: Any, source: str, field: str) -> int:
    """``value`` as a whole number >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FormatError(source, field, f"expected a whole number >= 1, got {_show(value)}")
    return value


def text(value: Any, source: str, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise FormatError(source, field, f"expected a name, got {_show(value)}")
    return value


def numbers(value: Any, source: str, field: str) -> list[float]:
    """A list of finite numbers >= 0, each checked (the field names the first bad one)."""
    return [
        number(item, source, f"{field}[{index}]") for index, item in enumerate(sequence(value, source, field))
    ]


def metric_name(raw: str, source: str, field: str) -> str:
    """A tool's benchmark name as a metric name of the results contract: characters it does not
    allow become ``_`` (``test_sort[10]`` is ``test_sort_10``), at most 100 characters."""
    # start-stripped last: stripping '_' can uncover a character a name may not start with ('_/')
    name = _NAME_START.sub("", _NAME_OTHER.sub("_", raw).strip("_"))[:MAX_NAME]
    if not name:
        raise FormatError(source, field, f"{_show(raw)} gives no usable metric name")
    return name


def put(readings: Readings, name: str, reading: Reading, source: str, field: str) -> None:
    """Add a metric; two benchmarks under one name are a mistake the user must see."""
    if name in readings:
        raise FormatError(
            source,
            field,
            f"a second benchmark named {name!r} (names must be unique once made into metric names)",
        )
    readings[name] = reading


def mean_and_se(samples: Sequence[float]) -> tuple[float, float | None]:
    """The mean of ``samples`` and its standard error (None from a single sample)."""
    n = len(samples)
    mean = math.fsum(samples) / n
    if n < 2:
        return mean, None
    variance = math.fsum((x - mean) ** 2 for x in samples) / (n - 1)
    return mean, math.sqrt(variance / n)


def quantile(ordered: Sequence[float], p: float) -> float:
    """The ``p`` quantile of sorted samples, interpolated between order statistics (numpy's default)."""
    position = p * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def quantile_se(ordered: Sequence[float], p: float) -> float | None:
    """The standard error of the ``p`` quantile of sorted samples, free of any assumption about
    their distribution: the order statistics that bound a 95% binomial interval of the quantile's
    rank, their distance over 2 x 1.96. None from fewer than two samples."""
    n = len(ordered)
    if n < 2:
        return None
    reach = Z95 * math.sqrt(n * p * (1 - p))
    low = max(0, math.floor(n * p - reach) - 1)
    high = min(n - 1, math.ceil(n * p + reach) - 1)
    return (ordered[high] - ordered[low]) / (2 * Z95)


def distribution(
    samples: Sequence[float],
    p: float,
    unit: str,
    better: Better,
    scale: float = 1.0,
    role: Role | None = None,
) -> Reading:
    """The ``p`` quantile of per-item samples, with its distribution-free standard error."""
    ordered = sorted(x * scale for x in samples)
    return Reading(quantile(ordered, p), unit, better, quantile_se(ordered, p), len(ordered), role)


def averaged(samples: Sequence[float], unit: str, better: Better, scale: float = 1.0) -> Reading:
    """The mean of per-item samples, with its standard error."""
    mean, se = mean_and_se([x * scale for x in samples])
    return Reading(mean, unit, better, se, len(samples) if se is not None else None)


def _join(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null"}.get(
        type(value), _show(value)
    )


def _show(value: Any) -> str:
    try:
        shown = repr(value)
    except ValueError:  # an integer too long to print
        return "a number too long to print"
    return shown if len(shown) <= 40 else shown[:37] + "..."
