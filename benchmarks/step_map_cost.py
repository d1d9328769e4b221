"""What the per-step map costs the profiled pass, side by side with the pass without it, as ratios.

Two ways a map is made, each measured in one run, the variants alternated (ABBA: neither always
first), medians printed:

- perfbot's own suite (default): the verify-step workload's profiled pass of the sample repository's
  slow commit (`benchmarks/step_map_overhead.py`'s pass: two gloo ranks on the CPU), with the map
  (Python stacks, the trace annotated with the repository's frames, and two more warm cycles run
  under the line recorder) and without it (``--no-step-map``). Per variant: the pass's process,
  the pass's own work once its model is built (the workload's ``seconds.run``: the profiled
  cycles, the recorded cycles, the trace written), reading the trace, and the trace's size.
- ``--engine``: a map from the engine's own profiler (`perfbot map`): the model laid out like an
  engine of tests/runner/trace_engine stepped in this process under ``torch.profiler`` with
  ``with_stack=False`` and ``with_stack=True`` (what the map needs), and then `perfbot map`'s work
  on the trace with stacks (`bot.runner.trace_map`: read, name the calls, build the map).

    .venv/bin/python benchmarks/step_map_cost.py --pairs 3
    .venv/bin/python benchmarks/step_map_cost.py --engine --pairs 7 --steps 20
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

ENGINE = ROOT / "tests" / "runner" / "trace_engine"


def side_by_side(title: str, rows: list[tuple[str, list[float], list[float], str]]) -> None:
    """A table: per row, the median without and with the map, and their ratio."""
    print(title)
    print("| | without the map | with the map | with / without |")
    print("|---|---:|---:|---:|")
    for name, without, with_, unit in rows:
        a, b = statistics.median(without), statistics.median(with_)
        print(
            f"| {name} | {a:.3f} {unit} | {b:.3f} {unit} | {b / a:.2f}x |"
            if a
            else f"| {name} | 0 | {b:.3f} | - |"
        )


def suite_pass(args: argparse.Namespace) -> int:
    import step_map_overhead

    from bot.sandbox.sample import build

    runs: dict[bool, list[tuple[float, float, float, float]]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as scratch:
        manifest = build(Path(scratch) / "sample")
        repo = Path(manifest["path"])
        subprocess.run(["git", "-C", str(repo), "checkout", "-q", manifest["slow"]], check=True)
        for pair in range(args.pairs):
            for with_map in (pair % 2 == 0, pair % 2 == 1):
                out = Path(scratch) / f"pass-{pair}-{int(with_map)}"
                ran, reading, size = step_map_overhead.one_pass(args.python, repo, out, args, with_map)
                work = json.loads((out / "report.json").read_text())["seconds"]["run"]
                runs[with_map].append((ran, work, reading, size / 2**20))
    side_by_side(
        f"verify-step profiled pass of the sample's slow commit: {args.device}, {args.world_size} rank(s), "
        f"{args.steps} profiled cycles, {args.pairs} passes per variant (medians)",
        [
            (name, [r[i] for r in runs[False]], [r[i] for r in runs[True]], unit)
            for i, (name, unit) in enumerate(
                [
                    ("the pass's process", "s"),
                    ("its work once built", "s"),
                    ("reading its trace", "s"),
                    ("trace", "MiB"),
                ]
            )
        ],
    )
    return 0


def engine_pass(args: argparse.Namespace) -> int:
    sys.path.insert(0, str(ENGINE))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    import torch
    import torch.distributed as dist
    from engine.config import EngineConfig
    from engine.scheduler import Scheduler
    from torch.profiler import ProfilerActivity, profile, schedule

    from bot.runner import trace_map

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=0, world_size=1)
    scheduler = Scheduler(EngineConfig())
    for _ in range(5):
        scheduler.step()
    seconds: dict[bool, list[float]] = {True: [], False: []}
    mapping: list[float] = []
    first: dict[bool, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        # Pair -1 is not counted: torch sets its Python tracer up on the first profile with stacks.
        for pair in range(-1, args.pairs):
            for stacks in (pair % 2 == 0, pair % 2 == 1):
                trace = Path(scratch) / f"trace-{pair}-{int(stacks)}.json"
                began = time.perf_counter()
                with profile(
                    activities=[ProfilerActivity.CPU],
                    with_stack=stacks,
                    schedule=schedule(wait=0, warmup=1, active=args.steps),
                    on_trace_ready=lambda done, to=trace: done.export_chrome_trace(str(to)),
                ) as profiler:
                    for _ in range(args.steps + 1):
                        scheduler.step()
                        profiler.step()
                took = time.perf_counter() - began
                if pair < 0:
                    first[stacks] = took
                    continue
                seconds[stacks].append(took)
                if stacks:
                    began = time.perf_counter()
                    data = trace_map.read(trace)
                    exists, read = trace_map.worktree(ENGINE)
                    resolve = trace_map.resolved(trace_map.file_names(data), exists)
                    trace_map.build(data, resolve, read, "0" * 40, "step")
                    mapping.append(time.perf_counter() - began)
    dist.destroy_process_group()
    side_by_side(
        f"the engine of tests/runner/trace_engine under torch.profiler in process: cpu, 1 gloo rank, "
        f"{args.steps} profiled steps (+1 warm-up), {args.pairs} passes per variant (medians)",
        [
            ("profiled pass (steps, trace written), with_stack off / on", seconds[False], seconds[True], "s"),
            (
                "per profiled step",
                [1000 * s / (args.steps + 1) for s in seconds[False]],
                [1000 * s / (args.steps + 1) for s in seconds[True]],
                "ms",
            ),
        ],
    )
    print(
        f"not counted, the process's first pair (torch's profiler sets itself up once): "
        f"{first[False]:.3f} s without stacks, then {first[True]:.3f} s with them"
    )
    print(f"perfbot map's work on the trace with stacks: {statistics.median(mapping):.3f} s (median)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", action="store_true", help="a map from the engine's own profiler")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="cpu")
    parser.add_argument("--world-size", type=int, default=2, help="ranks (0: every GPU)")
    parser.add_argument("--steps", type=int, default=5, help="profiled cycles (steps) per pass")
    parser.add_argument("--pairs", type=int, default=3, help="passes with and without the map, alternately")
    parser.add_argument("--python", default=sys.executable, help="the engine's interpreter (it needs torch)")
    args = parser.parse_args()
    return engine_pass(args) if args.engine else suite_pass(args)


if __name__ == "__main__":
    sys.exit(main())
