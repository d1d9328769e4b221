"""Each format's parser reads the real tools' output (or the engines' documented one) into metrics
with units, directions and spreads, and refuses bad files in one line naming the file and field."""

from __future__ import annotations

import importlib
import json
import math
import re
import statistics
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core import formats
from bot.core.formats import (
    google_benchmark,
    hyperfine,
    pytest_benchmark,
    sglang_bench_one_batch,
    sglang_bench_serving,
    vllm_bench_serve,
)
from bot.core.formats.base import FormatError, mean_and_se, quantile, quantile_se
from bot.core.judge.results import METRIC_NAME

OUTPUTS = Path(__file__).parent / "outputs"
# Every format of the package, found as its modules with a `parse` (a new format is tested by the
# properties below without being listed here).
PARSERS = {
    path.stem: module.parse
    for path in sorted(Path(formats.__file__).parent.glob("*.py"))
    if hasattr(module := importlib.import_module(f"{formats.__name__}.{path.stem}"), "parse")
}
# A real file of each format, which the tests below change one value of.
SAMPLE = {
    "pytest_benchmark": "pytest_benchmark.json",
    "google_benchmark": "google_benchmark_repetitions.json",
    "hyperfine": "hyperfine.json",
    "vllm_bench_serve": "vllm_bench_serve_detailed.json",
    "sglang_bench_serving": "sglang_bench_serving_summary.jsonl",
    "sglang_bench_one_batch": "sglang_bench_one_batch.jsonl",
}


def test_every_format_has_a_sample_of_its_tools_output():
    assert set(SAMPLE) == set(PARSERS) and len(PARSERS) >= 1
    for name, parse in PARSERS.items():
        assert parse(read(SAMPLE[name]), "f"), name


def read(name: str) -> str:
    return (OUTPUTS / name).read_text()


def data(name: str):
    return json.loads(read(name))


def test_pytest_benchmark_gives_each_benchmarks_mean_in_ms_with_its_standard_error():
    readings = pytest_benchmark.parse(read("pytest_benchmark.json"), "out.json")
    assert set(readings) == {"test_sort_10", "test_sort_1000", "test_sum"}
    stats = data("pytest_benchmark.json")["benchmarks"][0]["stats"]
    sort10 = readings["test_sort_10"]
    assert (sort10.unit, sort10.better, sort10.calls) == ("ms", "lower", stats["rounds"])
    assert sort10.value == pytest.approx(stats["mean"] * 1000)
    assert sort10.se == pytest.approx(stats["stddev"] / math.sqrt(stats["rounds"]) * 1000)


def test_pytest_benchmark_names_clashing_benchmarks_by_their_full_names():
    file = data("pytest_benchmark.json")
    for entry in file["benchmarks"]:
        entry["name"] = "test_same"
    readings = pytest_benchmark.parse(json.dumps(file), "out.json")
    assert set(readings) == {
        "test_bench_demo.py::test_sort_10",
        "test_bench_demo.py::test_sort_1000",
        "test_bench_demo.py::test_sum",
    }


def test_google_benchmark_repetitions_give_their_mean_and_its_standard_error():
    readings = google_benchmark.parse(read("google_benchmark_repetitions.json"), "gb.json")
    assert set(readings) == {"sort_list/64", "sort_list/512", "sum_range"}
    times = [
        b["real_time"]
        for b in data("google_benchmark_repetitions.json")["benchmarks"]
        if b["run_name"] == "sort_list/64" and b["run_type"] == "iteration"
    ]
    reading = readings["sort_list/64"]
    assert (reading.unit, reading.calls) == ("ns", 3)
    assert reading.value == pytest.approx(statistics.mean(times))
    assert reading.se == pytest.approx(statistics.stdev(times) / math.sqrt(3))
    assert readings["sum_range"].unit == "us"


