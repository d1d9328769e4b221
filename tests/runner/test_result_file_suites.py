"""The standard tools' suites end to end: the real tool runs in ABBA rounds in a small repository
whose head is slower; an A/A run says unchanged, base against head says regression, and a
round whose file is bad fails in one line naming the file and the field.

The tools come from this machine: hyperfine from Debian's package, pytest-benchmark and Google
Benchmark's Python binding from an interpreter that has them (this one, or the one
``PERFBOT_TEST_BENCH_PYTHON`` names); a test whose tool is missing is skipped, saying which.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.core.config.schema import BenchConfig
from bot.core.config.suite_kinds.google_benchmark import GoogleBenchmarkSuite
from bot.core.config.suite_kinds.hyperfine import HyperfineSuite
from bot.core.config.suite_kinds.pytest_benchmark import PytestBenchmarkSuite
from bot.core.config.suite_kinds.sglang_bench_one_batch import SglangBenchOneBatchSuite
from bot.core.config.suite_kinds.sglang_bench_serving import SglangBenchServingSuite
from bot.core.config.suite_kinds.vllm_bench_serve import VllmBenchServeSuite
from bot.core.judge import results, stats
from bot.runner import bench, fingerprint
from bot.runner.options import MeasureOptions
from bot.runner.progress import Progress
from bot.runner.suites import make_suite
from bot.runner.suites.base import Output, RoundContext, RoundFailed, RoundId

OUTPUTS = Path(__file__).parents[1] / "core" / "formats" / "outputs"
BENCH_PYTHON = os.environ.get("PERFBOT_TEST_BENCH_PYTHON", sys.executable)


@pytest.fixture(autouse=True)
def no_torch_probe(monkeypatch):
    """Asking the interpreter for torch's versions takes seconds and is not what is tested here."""
    monkeypatch.setattr(fingerprint, "python_stack", lambda python: {})


def needs_module(module: str) -> str:
    """The interpreter that has ``module``, or a skip naming it."""
    found = subprocess.run([BENCH_PYTHON, "-c", f"import {module}"], capture_output=True)
    if found.returncode != 0:
        pytest.skip(
            f"{module} is not installed for {BENCH_PYTHON} (set PERFBOT_TEST_BENCH_PYTHON to one that has it)"
        )
    return BENCH_PYTHON


# The smallest change the A/A runs must rule out: the test machine's two cores are shared with
# other work, which moves a round's timings by up to tens of percent when it is busy; the slowdowns
# double the time.
AA_MIN_EFFECT = 0.25


def verdict(repo, base, head, tmp_path, config, *, aa=False, rounds=4, max_rounds=6):
    """Run the suite ``tool`` of ``config`` base against head (or base against itself) and judge it."""
    measure = MeasureOptions(repo=repo, rounds=rounds, warmup=0, max_rounds=max_rounds)
    out = tmp_path / ("aa" if aa else "ab") / "results.json"
    options = bench.BenchOptions(
        base=base, head=None if aa else head, suites=["tool"], out=out, measure=measure, aa=aa
    )
    (outcome,) = bench.run(options, BenchConfig(suites={"tool": config}), Progress(io.StringIO()))
    assert outcome.status == "complete", outcome.error
    loaded = results.load(outcome.path.read_text())
    return stats.decide(loaded, AA_MIN_EFFECT if aa else stats.DEFAULT_MIN_EFFECT), loaded


def assert_aa_unchanged_and_slowdown_regression(git_builder, tmp_path, files, slow, config):
    base = git_builder.commit("base", files)
    head = git_builder.commit("head: slower", slow)
    same, loaded = verdict(git_builder.root, base, head, tmp_path, config, aa=True)
    assert same.verdict == "unchanged", rounds_of(same, loaded)
    slower, loaded = verdict(git_builder.root, base, head, tmp_path, config)
    assert slower.verdict == "regression", rounds_of(slower, loaded)
    return slower, loaded


def rounds_of(judged, loaded) -> list:
    """What a failed assertion shows: each metric's verdict, change and rounds."""
    return [
        (m.name, m.verdict, m.change, loaded.values("base", m.name), loaded.values("head", m.name))
        for m in judged.metrics
    ]


# Each benchmark sleeps: a sleep's length is what the machine's other work changes least (a spin's
# CPU time moved by half between rounds on the shared 2-core test machine).
PYTEST_BENCH = """\
import time
from pathlib import Path

DELAY = float(Path(__file__).with_name("delay.txt").read_text())


def test_step(benchmark):
    benchmark(time.sleep, DELAY)
"""


