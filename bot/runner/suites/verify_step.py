"""The `verify-step` suite: runs `bot.runner.verify_step_bench` once per round in the revision's worktree,
with the engine's interpreter."""

from __future__ import annotations

import json
import sys

from bot.core.config.schema import MetricDeclaration, VerifyStepSuite

from .. import verify_step_bench
from .base import BuiltInSuite, Command, Measurement, Output, RoundContext, RoundFailed, finite

RESULT_FILE = "verify_step.json"

METRICS = {
    "verify_graph_ms": MetricDeclaration(unit="ms", better="lower"),
    "verify_piecewise_ms": MetricDeclaration(unit="ms", better="lower"),
    "verify_eager_ms": MetricDeclaration(unit="ms", better="lower"),
    "draft_ms": MetricDeclaration(unit="ms", better="lower"),
    "cycle_ms": MetricDeclaration(unit="ms", better="lower"),
    "tok_s": MetricDeclaration(unit="tok/s", better="higher"),
    "allreduce_verify_us": MetricDeclaration(unit="us", better="lower"),
    "allreduce_draft_us": MetricDeclaration(unit="us", better="lower"),
}


class VerifyStepBench(BuiltInSuite):
    METRICS = METRICS
    config: VerifyStepSuite

    def round_commands(self, context: RoundContext) -> list[Command]:
        c = self.config
        argv = ["--out", str(context.out_dir / RESULT_FILE), "--pythonpath", str(context.worktree),
                "--preset", c.preset, "--device", c.device, "--world-size", str(c.world_size),
                "--iters", str(c.iters), "--warmup-iters", str(c.warmup_iters), "--dtype", c.dtype]
        if c.timeout:
            argv += ["--timeout", str(c.timeout)]
        if not c.cuda_graphs:
            argv.append("--no-cuda-graphs")
        if c.allreduce:
            argv += ["--allreduce", c.allreduce]
        for key, value in sorted(c.shape.items()):
            argv += [f"--{key.replace('_', '-')}", str(value)]
        if c.accept_length is not None:
            argv += ["--accept-length", str(c.accept_length)]
        return [Command(self.name, tuple(verify_step_bench.command(self.python or sys.executable, *argv)),
                        dict(c.env))]

    def parse(self, context: RoundContext, outputs: list[Output]) -> Measurement:
        path = context.out_dir / RESULT_FILE
        if not path.exists():
            raise RoundFailed(f"the benchmark wrote no {RESULT_FILE}")
        try:
            metrics = json.loads(path.read_text())["metrics"]
        except (ValueError, KeyError, TypeError):
            raise RoundFailed(f"{RESULT_FILE}: not the benchmark's JSON") from None
        unknown = set(metrics) - set(METRICS)
        if unknown or not metrics:
            raise RoundFailed(f"{RESULT_FILE}: unexpected metrics {sorted(unknown)}")
        return Measurement({name: finite(name, value) for name, value in metrics.items()})