def test_google_benchmark_aggregates_only_give_the_mean_aggregate_and_the_stddev_over_repetitions():
    readings = google_benchmark.parse(read("google_benchmark_aggregates.json"), "gb.json")
    entries = {
        (b["run_name"], b["aggregate_name"]): b
        for b in data("google_benchmark_aggregates.json")["benchmarks"]
    }
    reading = readings["sort_list/512"]
    assert reading.value == pytest.approx(entries["sort_list/512", "mean"]["real_time"])
    assert reading.se == pytest.approx(entries["sort_list/512", "stddev"]["real_time"] / math.sqrt(3))
    cpu = google_benchmark.parse(read("google_benchmark_aggregates.json"), "gb.json", clock="cpu")
    assert cpu["sort_list/512"].value == pytest.approx(entries["sort_list/512", "mean"]["cpu_time"])


def test_a_single_google_benchmark_run_has_no_spread():
    reading = google_benchmark.parse(read("google_benchmark_single.json"), "gb.json")["sort_list/64"]
    assert reading.se is None and reading.calls is None


def test_hyperfine_gives_each_commands_mean_wall_time_in_ms_from_its_runs():
    readings = hyperfine.parse(read("hyperfine.json"), "hf.json")
    times = data("hyperfine.json")["results"][1]["times"]
    assert set(readings) == {"short", "long"}
    assert readings["long"].value == pytest.approx(statistics.mean(times) * 1000)
    assert readings["long"].se == pytest.approx(statistics.stdev(times) / math.sqrt(len(times)) * 1000)
    assert readings["long"].value > readings["short"].value


def test_vllm_detailed_results_give_p50_and_p99_from_the_per_request_arrays():
    file = data("vllm_bench_serve_detailed.json")
    readings = vllm_bench_serve.parse(json.dumps(file), "vllm.json")
    assert set(readings) == {
        "output_tok_s",
        "request_s",
        "ttft_p50_ms",
        "ttft_p99_ms",
        "itl_p50_ms",
        "itl_p99_ms",
        "e2e_p50_ms",
        "e2e_p99_ms",
    }
    # perfbot's quantiles are computed as vLLM computes its own (numpy's percentile), in ms.
    assert readings["ttft_p50_ms"].value == pytest.approx(np.percentile(file["ttfts"], 50) * 1000)
    assert readings["ttft_p99_ms"].value == pytest.approx(np.percentile(file["ttfts"], 99) * 1000)
    assert readings["itl_p99_ms"].value == pytest.approx(
        np.percentile(np.concatenate(file["itls"]), 99) * 1000
    )
    assert readings["e2e_p50_ms"].value == pytest.approx(np.median(file["latencies"]) * 1000)
    assert readings["ttft_p50_ms"].calls == 200 and readings["itl_p50_ms"].calls == 200 * 7
    assert readings["ttft_p50_ms"].se > 0
    assert (readings["output_tok_s"].unit, readings["output_tok_s"].better) == ("tok/s", "higher")


def test_vllm_summary_results_give_vllms_own_quantiles_and_the_accept_length():
    readings = vllm_bench_serve.parse(read("vllm_bench_serve_summary_spec.json"), "vllm.json")
    assert "e2e_p50_ms" not in readings  # --percentile-metrics did not ask for e2el
    assert readings["itl_p50_ms"].se is None
    assert (readings["accept_length"].value, readings["accept_length"].better) == (2.85, "higher")


def test_a_failed_request_refuses_the_file_naming_it():
    with pytest.raises(FormatError, match=r"^vllm.json: errors\[3\]: a request failed"):
        vllm_bench_serve.parse(read("vllm_bench_serve_failed.json"), "vllm.json")


def test_sglang_bench_serving_reads_the_last_line_with_its_details():
    readings = sglang_bench_serving.parse(read("sglang_bench_serving.jsonl"), "sg.jsonl")
    last = json.loads(read("sglang_bench_serving.jsonl").splitlines()[-1])
    assert readings["ttft_p99_ms"].value == pytest.approx(last["p99_ttft_ms"])
    assert readings["ttft_p99_ms"].calls == 200
    assert readings["e2e_p50_ms"].value == pytest.approx(last["median_e2e_latency_ms"])
    assert readings["accept_length"].value == 3.1
    summary = sglang_bench_serving.parse(read("sglang_bench_serving_summary.jsonl"), "sg.jsonl")
    assert "accept_length" not in summary and summary["itl_p50_ms"].se is None


