"""The `sglang-eagle3` suite: the commands it launches and the metrics it derives from SGLang's lines."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from bot.core.config.suite_kinds.sglang_eagle3 import SglangEagle3Suite
from bot.runner.rounds import run_round
from bot.runner.suites.base import RoundContext, RoundFailed, RoundId
from bot.runner.suites.sglang_eagle3 import SglangEagle3Bench, derive, last_case

# One result line per run, in the format bench_one_batch_server documents (last_ttft in seconds).
SPEC_LINE = {
    "run_name": "default",
    "batch_size": 1,
    "input_len": 1024,
    "output_len": 256,
    "latency": 3.1,
    "input_throughput": 9000.0,
    "output_throughput": 88.0,
    "overall_throughput": 400.0,
    "last_ttft": 0.114,
    "last_gen_throughput": 94.0,
    "acc_length": 1.79,
    "cache_hit_rate": None,
}
BASELINE_LINE = {**SPEC_LINE, "last_ttft": 0.110, "last_gen_throughput": 89.0, "acc_length": -1.0}


def config(**extra) -> SglangEagle3Suite:
    return SglangEagle3Suite(
        kind="sglang-eagle3",
        model_path="/models/target",
        draft_model_path="/models/draft",
        tp_size=8,
        num_steps=2,
        eagle_topk=1,
        num_draft_tokens=3,
        **extra,
    )


def test_the_metrics_follow_from_one_speculative_and_one_baseline_line():
    metrics = derive(SPEC_LINE, BASELINE_LINE)
    assert metrics["spec_tok_s"] == 94.0
    assert metrics["baseline_tok_s"] == 89.0
    assert metrics["accept_length"] == 1.79
    assert metrics["cycle_ms"] == pytest.approx(1000 * 1.79 / 94.0)
    assert metrics["spec_speedup"] == pytest.approx(94.0 / 89.0)
    assert metrics["ttft_ms"] == pytest.approx(114.0)
    assert metrics["baseline_ttft_ms"] == pytest.approx(110.0)


def test_a_run_without_speculation_cannot_pass_for_the_eagle3_run():
    with pytest.raises(RoundFailed, match="acc_length"):
        derive(BASELINE_LINE, BASELINE_LINE)


@pytest.mark.parametrize(
    "broken", [{"last_gen_throughput": None}, {"last_gen_throughput": 0}, {"acc_length": "n/a"}]
)
def test_missing_or_impossible_fields_fail_the_round(broken):
    with pytest.raises(RoundFailed):
        derive({**SPEC_LINE, **broken}, BASELINE_LINE)


def test_the_last_line_of_the_result_file_is_the_one_read(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({**SPEC_LINE, "batch_size": 16}) + "\n" + json.dumps(SPEC_LINE) + "\n\n")
    assert last_case(path)["batch_size"] == 1
    path.write_text("garbage\n")
    with pytest.raises(RoundFailed, match="not JSON"):
        last_case(path)


def test_each_round_launches_the_benchmark_with_and_without_eagle3(tmp_path):
    context = RoundContext(tmp_path, tmp_path / "out", "head", RoundId("counted", 3))
    spec, baseline = SglangEagle3Bench(
        "sglang-eagle3", config(extra_args=["--cuda-graph-max-bs", "8"])
    ).round_commands(context)
    assert spec.argv[1:3] == ("-m", "sglang.bench_one_batch_server")
    flags = " ".join(spec.argv)
    for expected in (
        "--model-path /models/target",
        "--tp-size 8",
        "--speculative-algorithm EAGLE3",
        "--speculative-draft-model-path /models/draft",
        "--speculative-num-steps 2",
        "--speculative-eagle-topk 1",
        "--speculative-num-draft-tokens 3",
        "--cuda-graph-max-bs 8",
        f"--result-filename {tmp_path / 'out' / 'eagle3.jsonl'}",
    ):
        assert expected in flags
    assert "--speculative-algorithm" not in baseline.argv
    assert baseline.argv[-1] == str(tmp_path / "out" / "baseline.jsonl")


def test_a_whole_round_reads_what_the_benchmark_module_wrote(tmp_path):
    # SGLang cannot run here: a stand-in module on PYTHONPATH appends the documented lines.
    package = tmp_path / "fake" / "sglang"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "bench_one_batch_server.py").write_text(
        textwrap.dedent(f"""
        import json, sys
        args = sys.argv[1:]
        spec = "--speculative-algorithm" in args
        line = {SPEC_LINE!r} if spec else {BASELINE_LINE!r}
        with open(args[args.index("--result-filename") + 1], "a") as out:
            out.write(json.dumps(line) + "\\n")
    """)
    )
    suite = SglangEagle3Bench(
        "sglang-eagle3", config(python=sys.executable, env={"PYTHONPATH": str(tmp_path / "fake")})
    )
    result = run_round(
        suite, RoundContext(tmp_path, tmp_path / "round", "base", RoundId("counted", 0)), timeout=60
    )
    assert result.ok, result.error
    assert result.metrics["spec_speedup"] == pytest.approx(94 / 89)
