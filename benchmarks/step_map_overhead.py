"""What the per-step map costs the profiled pass: the verify-step workload's profiled pass on the
sample repository's slow commit, run with the map (Python calls recorded, the trace annotated with
the repository's frames) and without (``--no-step-map``), alternately, and perfbot's reading of
each trace (`bot.runner.traces.read_traced`).

    .venv/bin/python benchmarks/step_map_overhead.py                       # CPU, two gloo ranks
    python3 benchmarks/step_map_overhead.py --device cuda --world-size 2 --pairs 3   # on a GPU machine

It prints, per variant, the median seconds of the pass's process and of reading its trace, the
trace's size, and the extra seconds the map adds (with - without). `benchmarks/gpu_verify_step.sh`
runs it after its verdicts.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.runner import traces  # noqa: E402
from bot.runner.suites import verify_step_workload  # noqa: E402
from bot.sandbox.sample import build  # noqa: E402

ALLREDUCE = "mini_engine.distributed.parallel_state:tensor_model_parallel_all_reduce"


def one_pass(
    python: str, repo: Path, out: Path, args: argparse.Namespace, with_map: bool
) -> tuple[float, float, int]:
    """(seconds of the pass's process, seconds to read its trace, the trace's bytes)."""
    trace = out / "profile" / "trace.json"
    argv = verify_step_workload.command(
        python,
        "--out",
        str(out / "report.json"),
        "--pythonpath",
        str(repo),
        "--allreduce",
        ALLREDUCE,
        "--device",
        args.device,
        "--world-size",
        str(args.world_size),
        *(["--cpu-world-size", str(args.world_size)] if args.device == "cpu" else []),
        "--profile",
        str(trace),
        "--profile-steps",
        str(args.steps),
        "--timeout",
        "300",
        *([] if with_map else ["--no-step-map"]),
    )
    began = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=400, check=False)
    ran = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"step_map_overhead: the profiled pass failed:\n{done.stderr[-3000:]}")
    began = time.perf_counter()
    read = traces.read_traced(trace, "cycle")
    reading = time.perf_counter() - began
    if with_map and read.step_map("0" * 40, "verify-step") is None:
        raise SystemExit("step_map_overhead: the pass with the map named no frame of the repository")
    return ran, reading, trace.stat().st_size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="cpu")
    parser.add_argument("--world-size", type=int, default=2, help="ranks (0: every GPU)")
    parser.add_argument("--steps", type=int, default=5, help="profiled cycles per pass (the suite's default)")
    parser.add_argument("--pairs", type=int, default=3, help="passes with and without the map, alternately")
    parser.add_argument("--python", default=sys.executable, help="the engine's interpreter (it needs torch)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        manifest = build(Path(scratch) / "sample")
        repo = Path(manifest["path"])
        subprocess.run(["git", "-C", str(repo), "checkout", "-q", manifest["slow"]], check=True)
        seconds: dict[bool, list[tuple[float, float, int]]] = {True: [], False: []}
        for pair in range(args.pairs):
            for with_map in (pair % 2 == 0, pair % 2 == 1):  # ABBA: neither variant always goes first
                out = Path(scratch) / f"pass-{pair}-{int(with_map)}"
                seconds[with_map].append(one_pass(args.python, repo, out, args, with_map))
    print(
        f"profiled pass of the sample's slow commit: {args.device}, {args.world_size} rank(s), "
        f"{args.steps} cycles, {args.pairs} passes per variant (medians)"
    )
    print("| variant | pass s | read s | trace MiB |")
    print("|---|---:|---:|---:|")
    medians = {}
    for with_map in (False, True):
        runs = seconds[with_map]
        medians[with_map] = (
            statistics.median(r[0] for r in runs),
            statistics.median(r[1] for r in runs),
            statistics.median(r[2] for r in runs) / 2**20,
        )
        ran, reading, size = medians[with_map]
        print(f"| {'with the map' if with_map else 'without'} | {ran:.2f} | {reading:.3f} | {size:.1f} |")
    extra = sum(medians[True][:2]) - sum(medians[False][:2])
    print(
        f"the map adds {extra:+.2f} s to the profiled pass of each side "
        f"({extra / max(sum(medians[False][:2]), 1e-9):+.0%})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