def test_sglang_one_batch_names_each_case_and_reports_the_accept_length_separately():
    static = sglang_bench_one_batch.parse(read("sglang_bench_one_batch.jsonl"), "ob.jsonl")
    assert set(static) == {
        f"bs{bs}_in128_out8/{m}"
        for bs in (1, 8)
        for m in ("prefill_ms", "decode_ms", "total_ms", "overall_tok_s")
    }
    assert static["bs8_in128_out8/decode_ms"].value == pytest.approx(1000 * (0.0061 + 0.0032))
    server = sglang_bench_one_batch.parse(read("sglang_bench_one_batch_server.jsonl"), "ob.jsonl")
    assert set(server) == {"latency_ms", "ttft_ms", "gen_tok_s", "overall_tok_s", "accept_length"}
    assert (server["accept_length"].value, server["ttft_ms"].value) == (2.74, pytest.approx(46.9))


def test_no_accept_length_without_speculation():
    line = json.loads(read("sglang_bench_one_batch_server.jsonl")) | {"acc_length": -1}
    assert "accept_length" not in sglang_bench_one_batch.parse(json.dumps(line), "ob.jsonl")


@pytest.mark.parametrize(
    ("parser", "file", "message"),
    [
        (
            google_benchmark.parse,
            "google_benchmark_error.json",
            r"^gb: benchmarks\[0\].error_occurred: the benchmark failed: no GPU on this machine$",
        ),
        (
            hyperfine.parse,
            "hyperfine_failed.json",
            r"^gb: results\[0\].exit_codes\[0\]: a timed run exited 1$",
        ),
    ],
)
def test_a_failed_benchmark_refuses_the_file(parser, file, message):
    with pytest.raises(FormatError, match=message):
        parser(read(file), "gb")


@pytest.mark.parametrize(
    ("parser", "content", "message"),
    [
        (pytest_benchmark.parse, "{", r"^f: not JSON"),
        (pytest_benchmark.parse, "{}", r"^f: benchmarks: missing$"),
        (pytest_benchmark.parse, '{"benchmarks": []}', r"^f: benchmarks: empty"),
        (
            pytest_benchmark.parse,
            '{"benchmarks": [{"name": "t", "stats": {"mean": "x", "rounds": 3}}]}',
            r"^f: benchmarks\[0\].stats.mean: expected a number, got a string$",
        ),
        (
            google_benchmark.parse,
            '{"benchmarks": [{"name": "b", "real_time": 1, "time_unit": "h"}]}',
            r"^f: benchmarks\[0\].time_unit: 'h' is not one of ns, us, ms, s$",
        ),
        (
            hyperfine.parse,
            '{"results": [{"command": "a", "times": [0.1, -1]}]}',
            r"^f: results\[0\].times\[1\]: -1.0 is not a finite number >= 0$",
        ),
        (vllm_bench_serve.parse, '{"request_throughput": 1}', r"^f: output_throughput: missing$"),
        (sglang_bench_serving.parse, '{"a": 1}\nnope\n', r"^f: line 2: not JSON$"),
        (
            sglang_bench_serving.parse,
            '{"output_throughput": 1, "request_throughput": 1, "ttfts": [1, null]}',
            r"^f: line 1: ttfts\[1\]: expected a number, got null$",
        ),
        (
            sglang_bench_one_batch.parse,
            '{"batch_size": 1, "input_len": 8, "output_len": 8}',
            r"^f: line 1: neither bench_one_batch's",
        ),
        (sglang_bench_one_batch.parse, "\n", r"^f: empty: the tool wrote nothing to the file$"),
    ],
)
def test_a_bad_file_is_one_line_naming_the_file_and_the_field(parser, content, message):
    with pytest.raises(FormatError, match=message):
        parser(content, "f")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "benchmarks",
                    "results",
                    "stats",
                    "mean",
                    "rounds",
                    "stddev",
                    "name",
                    "fullname",
                    "data",
                    "times",
                    "command",
                    "run_type",
                    "real_time",
                    "time_unit",
                    "aggregate_name",
                    "repetitions",
                    "run_name",
                    "ttfts",
                    "itls",
                    "latencies",
                    "errors",
                    "output_throughput",
                    "request_throughput",
                    "prefill_latency",
                    "last_gen_throughput",
                    "acc_length",
                    "batch_size",
                    "input_len",
                    "output_len",
                    "exit_codes",
                    "error_occurred",
                ]
            )
            | st.text(max_size=4),
            inner,
            max_size=6,
        )
    ),
    max_leaves=20,
)


