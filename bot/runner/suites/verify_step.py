"""The `verify-step` suite: runs its workload (`verify_step_workload`, beside it) once per round in the
revision's worktree, with the engine's interpreter.

Its verdict is about the EAGLE-3 cycle in the mode the engine runs (`graph`): ``cycle_ms`` (the
headline) and ``tok_s`` carry that mode; the metrics' units, roles and words are the kind's
(`bot.core.config.suite_kinds.verify_step`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bot.core.config.suite_kinds.verify_step import VerifyStep, VerifyStepSuite
from bot.core.judge.kineto import Traced
from bot.core.judge.profile import Profile
from bot.core.judge.speculation import SPECULATION_FLOOR

from .. import traces
from . import verify_step_workload
from .base import PROFILE_DIR, BuiltInSuite, Command, Measurement, Output, RoundContext, RoundFailed, finite
from .verify_step_workload import VERIFY_OF_MODE

RESULT_FILE = "verify_step.json"
TRACE_FILE = "trace.json"
READY_FILE = "ready.json"  # a worker's, once it has warmed up

METRICS = VerifyStep.declarations()
# The metrics that follow the mode the engine ran in, which the benchmark's report names.
FOLLOW_THE_MODE = ("cycle_ms", "tok_s", "decode_ms", "baseline_tok_s", "spec_speedup")


class VerifyStepBench(BuiltInSuite, kind="verify-step"):
    needs_torch = True
    gated = True  # its workers and spares wait at ``--gate`` (`RoundContext.gate`)
    config: VerifyStepSuite

    def judging(self) -> dict[str, float]:
        """The configured `speculation_floor`, which the comparison reads from the results file."""
        floor = self.config.speculation_floor
        return {} if floor is None else {SPECULATION_FLOOR: floor}

    def round_commands(self, context: RoundContext) -> list[Command]:
        return [self.command(context)]

    def command(self, context: RoundContext, *extra: str) -> Command:
        c = self.config
        argv = [
            "--out",
            str(context.out_dir / RESULT_FILE),
            "--pythonpath",
            str(context.worktree),
            "--preset",
            c.preset,
            "--device",
            c.device,
            "--world-size",
            str(c.world_size),
            "--cpu-world-size",
            str(c.cpu_world_size),
            "--iters",
            str(c.iters),
            "--target-se",
            str(c.target_se),
            "--warmup-iters",
            str(c.warmup_iters),
            "--dtype",
            c.dtype,
        ]
        if c.verify_modes:
            argv += ["--verify-modes", ",".join(c.verify_modes)]
        if c.timeout:
            argv += ["--timeout", str(c.timeout)]
        if not c.cuda_graphs:
            argv.append("--no-cuda-graphs")
        if c.graph:
            argv += ["--graph", c.graph]
        if c.allreduce:
            argv += ["--allreduce", c.allreduce]
        for key, value in sorted(c.shape.items()):
            argv += [f"--{key.replace('_', '-')}", str(value)]
        if c.accept_length is not None:
            argv += ["--accept-length", str(c.accept_length)]
        argv = verify_step_workload.command(self.python or sys.executable, *argv, *extra)
        return Command(self.name, tuple(argv), dict(c.env))

    def worker_command(self, context: RoundContext) -> Command | None:
        """With ``worker: true``: the benchmark set up once (``--serve``) and warmed up (its model
        built and its graphs captured and run once, untimed: ``--ready``), a round per request."""
        if not self.config.worker:
            return None
        return self.command(context, "--serve", "--ready", str(context.out_dir / READY_FILE), *_gate(context))

    def spare_command(self, context: RoundContext, profiler: bool = False) -> Command | None:
        """With ``worker: true``: the benchmark set up (``--serve``), ready without a warm-up
        (``--ready FILE --cold``); its one round builds and captures as a fresh process's does.
        With ``profiler``: its profiler set up too (``--warm-profiler``), for the profiled pass."""
        if not self.config.worker:
            return None
        ready = ("--serve", "--ready", str(context.out_dir / READY_FILE), "--cold", *_gate(context))
        return self.command(context, *ready, *(("--warm-profiler",) if profiler else ()))

    def worker_request(self, context: RoundContext) -> tuple[dict, Path]:
        out = context.out_dir / RESULT_FILE
        return {"out": str(out)}, out

    def worker_ready(self, context: RoundContext) -> Path | None:
        return context.out_dir / READY_FILE

    def worker_profile_request(self, context: RoundContext) -> tuple[dict, Path] | None:
        """The profiled pass in the worker, after its timed rounds: as ``--profile`` (the same
        cycles, trace and recorded lines), without a process start of its own."""
        out = context.out_dir / RESULT_FILE
        return {"out": str(out), "profile": str(context.out_dir / PROFILE_DIR / TRACE_FILE)}, out

    def round_seconds(self, context: RoundContext) -> dict[str, float]:
        """The workload's ``seconds`` (start, build, capture, run), where its report has them."""
        try:
            seconds = json.loads((context.out_dir / RESULT_FILE).read_text())["seconds"]
            return {str(k): float(v) for k, v in seconds.items() if isinstance(v, int | float)}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}

    def profiles_by_default(self, gpus: bool) -> bool:
        """On where the benchmark runs on a GPU (PyTorch's profiler reads CUPTI there)."""
        return gpus and self.config.device != "cpu"

    def profile_commands(self, context: RoundContext) -> list[Command]:
        trace = context.out_dir / PROFILE_DIR / TRACE_FILE
        return [self.command(context, "--profile", str(trace))]

    def parse_profile(self, context: RoundContext, outputs: list[Output]) -> Profile:
        return self.parse_traced(context, outputs).profile

    def parse_traced(self, context: RoundContext, outputs: list[Output]) -> Traced:
        """The trace's profile and, from the Python calls the workload named (`annotate_trace`), the
        per-step map's entries."""
        try:
            profiled = json.loads((context.out_dir / RESULT_FILE).read_text())["profiled"]
            what = str(profiled["what"])
        except (OSError, ValueError, KeyError, TypeError):
            raise RoundFailed(f"{RESULT_FILE}: the profiled pass wrote no report") from None
        try:
            return traces.read_traced(context.out_dir / PROFILE_DIR / TRACE_FILE, what)
        except traces.TraceUnreadable as error:
            raise RoundFailed(f"profile: {error}") from None

    def parse(self, context: RoundContext, outputs: list[Output]) -> Measurement:
        path = context.out_dir / RESULT_FILE
        if not path.exists():
            raise RoundFailed(f"the benchmark wrote no {RESULT_FILE}")
        try:
            report = json.loads(path.read_text())
            metrics, spread, mode = report["metrics"], report.get("spread", {}), report.get("graph")
        except (ValueError, KeyError, TypeError, AttributeError):
            raise RoundFailed(f"{RESULT_FILE}: not the benchmark's JSON") from None
        unknown = set(metrics) - set(METRICS)
        if unknown or not metrics:
            raise RoundFailed(f"{RESULT_FILE}: unexpected metrics {sorted(unknown)}")
        if mode is not None and mode not in VERIFY_OF_MODE:
            raise RoundFailed(f"{RESULT_FILE}: unknown graph mode {str(mode)[:40]!r}")
        values = {name: finite(name, value) for name, value in metrics.items()}
        declarations = {
            name: METRICS[name].model_copy(update={"mode": mode})
            for name in FOLLOW_THE_MODE
            if mode and name in values
        }
        return Measurement(values, declarations, _spread(spread, values))


def _gate(context: RoundContext) -> tuple[str, ...]:
    """``--gate FILE`` where the run gives the process a gate to wait at (`RoundContext.gate`)."""
    return ("--gate", str(context.gate)) if context.gate is not None else ()


def _spread(spread: object, values: dict[str, float]) -> dict[str, dict[str, float]]:
    """The standard errors the benchmark reported for the metrics it measured."""
    if not isinstance(spread, dict):
        raise RoundFailed(f"{RESULT_FILE}: 'spread' is not an object")
    kept = {}
    for name, entry in spread.items():
        if name not in values:
            continue
        try:
            kept[name] = {"se": finite(f"{name} se", entry["se"]), "calls": int(entry["calls"])}
        except (KeyError, TypeError, ValueError):
            raise RoundFailed(f"{RESULT_FILE}: spread of {name} is not {{se, calls}}") from None
    return kept
