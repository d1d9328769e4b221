"""The `sglang-eagle3` suite: SGLang's ``bench_one_batch_server``, with EAGLE-3 and without speculation.

Each round launches the benchmark twice (it starts and stops its own server each time): once with
``--speculative-algorithm EAGLE3`` and the configured draft model, steps, top-k and draft tokens, and
once with the same model and no speculation. Each run appends one JSON line per case to its result
file (``run_name, batch_size, input_len, output_len, latency, input_throughput, output_throughput,
overall_throughput, last_ttft, last_gen_throughput, acc_length, cache_hit_rate``; ``last_ttft`` in
seconds, ``acc_length`` -1 without speculation); the last line of each file is read.

The verdict's headline is the engine's own measured cycle: ``cycle_ms = 1000 * acc_length /
last_gen_throughput``, both numbers SGLang measured in its decode loop. The metrics' units, roles
and words are the kind's (`bot.core.config.suite_kinds.sglang_eagle3`).
"""

from __future__ import annotations

import json
import sys

from bot.core.config.suite_kinds.sglang_eagle3 import SglangEagle3Suite
from bot.core.judge.kineto import Traced
from bot.core.judge.profile import Profile

from .base import (
    PROFILE_DIR,
    BuiltInSuite,
    Command,
    Measurement,
    Output,
    RoundContext,
    RoundFailed,
    finite,
    read_result,
    trace_traced,
)

MODULE = "sglang.bench_one_batch_server"
SPEC_FILE, BASELINE_FILE = "eagle3.jsonl", "baseline.jsonl"


class SglangEagle3Bench(BuiltInSuite, kind="sglang-eagle3"):
    needs_torch = True
    config: SglangEagle3Suite

    def round_commands(self, context: RoundContext) -> list[Command]:
        c = self.config
        common = [
            self.python or sys.executable,
            "-m",
            MODULE,
            "--model-path",
            c.model_path,
            "--tp-size",
            str(c.tp_size),
            "--batch-size",
            str(c.batch_size),
            "--input-len",
            str(c.input_len),
            "--output-len",
            str(c.output_len),
            *c.extra_args,
        ]
        speculative = [
            "--speculative-algorithm",
            "EAGLE3",
            "--speculative-draft-model-path",
            c.draft_model_path,
            "--speculative-num-steps",
            str(c.num_steps),
            "--speculative-eagle-topk",
            str(c.eagle_topk),
            "--speculative-num-draft-tokens",
            str(c.num_draft_tokens),
        ]
        return [
            Command(
                "eagle3",
                (*common, *speculative, "--result-filename", str(context.out_dir / SPEC_FILE)),
                dict(c.env),
            ),
            Command(
                "baseline", (*common, "--result-filename", str(context.out_dir / BASELINE_FILE)), dict(c.env)
            ),
        ]

    def profile_commands(self, context: RoundContext) -> list[Command]:
        """The profiled pass: the EAGLE-3 run once more with SGLang's ``--profile``, its server
        writing torch-profiler traces to ``SGLANG_TORCH_PROFILER_DIR``."""
        eagle3 = self.round_commands(context)[0]
        folder = context.out_dir / PROFILE_DIR
        folder.mkdir(parents=True, exist_ok=True)
        return [
            Command(
                "eagle3-profile",
                (*eagle3.argv, "--profile"),
                {**eagle3.env, "SGLANG_TORCH_PROFILER_DIR": str(folder)},
            )
        ]

    def parse_profile(self, context: RoundContext, outputs: list[Output]) -> Profile:
        return self.parse_traced(context, outputs).profile

    def parse_traced(self, context: RoundContext, outputs: list[Output]) -> Traced:
        # Each tensor-parallel rank writes its own trace; rank 0's stands for them.
        return trace_traced(context, "SGLang's EAGLE-3 decode (bench_one_batch_server --profile)", "TP-0")

    def parse(self, context: RoundContext, outputs: list[Output]) -> Measurement:
        spec = last_case(context.out_dir / SPEC_FILE)
        baseline = last_case(context.out_dir / BASELINE_FILE)
        return Measurement(derive(spec, baseline))


def last_case(path) -> dict:
    """The last JSON line SGLang appended to ``path``."""
    if not path.exists():
        raise RoundFailed(f"bench_one_batch_server wrote no {path.name}")
    lines = [line for line in read_result(path, path.name).splitlines() if line.strip()]
    if not lines:
        raise RoundFailed(f"{path.name} is empty")
    try:
        case = json.loads(lines[-1])
    except ValueError:
        raise RoundFailed(f"{path.name}: last line is not JSON") from None
    if not isinstance(case, dict):
        raise RoundFailed(f"{path.name}: last line is not a JSON object")
    return case


def derive(spec: dict, baseline: dict) -> dict[str, float]:
    """The suite's metrics from one speculative and one baseline result line."""
    spec_tok_s = finite("last_gen_throughput", spec.get("last_gen_throughput"))
    baseline_tok_s = finite("last_gen_throughput", baseline.get("last_gen_throughput"))
    accept_length = finite("acc_length", spec.get("acc_length"))
    if spec_tok_s <= 0 or baseline_tok_s <= 0:
        raise RoundFailed("last_gen_throughput must be positive in both runs")
    if accept_length < 1:
        raise RoundFailed(f"acc_length {accept_length} < 1: was speculation on in the EAGLE-3 run?")
    return {
        "spec_tok_s": spec_tok_s,
        "baseline_tok_s": baseline_tok_s,
        "accept_length": accept_length,
        "cycle_ms": 1000 * accept_length / spec_tok_s,
        "spec_speedup": spec_tok_s / baseline_tok_s,
        "ttft_ms": 1000 * finite("last_ttft", spec.get("last_ttft")),
        "baseline_ttft_ms": 1000 * finite("last_ttft", baseline.get("last_ttft")),
    }