def check(parser, content: str) -> None:
    """Whatever ``content`` is, the parser gives valid metrics or one line of FormatError."""
    try:
        readings = parser(content, "out.json")
    except FormatError as error:
        assert "\n" not in str(error) and str(error).startswith("out.json")
        return
    for name, reading in readings.items():
        assert re.match(METRIC_NAME, name)
        assert math.isfinite(reading.value) and reading.value >= 0
        assert reading.se is None or (math.isfinite(reading.se) and reading.se >= 0 and reading.calls)


@settings(max_examples=80)
@given(parser=st.sampled_from(sorted(PARSERS)), value=json_values)
def test_any_json_gives_metrics_or_one_format_error_line(parser, value):
    check(PARSERS[parser], json.dumps(value))


@settings(max_examples=100)
@given(parser=st.sampled_from(sorted(PARSERS)), content=st.text())
def test_any_text_gives_metrics_or_one_format_error_line(parser, content):
    check(PARSERS[parser], content)


@settings(max_examples=100)
@given(parser=st.sampled_from(sorted(PARSERS)), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_a_real_file_with_one_value_replaced_gives_metrics_or_one_format_error_line(parser, seed, data):
    content = read(SAMPLE[parser])
    lines = content.splitlines()
    index = data.draw(st.integers(0, len(lines) - 1))
    replacement = data.draw(st.sampled_from(['"x"', "null", "-1", "1e999", "[]", "{}", "true", "0"]))
    line = lines[index]
    if ":" in line:
        key, _, _ = line.partition(":")
        lines[index] = f"{key}: {replacement}{',' if line.rstrip().endswith(',') else ''}"
    check(PARSERS[parser], "\n".join(lines))


@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=50), st.sampled_from([0.5, 0.99]))
def test_a_quantile_lies_within_the_samples_and_its_error_is_finite(samples, p):
    ordered = sorted(samples)
    assert ordered[0] <= quantile(ordered, p) <= ordered[-1]
    se = quantile_se(ordered, p)
    assert se is None if len(ordered) < 2 else (se is not None and 0 <= se <= (ordered[-1] - ordered[0]))


def test_quantiles_interpolate_between_order_statistics_as_numpy_does():
    ordered = [1.0, 2.0, 4.0, 8.0, 16.0]
    assert quantile(ordered, 0.5) == 4.0
    assert quantile(ordered, 0.99) == pytest.approx(np.percentile(ordered, 99))
    assert quantile(ordered, 0.3) == pytest.approx(np.percentile(ordered, 30))
    assert quantile([7.0], 0.99) == 7.0


def test_a_quantiles_standard_error_spans_the_order_statistics_of_its_rank_interval():
    ordered = [float(x) for x in range(100)]
    # p50 of 100: ranks 50 -/+ 1.96 * 5 = 40.2 .. 59.8, so the 40th and 60th values (from 1).
    assert quantile_se(ordered, 0.5) == pytest.approx((59 - 39) / (2 * 1.959963984540054))
    # p99 of 100: ranks 99 -/+ 1.95 = 97.05 .. 100.95, clipped to the largest value.
    assert quantile_se(ordered, 0.99) == pytest.approx((99 - 96) / (2 * 1.959963984540054))
    assert quantile_se([3.0], 0.5) is None
    assert quantile_se([3.0, 3.0, 3.0], 0.5) == 0


def test_the_mean_comes_with_the_standard_error_of_the_sample():
    mean, se = mean_and_se([1.0, 2.0, 3.0, 6.0])
    assert mean == 3.0
    assert se == pytest.approx(statistics.stdev([1.0, 2.0, 3.0, 6.0]) / 2)
    assert mean_and_se([5.0]) == (5.0, None)