@pytest.mark.slow
def test_pytest_benchmark_aa_is_unchanged_and_a_slower_head_a_regression(git_builder, tmp_path):
    python = needs_module("pytest_benchmark")
    command = (
        f"{python} -m pytest -q -p no:cacheprovider -p no:randomly bench_step.py "
        '--benchmark-json="$PERFBOT_RESULT_FILE" --benchmark-min-rounds=5 --benchmark-max-time=0.01'
    )
    config = PytestBenchmarkSuite(
        kind="pytest-benchmark", command=command, env={"PYTHONDONTWRITEBYTECODE": "1"}
    )
    judged, loaded = assert_aa_unchanged_and_slowdown_regression(
        git_builder,
        tmp_path,
        {"bench_step.py": PYTEST_BENCH, "delay.txt": "0.05\n"},
        {"delay.txt": "0.1\n"},
        config,
    )
    (step,) = judged.metrics
    assert (step.name, step.unit, step.change) == ("test_step", "ms", pytest.approx(1.0, abs=0.5))
    assert loaded.spreads("base", "test_step") is not None  # the rounds' own scatter weighs them


GBENCH = """\
import time
from pathlib import Path

import google_benchmark as benchmark

DELAY = float(Path(__file__).with_name("delay.txt").read_text())


@benchmark.register
@benchmark.option.unit(benchmark.kMillisecond)
def step(state):
    while state:
        time.sleep(DELAY)


if __name__ == "__main__":
    benchmark.main()
"""


@pytest.mark.slow
def test_google_benchmark_aa_is_unchanged_and_a_slower_head_a_regression(git_builder, tmp_path):
    python = needs_module("google_benchmark")
    command = (
        f"{python} bench_step.py --benchmark_format=json --benchmark_repetitions=3 "
        '--benchmark_min_time=0.005s > "$PERFBOT_RESULT_FILE"'
    )
    config = GoogleBenchmarkSuite(
        kind="google-benchmark", command=command, time="real", env={"PYTHONDONTWRITEBYTECODE": "1"}
    )
    judged, loaded = assert_aa_unchanged_and_slowdown_regression(
        git_builder,
        tmp_path,
        {"bench_step.py": GBENCH, "delay.txt": "0.05\n"},
        {"delay.txt": "0.1\n"},
        config,
    )
    (step,) = judged.metrics
    assert (step.name, step.unit) == ("step", "ms")
    assert loaded.spreads("head", "step") is not None


@pytest.mark.slow
def test_hyperfine_aa_is_unchanged_and_a_slower_head_a_regression(git_builder, tmp_path):
    if shutil.which("hyperfine") is None:
        pytest.skip("hyperfine is not installed (Debian's package hyperfine)")
    command = (
        'hyperfine -N --runs 5 --warmup 1 --export-json "$PERFBOT_RESULT_FILE" '
        '-n step "sleep $(cat delay.txt)"'
    )
    config = HyperfineSuite(kind="hyperfine", command=command)
    judged, _ = assert_aa_unchanged_and_slowdown_regression(
        git_builder, tmp_path, {"delay.txt": "0.05\n"}, {"delay.txt": "0.1\n"}, config
    )
    (step,) = judged.metrics
    assert (step.name, step.unit) == ("step", "ms")


# -- the engines' formats: their documented output (tests/core/formats/outputs), which the
# revision's script writes with its latencies scaled, since the engines need a GPU and a model

EMIT = """\\
import json, os, sys
from pathlib import Path

here = Path(__file__).parent
factor = float((here / "factor.txt").read_text())
# A small, deterministic scatter between rounds, as a real server's would be.
factor *= 1 + 0.01 * ((int(os.environ["PERFBOT_ROUND"]) * 7) % 5 - 2) / 2
text = (here / "sample.out").read_text()
lines = [json.loads(line) for line in text.splitlines() if line.strip()] if sys.argv[1] == "lines" else [json.loads(text)]
SECONDS = ("ttfts", "latencies", "prefill_latency", "median_decode_latency", "total_latency", "latency", "last_ttft")
RATES = ("output_throughput", "request_throughput", "overall_throughput", "last_gen_throughput")
for data in lines:
    for key, value in list(data.items()):
        if key.endswith("_ms") and isinstance(value, float) or key in SECONDS and isinstance(value, float):
            data[key] = value * factor
        elif key in SECONDS:
            data[key] = [v * factor for v in value]
        elif key == "itls":
            data[key] = [[v * factor for v in gaps] for gaps in value]
        elif key in RATES:
            data[key] = value / factor
with open(os.environ["PERFBOT_RESULT_FILE"], "w") as out:
    out.write("\\n".join(json.dumps(d) for d in lines) + "\\n" if sys.argv[1] == "lines" else json.dumps(lines[0]))
"""

