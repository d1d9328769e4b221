"""`perfbot config validate` answers each mistake in a standard tool's suite in one line naming
its key; a good one is valid."""

from __future__ import annotations

import pytest

from bot.cli.main import main

GOOD = """\
bench:
  suites:
    unit: {kind: pytest-benchmark, command: 'pytest benches --benchmark-json="$PERFBOT_RESULT_FILE"'}
    kernels: {kind: google-benchmark, command: './build/bench --benchmark_out="$PERFBOT_RESULT_FILE"', time: cpu}
    startup: {kind: hyperfine, command: 'hyperfine --export-json "$PERFBOT_RESULT_FILE" "engine --help"'}
    serve: {kind: vllm-bench-serve, command: bash bench/serve.sh, timeout: 1800}
    sgl: {kind: sglang-bench-serving, command: bash bench/serving.sh, setup: pip install -e python}
    batch: {kind: sglang-bench-one-batch, command: bash bench/one_batch.sh, env: {CUDA_VISIBLE_DEVICES: "0"}}
"""


def validate(tmp_path, capsys, text: str) -> tuple[int, str, str]:
    config = tmp_path / "perfbot.yml"
    config.write_text(text)
    code = main(["config", "validate", str(config)])
    out, err = capsys.readouterr()
    return code, out, err.replace(f"{config}: ", "")


def test_a_config_of_every_standard_tool_is_valid(tmp_path, capsys):
    code, out, _ = validate(tmp_path, capsys, GOOD)
    assert code == 0 and "valid" in out


@pytest.mark.parametrize(
    ("suite", "problem"),
    [
        ("{kind: pytest-benchmark}", "bench.suites.x.command: missing (required)"),
        ("{kind: hyperfine, command: ''}", "bench.suites.x.command: String should have at least 1 character"),
        (
            "{kind: google-benchmark, command: b, time: wall}",
            "bench.suites.x.time: 'wall' is not allowed (expected 'real' or 'cpu')",
        ),
        (
            "{kind: vllm-bench-serve, command: b, metrics: {ttft_p50_ms: {better: lower}}}",
            "bench.suites.x.metrics: unknown key",
        ),
        ("{kind: sglang-bench-serving, command: b, python: python3}", "bench.suites.x.python: unknown key"),
        (
            "{kind: sglang-bench-one-batch, command: b, timeout: 0}",
            "bench.suites.x.timeout: Input should be greater than 0",
        ),
        (
            "{kind: pytest_benchmark, command: b}",
            "bench.suites.x.kind: 'pytest_benchmark' is not a suite kind",
        ),
    ],
)
def test_a_mistake_is_one_line_naming_its_key(tmp_path, capsys, suite, problem):
    code, _, err = validate(tmp_path, capsys, f"bench:\n  suites:\n    x: {suite}\n")
    assert code == 2 and "Traceback" not in err
    [line] = err.splitlines()
    assert line.startswith(problem), line