def test_a_google_benchmark_entry_without_run_name_is_named_by_its_name():
    file = {
        "benchmarks": [
            {"name": "BM_copy/64", "iterations": 10, "real_time": 5.0, "cpu_time": 4.0, "time_unit": "ns"}
        ]
    }
    assert google_benchmark.parse(json.dumps(file), "gb.json")["BM_copy/64"].value == 5.0


def without_time_unit(name: str) -> str:
    """Google Benchmark's real output with every row's ``time_unit`` taken out (the tool never
    leaves it out; a hand-edited or converted file may)."""
    file = data(name)
    for row in file["benchmarks"]:
        row.pop("time_unit")
    return json.dumps(file)


def test_a_google_benchmark_file_without_its_time_unit_is_refused_in_one_line():
    with pytest.raises(FormatError, match=r"^gb.json: benchmarks\[0\].time_unit: missing$"):
        google_benchmark.parse(without_time_unit("google_benchmark_unit_ms.json"), "gb.json")


def test_google_benchmark_gives_each_benchmark_in_the_unit_its_file_names():
    """`BM_build_dict/1000` in ms (`->Unit(kMillisecond)`) in one file, in us in the other; the
    results file converts them to one unit (tests/runner/test_results_units.py)."""
    ms = google_benchmark.parse(read("google_benchmark_unit_ms.json"), "gb.json")
    us = google_benchmark.parse(read("google_benchmark_unit_us.json"), "gb.json")
    assert (ms["BM_build_dict/1000"].unit, us["BM_build_dict/1000"].unit) == ("ms", "us")
    assert (ms["BM_sort/64"].unit, us["BM_sort/64"].unit) == ("ns", "us")  # --benchmark_time_unit=us
    # The same work, timed on one machine minutes apart: within a factor 2 once in one unit.
    assert 0.5 < us["BM_build_dict/1000"].value / (ms["BM_build_dict/1000"].value * 1000) < 2


def test_google_benchmark_repetitions_are_the_samples_and_the_aggregate_rows_are_skipped():
    """`--benchmark_repetitions=3`: three iteration rows and four aggregate rows (mean, median,
    stddev, cv) per benchmark; the standard error is of the three repetitions."""
    readings = google_benchmark.parse(read("google_benchmark_unit_ms.json"), "gb.json")
    rows = [
        b["real_time"]
        for b in data("google_benchmark_unit_ms.json")["benchmarks"]
        if b["run_name"] == "BM_sort/4096" and b["run_type"] == "iteration"
    ]
    assert len(rows) == 3
    reading = readings["BM_sort/4096"]
    assert reading.calls == 3
    assert reading.value == pytest.approx(statistics.mean(rows))
    assert reading.se == pytest.approx(statistics.stdev(rows) / math.sqrt(3))


def test_a_google_benchmark_registered_twice_is_refused_not_counted_as_repetitions():
    """Two `BENCHMARK(BM_add)` lines: two rows of `BM_add`, each repetition 0 of 1. Before, such
    rows were merged as repetitions (the standard error shrinking with their number)."""
    with pytest.raises(
        FormatError,
        match=r"^gb.json: benchmarks\[1\]: a second row of 'BM_add' \(repetition 0, first at benchmarks\[0\]\)",
    ):
        google_benchmark.parse(read("google_benchmark_duplicate.json"), "gb.json")


def test_two_runs_of_repetitions_in_one_file_are_refused():
    file = data("google_benchmark_unit_ms.json")
    file["benchmarks"] += file["benchmarks"]
    with pytest.raises(FormatError, match=r"a second row of 'BM_build_dict/1000' \(repetition 0"):
        google_benchmark.parse(json.dumps(file), "gb.json")