ENGINES = {
    "vllm-bench-serve": (VllmBenchServeSuite, "vllm_bench_serve_detailed.json", "object", "ttft_p99_ms"),
    "sglang-bench-serving": (SglangBenchServingSuite, "sglang_bench_serving.jsonl", "lines", "itl_p50_ms"),
    "sglang-bench-one-batch": (
        SglangBenchOneBatchSuite,
        "sglang_bench_one_batch_server.jsonl",
        "lines",
        "ttft_ms",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(ENGINES))
def test_an_engines_documented_output_aa_is_unchanged_and_slower_latencies_a_regression(
    git_builder, tmp_path, kind
):
    options, sample, shape, latency = ENGINES[kind]
    config = options(kind=kind, command=f"{sys.executable} emit.py {shape}")
    files = {"emit.py": EMIT, "sample.out": (OUTPUTS / sample).read_text(), "factor.txt": "1.0\n"}
    judged, loaded = assert_aa_unchanged_and_slowdown_regression(
        git_builder, tmp_path, files, {"factor.txt": "1.5\n"}, config
    )
    moved = {m.name: m for m in judged.metrics}
    assert moved[latency].verdict == "regression" and moved[latency].change == pytest.approx(0.5, abs=0.05)
    assert loaded.metrics[latency].unit == "ms"
    if kind != "sglang-bench-one-batch":
        assert moved["output_tok_s"].verdict == "regression"
        assert loaded.spreads("base", latency) is not None  # from the per-request arrays
    if "accept_length" in moved:
        assert moved["accept_length"].verdict == "unchanged"  # the draft accepts as much as before


# -- what a round makes of the file, good or bad


def round_in(tmp_path) -> RoundContext:
    return RoundContext(tmp_path, tmp_path, "base", RoundId("counted", 0))


def suite_of(kind: str):
    options = {
        "pytest-benchmark": PytestBenchmarkSuite,
        "google-benchmark": GoogleBenchmarkSuite,
        "hyperfine": HyperfineSuite,
        **{k: v[0] for k, v in ENGINES.items()},
    }[kind]
    return make_suite("s", BenchConfig(suites={"s": options(kind=kind, command="true")}))


@pytest.mark.parametrize(
    ("kind", "sample"),
    [
        ("pytest-benchmark", "pytest_benchmark.json"),
        ("google-benchmark", "google_benchmark_aggregates.json"),
        ("hyperfine", "hyperfine.json"),
        ("vllm-bench-serve", "vllm_bench_serve_detailed.json"),
        ("sglang-bench-serving", "sglang_bench_serving.jsonl"),
        ("sglang-bench-one-batch", "sglang_bench_one_batch.jsonl"),
    ],
)
def test_a_round_reads_the_file_the_command_was_told_to_write(tmp_path, kind, sample):
    suite = suite_of(kind)
    [command] = suite.round_commands(round_in(tmp_path))
    target = Path(command.env["PERFBOT_RESULT_FILE"])
    assert target.parent == tmp_path and command.argv == ("bash", "-c", "true")
    target.write_text((OUTPUTS / sample).read_text())
    measured = suite.parse(round_in(tmp_path), [Output("s", 0, "", "")])
    assert measured.values and all(v >= 0 for v in measured.values.values())
    declared = suite.metrics
    # A kind that declares its metrics up front declares each once; the others' come with the round.
    assert set(measured.values) <= set(declared) | set(measured.declarations)
    assert not set(measured.declarations) & set(declared)
    assert set(measured.spread) <= set(measured.values)


def test_a_round_without_its_file_fails_saying_where_to_write_it(tmp_path):
    with pytest.raises(
        RoundFailed,
        match=r"^hyperfine.json: the command wrote no result file "
        r"\(write it to \$PERFBOT_RESULT_FILE\)$",
    ):
        suite_of("hyperfine").parse(round_in(tmp_path), [Output("s", 0, "", "")])


def test_a_bad_file_fails_the_round_in_one_line_naming_the_file_and_field(tmp_path):
    (tmp_path / "vllm-bench-serve.json").write_text(
        json.dumps({"output_throughput": 10, "request_throughput": "2"})
    )
    with pytest.raises(RoundFailed) as failed:
        suite_of("vllm-bench-serve").parse(round_in(tmp_path), [Output("s", 0, "", "")])
    assert str(failed.value) == "vllm-bench-serve.json: request_throughput: expected a number, got a string"


def test_a_result_file_over_the_size_cap_fails_the_round_without_being_read(tmp_path, monkeypatch):
    """A tool's file over 16 MB (vLLM's --save-detailed keeps every generated text: 58-67 MB seen)
    is refused in one line, from its size alone."""
    with (tmp_path / "vllm-bench-serve.json").open("wb") as big:
        big.truncate(17 * 2**20)
    monkeypatch.setattr(Path, "read_text", lambda *a, **k: pytest.fail("the file was read"))
    with pytest.raises(RoundFailed) as failed:
        suite_of("vllm-bench-serve").parse(round_in(tmp_path), [Output("s", 0, "", "")])
    assert str(failed.value) == (
        "vllm-bench-serve.json: 17.0 MB, over the 16 MB a result file may be "
        "(leave out per-item details the comparison does not need)"
    )


def test_the_profiled_pass_runs_the_command_with_a_folder_for_its_trace(tmp_path):
    suite = suite_of("pytest-benchmark")
    [command] = suite.profile_commands(round_in(tmp_path))
    assert command.argv == ("bash", "-c", "true")
    assert Path(command.env["PERFBOT_PROFILE_DIR"]) == tmp_path / "profile"
    assert (tmp_path / "profile").is_dir()
    with pytest.raises(RoundFailed, match="^profile: "):
        suite.parse_profile(round_in(tmp_path), [Output("s", 0, "", "")])  # it wrote no trace
