"""What the per-step map costs the profiled pass: the verify-step workload's profiled pass on the
sample repository's slow commit, run with the map (Python calls recorded, the trace annotated with
the repository's frames) and without (``--no-step-map``), alternately, and perfbot's reading of
each trace (`bot.runner.traces.read_traced`).

    .venv/bin/python benchmarks/step_map_overhead.py                       # CPU, two gloo ranks
    python3 benchmarks/step_map_overhead.py --device cuda --world-size 2 --pairs 3   # on a GPU machine

It prints, per variant, the median seconds of the pass's process and of reading its trace, the
trace's size, and the extra seconds the map adds (with - without). `benchmarks/gpu_verify_step.sh`
runs it after its verdicts.

``--lines`` measures instead what recording the lines that ran (`bot.runner.step_lines`) adds to
the profiled steps themselves: the sample's verify-step workload's ranks (two gloo ranks on CPU)
built in this script's own processes, each pair of profiled passes (Python stacks on, as the map
wants) run alternately with and without the recorder around them on rank 0, in one run:

    .venv/bin/python benchmarks/step_map_overhead.py --lines --pairs 5
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


def lines_rank(repo: Path, scratch: Path, args: argparse.Namespace) -> None:
    """One rank of ``--lines``: build the workload's model, then profile ``args.steps`` cycles per
    pass, ``args.pairs`` times with and without the line recorder (ABBA), rank 0 timing each."""
    import os

    import torch
    import torch.distributed as dist

    from bot.runner import step_lines

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    allreduce = verify_step_workload.load_allreduce(ALLREDUCE, [str(repo)])
    shape = verify_step_workload.PRESETS["tiny"]
    bench = verify_step_workload.Bench(shape, world, torch.device("cpu"), torch.float32, allreduce, 5, 2)
    roots = [str(repo.resolve())]
    timings: dict[bool, list[float]] = {True: [], False: []}
    ranges = 0
    for pair in range(args.pairs):
        for with_lines in (pair % 2 == 0, pair % 2 == 1):
            trace = scratch / f"lines-{pair}-{int(with_lines)}.json" if rank == 0 else None
            recorder = step_lines.LineRecorder(roots) if with_lines and rank == 0 else None
            bench.barrier()
            began = time.perf_counter()
            if recorder is not None:
                with recorder:
                    bench.profile("eager", trace, args.steps, roots)
            else:
                bench.profile("eager", trace, args.steps, roots)
            timings[with_lines].append(time.perf_counter() - began)
            if recorder is not None:
                ranges = sum(len(r) for r in recorder.ranges().values())
    bench.barrier()
    dist.destroy_process_group()
    if rank != 0:
        return
    without, with_ = statistics.median(timings[False]), statistics.median(timings[True])
    print(
        f"profiled pass of the sample's slow commit, in process: cpu, {world} gloo ranks, "
        f"{args.steps} cycles (+1 warm-up, +{bench.warmup} before), {args.pairs} passes per variant (medians)"
    )
    print("| variant | pass s |")
    print("|---|---:|")
    print(f"| stacks only | {without:.3f} |")
    print(f"| stacks + lines | {with_:.3f} |")
    print(
        f"recording lines adds {with_ - without:+.3f} s ({(with_ - without) / without:+.0%}); "
        f"{ranges} line ranges recorded"
    )


def lines_main(args: argparse.Namespace) -> int:
    """``--lines``: start the ranks (this script again, ``--lines-rank``) and wait for them."""
    from bot.runner.suites.verify_step_workload import free_port, worker_env

    with tempfile.TemporaryDirectory() as scratch:
        manifest = build(Path(scratch) / "sample")
        repo = Path(manifest["path"])
        subprocess.run(["git", "-C", str(repo), "checkout", "-q", manifest["slow"]], check=True)
        port = free_port()
        argv = [sys.executable, __file__, "--lines-rank", str(repo), "--scratch", scratch]
        argv += ["--steps", str(args.steps), "--pairs", str(args.pairs)]
        ranks = [
            subprocess.Popen(argv, env=worker_env(rank, args.world_size, port))
            for rank in range(args.world_size)
        ]
        codes = [rank.wait(timeout=900) for rank in ranks]
    return max(codes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="cpu")
    parser.add_argument("--world-size", type=int, default=2, help="ranks (0: every GPU)")
    parser.add_argument("--steps", type=int, default=5, help="profiled cycles per pass (the suite's default)")
    parser.add_argument("--pairs", type=int, default=3, help="passes with and without the map, alternately")
    parser.add_argument("--python", default=sys.executable, help="the engine's interpreter (it needs torch)")
    parser.add_argument(
        "--lines", action="store_true", help="measure recording the lines that ran, in process"
    )
    parser.add_argument("--lines-rank", metavar="REPO", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.lines_rank:
        lines_rank(Path(args.lines_rank), Path(args.scratch), args)
        return 0
    if args.lines:
        return lines_main(args)
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