@pytest.mark.parametrize(
    ("parser", "file", "message"),
    [
        (
            pytest_benchmark.parse,
            "google_benchmark_repetitions.json",
            "not a pytest-benchmark file: it looks like Google Benchmark's output",
        ),
        (
            pytest_benchmark.parse,
            "hyperfine.json",
            "not a pytest-benchmark file: it looks like hyperfine's output",
        ),
        (
            google_benchmark.parse,
            "pytest_benchmark.json",
            "not a Google Benchmark file: it looks like pytest-benchmark's output",
        ),
        (
            hyperfine.parse,
            "google_benchmark_single.json",
            "not a hyperfine file: it looks like Google Benchmark's output",
        ),
        (
            vllm_bench_serve.parse,
            "pytest_benchmark.json",
            "not a serving benchmark file: it looks like pytest-benchmark's output",
        ),
        (
            google_benchmark.parse,
            "vllm_bench_serve_summary_spec.json",
            "not a Google Benchmark file: it looks like a serving benchmark's output",
        ),
        (
            sglang_bench_serving.parse,
            "sglang_bench_one_batch.jsonl",
            "line 2: not a serving benchmark file: it looks like SGLang bench_one_batch's output",
        ),
        (
            sglang_bench_one_batch.parse,
            "sglang_bench_serving_summary.jsonl",
            "line 1: not a SGLang bench_one_batch file: it looks like a serving benchmark's output",
        ),
    ],
)
def test_a_file_of_another_tool_is_named_as_such(parser, file, message):
    with pytest.raises(FormatError) as refused:
        parser(read(file), "out.json")
    assert str(refused.value) == f"out.json: {message}"


@pytest.mark.parametrize("parser", sorted(PARSERS))
@pytest.mark.parametrize("content", ["", "\n  \n"])
def test_an_empty_file_is_reported_empty_not_as_not_json(parser, content):
    with pytest.raises(FormatError) as refused:
        PARSERS[parser](content, "out.json")
    assert str(refused.value) == "out.json: empty: the tool wrote nothing to the file"


@pytest.mark.parametrize("parser", sorted(PARSERS))
def test_a_file_over_the_size_cap_is_refused_before_it_is_parsed(parser):
    content = " " * 16 * 2**20 + "{}"  # the documented cap, 16 MB
    with pytest.raises(FormatError, match=r"^out.json: 16.0 MB, over the 16 MB a result file may be"):
        PARSERS[parser](content, "out.json")


def serving_counts(name: str, completed: int, failed: int) -> str:
    """The engine's real output (`vllm_bench_serve_summary_spec.json`: 16 requests, all completed)
    with only its counts changed, as a run with failed requests writes them."""
    file = data(name)
    file["completed"], file["failed"] = completed, failed
    return json.dumps(file)


@pytest.mark.parametrize(
    ("completed", "failed", "message"),
    [
        (
            13,
            3,
            r"^v.json: failed: 3 of 16 requests failed; perfbot compares runs whose requests all succeeded$",
        ),
        (0, 16, r"^v.json: failed: 16 of 16 requests failed"),
        (0, 0, r"^v.json: completed: 0: no request completed"),
    ],
)
def test_a_vllm_run_with_failed_requests_is_refused_from_its_counts_without_detail(
    completed, failed, message
):
    """Before, without `--save-detailed` (no `errors` array) the `failed` count went unread: an
    all-failed run was an ok round of zeros, 3 failed of 16 compared as complete."""
    with pytest.raises(FormatError, match=message):
        vllm_bench_serve.parse(
            serving_counts("vllm_bench_serve_summary_spec.json", completed, failed), "v.json"
        )


def test_an_sglang_run_in_which_no_request_completed_is_refused():
    """SGLang's line has `completed` and no `failed`; a run of only failures completes none
    (the real summary line with its count changed)."""
    line = json.loads(read("sglang_bench_serving_summary.jsonl"))
    line["completed"] = 0
    with pytest.raises(FormatError, match=r"^s.jsonl: line 1: completed: 0: no request completed"):
        sglang_bench_serving.parse(json.dumps(line) + "\n", "s.jsonl")
    line["completed"], line["failed"] = 14, 2  # where a version writes the count, it is read
    with pytest.raises(FormatError, match=r"^s.jsonl: line 1: failed: 2 of 16 requests failed"):
        sglang_bench_serving.parse(json.dumps(line) + "\n", "s.jsonl")
