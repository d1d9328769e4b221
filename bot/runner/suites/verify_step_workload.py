"""The verify-step benchmark: one EAGLE-3 cycle (draft steps + one verify pass) of a tensor-parallel MoE
model built from random weights, timed per rank, written as JSON by rank 0.

Launched once per benchmark round, as
``python -m bot.runner.suites.verify_step_workload --out FILE [shape options]`` or, by
`perfbot bench run`, through `command` (this file by its absolute path, so that nothing in the
checkout under test can stand in for it, and perfbot's own packages stay off the engine's path). That
process is rank 0 (``torch.distributed``: NCCL on GPUs, gloo on CPU); it starts one process for each
other rank, watches them under a hard timeout from a thread, and exits non-zero when any rank
failed (one that dies ends the others at once). Ranks write their numbers before the process group
is torn down and then leave with ``os._exit``, because NCCL teardown can hang at exit (seen on the
H200 machines).

What is timed, each as the median of up to ``--iters`` calls after ``--warmup-iters`` untimed ones,
with the standard error of that median from the calls' scatter (the ``spread`` of the JSON, which
the statistics use to weigh rounds). Calls are timed in batches of `BATCH`; after `MIN_ITERS` the
pass stops as soon as that standard error is at most ``--target-se`` of the median (the ranks agree
on when), so a graph replay that scatters by 0.1% takes a few dozen calls and an eager pass on a
noisy host takes all of them:

- ``verify_piecewise_ms``, ``verify_graph_ms`` and ``verify_eager_ms`` (``--verify-modes``; by
  default only the engine's mode): the verify forward pass of
  ``batch * num_draft_tokens`` tokens through every layer (attention against a KV cache + MoE) as
  piecewise graphs with eager allreduces in between (SGLang's piecewise CUDA graph mode), as one
  CUDA graph replay, and eagerly;
- ``draft_ms``: one draft step (one dense decoder layer + the vocabulary projection) of ``batch *
  draft_topk`` tokens, graph-replayed unless the engine runs eagerly;
- ``allreduce_verify_us`` / ``allreduce_draft_us``, with two ranks or more: the allreduce under test
  on a ``tokens x hidden`` tensor, at the verify and the draft token counts, as the mean of a block
  of back-to-back calls (`Bench.collective_us`): timing one call at a time measured how long the
  host took to launch it and how long this rank waited for the other to arrive, which flipped from
  run to run;
- ``decode_ms``: the plain decode step the same model takes without speculation, in the engine's
  mode: ``batch`` tokens (one per sequence) through every layer, the verify pass's work at one
  token per sequence;
- derived, in the mode the engine runs (``--graph``: ``full``, ``piecewise`` or ``eager``; the
  default is piecewise where CUDA graphs can run, SGLang's default, else eager):
  ``cycle_ms = num_steps * draft_ms + verify_<mode>_ms`` and ``tok_s = 1000 * accept_length /
  cycle_ms`` for the configured accept length; ``baseline_tok_s = 1000 / decode_ms`` (one token per
  sequence per step) and ``spec_speedup = tok_s / baseline_tok_s``, the speed-up of speculation over
  not speculating (below 1, speculation costs more than it saves).

``--allreduce MODULE:FUNCTION`` makes every allreduce of the model go through a function of the
repository under test (``FUNCTION(tensor) -> tensor``), which is how a change to that repository's
communicator shows up in these numbers.

``--profile TRACE`` times nothing: it runs ``--profile-steps`` EAGLE-3 cycles in the engine's mode
under PyTorch's profiler (CUPTI on GPUs) after warming up, and rank 0 writes the Chrome trace to
TRACE; perfbot reads it into the results file's kernel profile (`bot.core.judge.kineto`). Unless
``--no-step-map``, the profiler also records Python calls (``with_stack``), and rank 0 writes into
the trace, for each Python call event, the frame of the repository under test (``--pythonpath``)
that made the call and, for a function of that repository, which function it is (`annotate_trace`):
what the per-step map and the kernel diff's launching lines are read from.

``--serve`` makes a long-lived worker (`bot.runner.workers`): set up once (interpreter, CUDA context,
process group, the allreduce under test), then one round per JSON line ``{"out": FILE}`` on rank 0's
standard input, each building the model and capturing its graphs again, until the input ends; a line
``{"out": FILE, "profile": TRACE}`` is the profiled pass instead (as ``--profile TRACE``). With
``--ready FILE`` the worker first builds the model and captures and runs its graphs once, untimed (the
warm-up a first round would be), then rank 0 writes FILE (``{"seconds": {...}}``): the worker is ready.
With ``--cold`` as well it writes FILE once set up, without that warm-up: its first round then runs as
a fresh process's round does (build, first capture, timing), the process started ahead of it (the
runner's spare for a fresh round, `bot.runner.workers`); ``--warm-profiler`` also runs an empty
profiler session first, so that the profiler's one-time set-up (its Python tracer, CUPTI on a GPU:
seconds) is paid while nothing is measured (the runner's spare for a profiled pass, which times no round;
its ready file says how long that took, ``profiler``). The profiler starts without importing
torch.compile's compiler where nothing else has (`compiler_left_unimported`). With ``--gate
FILE`` a worker or spare starts (interpreter, torch, process group) before perfbot has walked the
engine's import path after the set-up, and waits for FILE before it imports anything from the
repository under test (`wait_at_gate`): no code of either side runs before that walk, which is the
reference every later walk is compared with.

Each report's ``seconds`` say where the round's time went: ``start`` (interpreter and torch import,
0 in a worker), ``build`` (the model's weights), ``capture`` (CUDA graph capture, with the eager
calls before it) and ``run`` (everything after the build, capture included).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path

MODES = ("full", "piecewise", "eager")
VERIFY_OF_MODE = {"full": "verify_graph_ms", "piecewise": "verify_piecewise_ms", "eager": "verify_eager_ms"}
ALLREDUCE_BLOCKS = 10  # blocks of back-to-back allreduce calls; the metric is their median
BATCH = 10  # calls timed between two looks at the median's precision
MIN_ITERS = 10  # calls before the first look
_STARTED = time.monotonic()

# Kept in every environment built for a worker: NVLink multicast can take a shared host's GPUs down.
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}

# Runs this file as __main__ in any interpreter. `python -c` puts the working directory (the
# checkout under test) first on sys.path, where a planted `torch.py` or `bot/` would shadow the real
# ones: it is taken off before anything is imported. Works before Python 3.11's -P, which an
# engine's interpreter may predate.
_BOOTSTRAP = (
    "import runpy, sys\n"
    "if sys.path and sys.path[0] == '': del sys.path[0]\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def command(python: str, *args: str) -> list[str]:
    """The argv that runs this benchmark with ``python`` and ``args``, whatever the working directory."""
    return [python, "-c", _BOOTSTRAP, str(Path(__file__).resolve()), *args]


@dataclass(frozen=True)
class Shape:
    """Model and workload shape: ``full`` is like a large MoE model scaled to fit, ``tiny`` is for CPUs."""

    layers: int = 16
    hidden: int = 7168
    heads: int = 64
    kv_heads: int = 8
    head_dim: int = 128
    experts: int = 8
    topk: int = 2
    moe_intermediate: int = 2048
    context: int = 1024
    vocab: int = 32000
    batch: int = 1
    num_steps: int = 2
    draft_topk: int = 1
    num_draft_tokens: int = 3
    accept_length: float = 1.8


PRESETS = {
    "full": Shape(),
    "tiny": Shape(
        layers=2,
        hidden=64,
        heads=4,
        kv_heads=2,
        head_dim=16,
        experts=4,
        topk=2,
        moe_intermediate=64,
        context=32,
        vocab=256,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="verify_step_workload", description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSON file for the medians (written by rank 0)")
    parser.add_argument(
        "--preset",
        choices=("auto", *PRESETS),
        default="auto",
        help="shape defaults: full on GPUs, tiny on CPU (auto)",
    )
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    parser.add_argument("--world-size", type=int, default=0, help="ranks (default: all GPUs, else 1)")
    parser.add_argument(
        "--cpu-world-size",
        type=int,
        default=1,
        help="ranks on a machine without GPUs, when --world-size is 0 (default 1)",
    )
    parser.add_argument("--iters", type=int, default=100, help="most timed calls per pass")
    parser.add_argument(
        "--target-se",
        type=float,
        default=0.001,
        help="stop timing a pass once the standard error of its median is this fraction "
        "of it (0: always --iters calls)",
    )
    parser.add_argument("--warmup-iters", type=int, default=5)
    parser.add_argument("--dtype", choices=("bfloat16", "float16", "float32"), default="bfloat16")
    parser.add_argument("--no-cuda-graphs", action="store_true", help="time eager mode only")
    parser.add_argument(
        "--graph",
        choices=("auto", *MODES),
        default="auto",
        help="the mode the engine runs, which cycle_ms and tok_s follow (auto: "
        "piecewise where CUDA graphs can run, else eager)",
    )
    parser.add_argument(
        "--verify-modes",
        default="auto",
        metavar="MODE[,MODE]",
        help="verify passes to time: full, piecewise, eager (auto: the engine's mode)",
    )
    parser.add_argument(
        "--profile",
        metavar="TRACE",
        help="time nothing: profile --profile-steps cycles and write the trace here",
    )
    parser.add_argument("--profile-steps", type=int, default=5)
    parser.add_argument(
        "--no-step-map",
        action="store_true",
        help="profile without Python calls: no per-step map, no launching lines",
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help='set up once, then run a round for each JSON line {"out": FILE} on standard '
        "input until it ends (a long-lived worker; --out and --timeout are unused)",
    )
    parser.add_argument(
        "--ready",
        metavar="FILE",
        help="with --serve: build and capture once, untimed, then write FILE (the worker is warm)",
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="with --serve --ready: write FILE once set up, without the warm-up (a fresh round's "
        "process started ahead of its round)",
    )
    parser.add_argument(
        "--gate",
        metavar="FILE",
        help="with --serve: wait until FILE exists before importing the repository under test "
        "(before importing anything where the repository is on the import path already); rank 0 "
        "leaves if its input ends first",
    )
    parser.add_argument(
        "--warm-profiler",
        action="store_true",
        help="with --cold: set the profiler up once (an empty session) before writing FILE; for a "
        "process that profiles and times nothing",
    )
    parser.add_argument(
        "--allreduce",
        metavar="MODULE:FUNCTION",
        help="allreduce to use instead of torch.distributed.all_reduce",
    )
    parser.add_argument(
        "--pythonpath", action="append", default=[], help="directory to import --allreduce from (repeatable)"
    )
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--timeout", type=float, default=600, help="seconds before the ranks are killed")
    for field in fields(Shape):
        parser.add_argument("--" + field.name.replace("_", "-"), type=type(field.default), default=None)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return parser


def resolve_mode(args: argparse.Namespace, device: str) -> str:
    """The mode the cycle follows: as asked, or piecewise where CUDA graphs can run, else eager."""
    graphs = device == "cuda" and not args.no_cuda_graphs
    if args.graph == "auto":
        return "piecewise" if graphs else "eager"
    if args.graph != "eager" and not graphs:
        why = "--no-cuda-graphs was given" if args.no_cuda_graphs else "CUDA graphs need a GPU"
        raise SystemExit(f"verify_step_workload: --graph {args.graph}: {why}; use --graph eager")
    return args.graph


def resolve_modes(args: argparse.Namespace, device: str, mode: str) -> tuple[str, ...]:
    """The verify passes to time, in the order they run: as asked, or only the engine's mode (the
    kernel profile says where a change came from, which the other modes were timed for)."""
    if args.verify_modes == "auto":
        wanted = {mode}
    else:
        wanted = {m.strip() for m in args.verify_modes.split(",") if m.strip()}
        unknown = wanted - set(MODES)
        if unknown or not wanted:
            raise SystemExit(
                f"verify_step_workload: --verify-modes {args.verify_modes}: choose from {', '.join(MODES)}"
            )
        graphs = device == "cuda" and not args.no_cuda_graphs
        if not graphs and wanted - {"eager"}:
            raise SystemExit(
                f"verify_step_workload: --verify-modes {args.verify_modes}: CUDA graphs do "
                f"not run here; use eager"
            )
    return tuple(m for m in ("eager", "full", "piecewise") if m in wanted)


def resolve_shape(args: argparse.Namespace, device: str) -> Shape:
    preset = args.preset if args.preset != "auto" else ("full" if device == "cuda" else "tiny")
    overrides = {f.name: getattr(args, f.name) for f in fields(Shape) if getattr(args, f.name) is not None}
    shape = Shape(**{**asdict(PRESETS[preset]), **overrides})
    if shape.heads % shape.kv_heads or shape.topk > shape.experts:
        raise SystemExit("verify_step_workload: heads must be a multiple of kv-heads and topk <= experts")
    return shape


# ----------------------------------------------------------------------------- launcher


def launch(args: argparse.Namespace, argv: list[str]) -> int:
    """Be rank 0 and start a process for each other rank; report the outcome on stdout."""
    device = pick_device(args.device)
    world = args.world_size or (gpu_count() if device == "cuda" else args.cpu_world_size)
    if world < 1:
        raise SystemExit("verify_step_workload: no GPU visible; use --device cpu")
    mode = resolve_mode(args, device)  # refuse an impossible mode before starting any rank
    resolve_modes(args, device, mode)
    port = free_port()
    peers = [
        subprocess.Popen(
            command(sys.executable, *argv, "--worker", "--device", device, "--world-size", str(world)),
            env=worker_env(rank, world, port),
        )
        for rank in range(1, world)
    ]
    os.environ.update(worker_env(0, world, port))
    args.device, args.world_size = device, world
    # A serving worker has no deadline of its own: perfbot gives each round one, and ends it.
    deadline = float("inf") if args.serve else time.monotonic() + args.timeout
    threading.Thread(target=watch, args=(peers, deadline), daemon=True).start()
    try:
        run_rank(args)
    except BaseException as error:  # this rank failed: say why, end the others, exit non-zero
        if isinstance(error, SystemExit) and isinstance(error.code, str):
            print(error.code, file=sys.stderr)
        elif not isinstance(error, SystemExit):
            traceback.print_exc()
        leave([1, *end_all(peers)])
    codes = [0, *wait_all(peers, deadline)]
    if any(code != 0 for code in codes):
        leave(codes)
    print(f"verify_step_workload: {world} rank(s) on {device}, results in {args.out}", flush=True)
    flush_and_exit(0)
    return 0


def leave(codes: list[int | None]) -> None:
    print(f"verify_step_workload: worker exit codes {codes}", file=sys.stderr)
    flush_and_exit(1)


def flush_and_exit(code: int) -> None:
    """Leave at once: NCCL teardown at interpreter exit can hang (seen on the H200 machines)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def watch(peers: list[subprocess.Popen], deadline: float) -> None:
    """From a thread of rank 0: a rank that fails, or a deadline that passes, ends every rank at
    once (this one too); a rank whose peer died would otherwise wait in its collective."""
    while True:
        codes = [peer.poll() for peer in peers]
        if any(code not in (None, 0) for code in codes):
            leave([1, *end_all(peers)])
        if time.monotonic() > deadline:
            end_all(peers)
            print("verify_step_workload: timed out; the ranks were killed", file=sys.stderr)
            flush_and_exit(1)
        time.sleep(0.05)


def pick_device(choice: str) -> str:
    if choice != "auto":
        return choice
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def gpu_count() -> int:
    import torch

    return torch.cuda.device_count()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def worker_env(rank: int, world: int, port: int) -> dict[str, str]:
    env = {
        **os.environ,
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "WORLD_SIZE": str(world),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
    }
    for key, value in SAFE_ENV.items():
        env.setdefault(key, value)
    return env


def wait_all(workers: list[subprocess.Popen], deadline: float) -> list[int | None]:
    """Exit codes of the other ranks once they are done. A rank that fails or a deadline that passes
    ends the others at once."""
    while any(w.poll() is None for w in workers):
        if any(w.returncode not in (None, 0) for w in workers) or time.monotonic() > deadline:
            return end_all(workers)
        time.sleep(0.02)
    return [w.returncode for w in workers]


def end_all(workers: list[subprocess.Popen]) -> list[int | None]:
    for worker in workers:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    return [w.returncode for w in workers]


# ----------------------------------------------------------------------------- ranks


def run_rank(args: argparse.Namespace) -> None:
    """One rank: set up once, then one round (build the model, time everything or profile, rank 0
    writes the JSON), or, with ``--serve``, a round for every request until told to stop."""
    import torch
    import torch.distributed as dist

    imported = time.monotonic()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = torch.device(f"cuda:{rank}") if args.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    else:
        torch.set_num_threads(1)  # ranks share the cores; oversubscription makes CPU timings erratic
    # One rank exchanges nothing: its NCCL communicator is left to be made on first use (never, for
    # an allreduce that returns at one rank), which saves its set-up in every round.
    eager_init = device.type == "cuda" and world > 1
    dist.init_process_group(
        "nccl" if device.type == "cuda" else "gloo",
        rank=rank,
        world_size=world,
        device_id=device if eager_init else None,
    )
    waited = wait_at_gate(args.gate, rank)
    allreduce = load_allreduce(args.allreduce, args.pythonpath)
    started = {"start": round(imported - _STARTED, 3)}
    if args.gate:
        started["gate"] = round(waited, 3)
    if not args.serve:
        one_round(args, rank, world, device, allreduce, Path(args.out), args.seed, started)
        return
    if args.ready and args.cold:
        if args.warm_profiler:
            began = time.monotonic()
            warm_profiler(torch, device)
            started["profiler"] = round(time.monotonic() - began, 3)
        if device.type == "cuda":
            torch.cuda.synchronize()  # the device's context made before the process says it is ready
        if rank == 0:
            write_atomically(Path(args.ready), json.dumps({"seconds": started}))
    elif args.ready:
        warm(args, rank, world, device, allreduce, Path(args.ready), started)
    for number, request in enumerate(requests(rank, world)):
        args.profile = request["profile"]
        out = Path(request["out"])
        one_round(args, rank, world, device, allreduce, out, args.seed + 1000 * number, {"start": 0.0})


def warm_profiler(torch, device) -> None:
    """One empty session of PyTorch's profiler, with the activities and Python stacks a profiled pass
    records: its one-time set-up done (what the first session in a process pays)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with compiler_left_unimported(torch), profile(activities=activities, with_stack=True):
        torch.ones(8, device=device).sum()
    if device.type == "cuda":
        torch.cuda.synchronize()


@contextlib.contextmanager
def compiler_left_unimported(torch):
    """PyTorch's profiler, as it starts, asks ``hasattr(torch, "_inductor")`` to read one setting of
    torch.compile (whether its CUDA graphs are on), and that question imports the compiler where
    nothing has (``torch._inductor`` and ``torch._dynamo``: over a second, most of a first profiler
    session). Where the compiler is not imported, nothing it compiled runs, and the setting is its
    default unless the environment turns it on: then, and only while the profiler starts, the
    question is answered no (torch's set of lazily imported modules without it), which is what the
    profiler would have read. Imports by name (``import torch._inductor``) are untouched."""
    lazy = getattr(torch, "_lazy_modules", None)
    if (
        "torch._inductor" in sys.modules
        or not isinstance(lazy, set)
        or "_inductor" not in lazy
        or os.environ.get("TORCHINDUCTOR_CUDAGRAPHS") == "1"
    ):
        yield
        return
    lazy.discard("_inductor")
    try:
        yield
    finally:
        lazy.add("_inductor")


def warm(
    args: argparse.Namespace,
    rank: int,
    world: int,
    device,
    allreduce: Callable,
    ready: Path,
    seconds: dict[str, float],
) -> None:
    """A serving worker's warm-up: the model built and the engine's graphs captured and run once,
    untimed (what a first round pays for: lazily loaded kernels, library handles, the allocator's
    pools), then ``ready`` written by rank 0. The graphs are dropped: every round captures its own."""
    import torch

    began = time.monotonic()
    bench = _bench(args, world, device, allreduce)
    built = time.monotonic()
    bench.warm(resolve_mode(args, device.type), device.type == "cuda" and not args.no_cuda_graphs)
    bench.barrier()
    timing = {**seconds, "build": round(built - began, 3), "capture": round(bench.capture_s, 3)}
    timing["run"] = round(time.monotonic() - built, 3)
    if rank == 0:
        write_atomically(ready, json.dumps({"seconds": timing}))
    del bench
    if device.type == "cuda":
        torch.cuda.empty_cache()


def wait_at_gate(gate: str | None, rank: int) -> float:
    """Wait until the file ``gate`` exists (at once where there is none); the seconds waited.
    Rank 0 leaves instead where its input ends or says something first: perfbot asks nothing of a
    worker before it is ready, so that is perfbot telling it to stop (or perfbot gone)."""
    if not gate:
        return 0.0
    import select

    began = time.monotonic()
    while not os.path.exists(gate):
        if rank == 0 and select.select([sys.stdin], [], [], 0)[0]:
            flush_and_exit(0)
        time.sleep(0.01)
    return time.monotonic() - began


def repository_importable(paths: list[str]) -> bool:
    """Whether a folder on the import path already is, or lies inside, one of ``paths`` (the
    repository's folders: ``--pythonpath``), so that importing torch could import its code."""
    roots = [Path(p).resolve() for p in paths]
    for entry in sys.path:
        try:
            folder = Path(entry or ".").resolve()
        except (OSError, RuntimeError):
            continue
        if any(folder == root or root in folder.parents for root in roots):
            return True
    return False


def _bench(args: argparse.Namespace, world: int, device, allreduce: Callable) -> Bench:
    """The model the options describe, built on ``device`` (a warm-up and a round build it alike)."""
    import torch

    return Bench(
        resolve_shape(args, device.type),
        world,
        device,
        getattr(torch, args.dtype),
        allreduce,
        args.iters,
        args.warmup_iters,
        args.target_se,
    )


def requests(rank: int, world: int):
    """The rounds a serving worker is asked for: rank 0 reads one JSON line per round from standard
    input (``{"out": PATH}``; end of input or ``stop`` ends it) and passes each to the other ranks."""
    import torch.distributed as dist

    while True:
        request: list[dict | None] = [None]
        if rank == 0:
            line = sys.stdin.readline().strip()
            try:
                request = [_request(json.loads(line)) if line and line != "stop" else None]
            except (ValueError, KeyError, TypeError, AttributeError):
                print(f"verify_step_workload: not a request: {line[:80]!r}", file=sys.stderr)
                request = [None]
        if world > 1:
            dist.broadcast_object_list(request, src=0)
        if request[0] is None:
            return
        yield request[0]


def _request(line: dict) -> dict:
    """A request's ``out`` and, for the profiled pass, ``profile`` (both file names)."""
    profile = line.get("profile")
    return {"out": str(line["out"]), "profile": None if profile is None else str(profile)}


def one_round(
    args: argparse.Namespace,
    rank: int,
    world: int,
    device,
    allreduce: Callable,
    out: Path,
    seed: int,
    seconds: dict[str, float],
) -> None:
    import torch

    began = time.monotonic()
    shape = resolve_shape(args, device.type)
    torch.manual_seed(seed + rank)
    bench = _bench(args, world, device, allreduce)
    built = time.monotonic()
    mode = resolve_mode(args, device.type)
    graphs = device.type == "cuda" and not args.no_cuda_graphs
    report: dict = {
        "graph": mode,
        "shape": asdict(shape),
        "world_size": world,
        "device": device.type,
        "dtype": args.dtype,
        "iters": args.iters,
        "allreduce": args.allreduce or "torch",
        "process": "worker" if args.serve else "fresh",
    }
    if args.profile:
        roots = None if args.no_step_map else [str(Path(p).resolve()) for p in args.pythonpath]
        steps = bench.profile(mode, Path(args.profile) if rank == 0 else None, args.profile_steps, roots)
        report["profiled"] = {"trace": args.profile, "steps": steps, "what": bench.cycle_name(mode)}
    else:
        measured = bench.measure(cuda_graphs=graphs, mode=mode, modes=resolve_modes(args, device.type, mode))
        report["metrics"] = {name: m.value for name, m in measured.items()}
        report["spread"] = {name: {"se": m.se, "calls": m.calls} for name, m in measured.items()}
    bench.barrier()
    report["seconds"] = {
        **seconds,
        "build": round(built - began, 3),
        "capture": round(bench.capture_s, 3),
        "run": round(time.monotonic() - built, 3),
    }
    if rank == 0:
        write_atomically(out, json.dumps(report, indent=2))
    del bench  # a serving worker's next round builds everything again, graphs included
    if device.type == "cuda":
        torch.cuda.empty_cache()


def load_allreduce(spec: str | None, paths: list[str]) -> Callable:
    import torch.distributed as dist

    if not spec:

        def in_place(tensor):
            dist.all_reduce(tensor)
            return tensor

        return in_place
    module_name, _, function_name = spec.partition(":")
    if not function_name:
        raise SystemExit(f"verify_step_workload: --allreduce {spec!r}: expected MODULE:FUNCTION")
    sys.path[:0] = [str(Path(p).resolve()) for p in paths]
    return getattr(importlib.import_module(module_name), function_name)


# ---------------------------------------------------------------- the per-step map's frames


LINE_CYCLES = 2  # cycles run under the line recorder, after the profiled ones


def record_lines(cycle: Callable, roots: list[str], folder: Path | None, torch) -> None:
    """The repository's lines a step runs (`bot/runner/step_lines.py`, loaded by path: this file
    runs alone), recorded over `LINE_CYCLES` more cycles after the profiled ones, so that tracing
    every line costs the profile nothing, and warm, so that first-call branches are not counted as
    per-step. Only the rank that profiles (``folder`` given) records; the others run the cycles."""
    recorder = None
    if folder is not None:
        try:
            spec = importlib.util.spec_from_file_location(
                "perfbot_step_lines", Path(__file__).resolve().parents[1] / "step_lines.py"
            )
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            spec.loader.exec_module(module)  # type: ignore[union-attr]
            recorder = module.LineRecorder(roots)
        except (OSError, ImportError, AttributeError) as error:
            print(
                f"verify_step_workload: the map gets no lines ({type(error).__name__}: {error})",
                file=sys.stderr,
            )
    with torch.inference_mode():
        if recorder is not None:
            recorder.start()
        try:
            for _ in range(LINE_CYCLES):
                cycle()
        finally:
            if recorder is not None:
                recorder.stop()
    if recorder is not None:
        recorder.write(folder)


def annotate_trace(profiler, trace: Path, roots: list[str]) -> None:
    """Write into the exported trace which frame of the repository under test made each Python call.

    A trace's ``python_function`` events name the called function by its definition line only; the
    line that made the call is in the profiler's event tree (its ``caller`` frame). Each event of the
    tree is found in the trace by name and start (the two clocks differ by one offset, read off the
    operators both hold by id), and gets ``perfbot.caller`` (path relative to the repository, line,
    qualified name) where the calling frame is the repository's, and ``perfbot.function`` where the
    called function is."""
    import bisect as bisection

    data = json.loads(trace.read_text())
    events = data.get("traceEvents", [])
    python: dict[str, list] = {}  # name -> [(start ns, caller, callsite)]
    operators: dict[int, int] = {}  # correlation id -> start ns
    stack = list(profiler.profiler.kineto_results.experimental_event_tree())
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        tag = str(node.tag)
        if tag.endswith("TorchOp"):
            operators[node.correlation_id] = node.start_time_ns
        elif tag.endswith("PyCall") or tag.endswith("PyCCall"):
            fields = node.extra_fields
            callsite = fields.callsite if tag.endswith("PyCall") else None
            python.setdefault(node.name, []).append((node.start_time_ns, fields.caller, callsite))
    offsets = sorted(
        e["ts"] - operators[e["args"]["External id"]] / 1000
        for e in events
        if e.get("cat") == "cpu_op"
        and isinstance(e.get("args"), dict)
        and e["args"].get("External id") in operators
    )
    if not offsets:
        return
    offset = offsets[len(offsets) // 2]
    for made in python.values():
        made.sort(key=lambda c: c[0])
    starts = {name: [c[0] for c in made] for name, made in python.items()}
    frames = RepositoryFrames(roots)
    for event in events:
        calls = python.get(event.get("name"), []) if event.get("cat") == "python_function" else []
        if not calls:
            continue
        instant = (event["ts"] - offset) * 1000
        position = bisection.bisect_left(starts[event["name"]], instant)
        near = [c for c in calls[max(position - 1, 0) : position + 1] if abs(c[0] - instant) < 1000]
        if not near:
            continue
        _, caller, callsite = min(near, key=lambda c: abs(c[0] - instant))
        args = event.setdefault("args", {})
        calling = frames.frame(caller.file_name, caller.line_number, definition=False)
        if calling is not None:
            args["perfbot.caller"] = calling
        called = frames.frame(callsite.file_name, callsite.line_number, definition=True) if callsite else None
        if called is not None:
            args["perfbot.function"] = called
    write_atomically(trace, json.dumps(data))


class RepositoryFrames:
    """Frames of the repository under test: the profiler's file names (shortened by the longest
    prefix among ``torch.profiler.python_tracer._prefix_regex``) back to paths relative to the
    repository, and lines to the qualified name of the function holding them (from the source)."""

    def __init__(self, roots: list[str]):
        from torch.profiler.python_tracer import _prefix_regex

        self.roots = [Path(r) for r in roots]
        self.prefixes = _prefix_regex()
        self.paths: dict[str, tuple[str, Path] | None] = {}
        self.scopes: dict[Path, list[tuple[int, int, int, str]]] = {}

    def frame(self, name: str, line: int, definition: bool) -> dict | None:
        """``{"path", "line", "function"}`` of a frame in the repository, else None. ``definition``:
        ``line`` is where the function starts (a called function), else a line inside it."""
        found = self.resolve(name)
        if found is None:
            return None
        relative, path = found
        scopes = self.scope_list(path)
        if definition:
            match = [s for s in scopes if line in (s[0], s[2])]
            if match:
                return {"path": relative, "line": match[-1][2], "function": match[-1][3]}
            return None
        holding = [s for s in scopes if s[0] <= line <= s[1]]
        function = holding[-1][3] if holding else "<module>"
        return {"path": relative, "line": line, "function": function}

    def resolve(self, name: str) -> tuple[str, Path] | None:
        if name not in self.paths:
            self.paths[name] = self._resolve(name)
        return self.paths[name]

    def _resolve(self, name: str) -> tuple[str, Path] | None:
        candidates = [Path(name)] if os.path.isabs(name) else [Path(p + name) for p in self.prefixes]
        for candidate in candidates:
            if not candidate.is_file():
                continue
            resolved = candidate.resolve()
            if {"site-packages", "dist-packages"} & set(resolved.parts):
                return None
            for root in self.roots:
                if root in resolved.parents:
                    return resolved.relative_to(root).as_posix(), resolved
            return None
        return None

    def scope_list(self, path: Path) -> list[tuple[int, int, int, str]]:
        """(first line with decorators, last line, def line, qualified name) of every function and
        class of the file, outer before inner."""
        if path not in self.scopes:
            import ast

            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (OSError, SyntaxError, ValueError):
                tree = ast.Module(body=[], type_ignores=[])
            found: list[tuple[int, int, int, str]] = []

            def visit(node, prefix: str) -> None:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        qualname = prefix + child.name
                        first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                        found.append((first, child.end_lineno or child.lineno, child.lineno, qualname))
                        inner = qualname + (".<locals>." if not isinstance(child, ast.ClassDef) else ".")
                        visit(child, inner)
                    else:
                        visit(child, prefix)

            visit(tree, "")
            self.scopes[path] = found
        return self.scopes[path]


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    partial.write_text(text)
    partial.replace(path)


class Bench:
    """The model of one rank and the timings taken on it."""

    def __init__(
        self,
        shape: Shape,
        world: int,
        device,
        dtype,
        allreduce: Callable,
        iters: int,
        warmup: int,
        target_se: float = 0.0,
    ):
        import torch

        self.torch, self.shape, self.world, self.device, self.dtype = torch, shape, world, device, dtype
        self.allreduce, self.iters, self.warmup, self.target_se = allreduce, iters, warmup, target_se
        self.verify_tokens = shape.batch * shape.num_draft_tokens
        self.draft_tokens = shape.batch * shape.draft_topk
        self.layers = [self.make_layer(moe=True) for _ in range(shape.layers)]
        self.draft_layer = self.make_layer(moe=False)
        self.lm_head = self.weight(shape.hidden, split(shape.vocab, world))
        self.verify_input = self.activations(self.verify_tokens)
        self.draft_input = self.activations(self.draft_tokens)
        self.decode_input = self.activations(shape.batch)  # one token per sequence, no speculation
        self.capture_s = 0.0  # seconds spent making CUDA graphs (`graphed`, `piecewise`)

    # -- weights and inputs

    def weight(self, *dims: int):
        """Random weights made on the device in their own dtype (no float32 copy to convert)."""
        return self.torch.randn(*dims, device=self.device, dtype=self.dtype).mul_(1.0 / math.sqrt(dims[-2]))

    def activations(self, tokens: int):
        return self.torch.randn(tokens, self.shape.hidden, device=self.device, dtype=self.dtype)

    def cache(self, kv_heads: int):
        s = self.shape
        return self.torch.randn(1, kv_heads, s.context, s.head_dim, device=self.device, dtype=self.dtype)

    def make_layer(self, moe: bool) -> dict:
        s, w = self.shape, self.world
        heads, kv_heads = split(s.heads, w), max(split(s.kv_heads, w), 1)
        inter = split(s.moe_intermediate, w)
        layer = {
            "norm": self.torch.ones(s.hidden, device=self.device, dtype=self.dtype),
            "qkv": self.weight(s.hidden, (heads + 2 * kv_heads) * s.head_dim),
            "o": self.weight(heads * s.head_dim, s.hidden),
            "k_cache": self.cache(kv_heads),
            "v_cache": self.cache(kv_heads),
            "heads": heads,
            "kv_heads": kv_heads,
        }
        if moe:
            layer["router"] = self.weight(s.hidden, s.experts)
            layer["gate_up"] = self.weight(s.experts, s.hidden, 2 * inter)
            layer["down"] = self.weight(s.experts, inter, s.hidden)
        else:
            layer["gate_up"] = self.weight(s.hidden, 2 * inter)
            layer["down"] = self.weight(inter, s.hidden)
        return layer

    # -- forward passes

    def rms_norm(self, x, weight):
        x32 = x.float()
        return (x32 * self.torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * weight

    def attention(self, x, layer):
        """This rank's share of attention, before the allreduce that sums the shares."""
        torch, s = self.torch, self.shape
        tokens, heads, kv_heads = x.shape[0], layer["heads"], layer["kv_heads"]
        widths = [heads * s.head_dim, kv_heads * s.head_dim, kv_heads * s.head_dim]
        q, k, v = (x @ layer["qkv"]).split(widths, -1)
        q = q.view(1, tokens, heads, s.head_dim).transpose(1, 2)
        k = torch.cat([layer["k_cache"], k.view(1, tokens, kv_heads, s.head_dim).transpose(1, 2)], 2)
        v = torch.cat([layer["v_cache"], v.view(1, tokens, kv_heads, s.head_dim).transpose(1, 2)], 2)
        k = k.repeat_interleave(heads // kv_heads, 1)
        v = v.repeat_interleave(heads // kv_heads, 1)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return out.transpose(1, 2).reshape(tokens, heads * s.head_dim) @ layer["o"]

    def moe(self, x, layer):
        """This rank's share of the MoE block: every expert computed, combined by top-k gates.
        Batched products over the experts' weights as they lie (an einsum over them copied every
        expert's weights on every pass: 9.9 of 16.3 ms per cycle on an H200, the kernel profile showed)."""
        torch = self.torch
        probs = torch.softmax((x @ layer["router"]).float(), -1)
        top_values, top_ids = probs.topk(self.shape.topk, -1)
        gates = torch.zeros_like(probs).scatter_(-1, top_ids, top_values).to(x.dtype)
        gate, up = torch.matmul(x, layer["gate_up"]).chunk(2, -1)  # (tokens, hidden) @ (e, hidden, 2i)
        experts_out = torch.matmul(torch.nn.functional.silu(gate) * up, layer["down"])
        return torch.einsum("eth,te->th", experts_out, gates)

    def mlp(self, x, layer):
        gate, up = (x @ layer["gate_up"]).chunk(2, -1)
        return (self.torch.nn.functional.silu(gate) * up) @ layer["down"]

    def decoder_layer(self, x, layer):
        """Generator: yields each partial sum to be allreduced and receives the reduced tensor."""
        x = x + (yield self.attention(self.rms_norm(x, layer["norm"]), layer))
        feed_forward = self.moe if "router" in layer else self.mlp
        return x + (yield feed_forward(self.rms_norm(x, layer["norm"]), layer))

    def verify_steps(self):
        return (yield from self.target_steps(self.verify_input))

    def decode_steps(self):
        return (yield from self.target_steps(self.decode_input))

    def target_steps(self, x):
        """The target model's forward pass over the tokens ``x``: every layer."""
        for layer in self.layers:
            x = yield from self.decoder_layer(x, layer)
        return x

    def draft_steps(self):
        x = yield from self.decoder_layer(self.draft_input, self.draft_layer)
        return (x @ self.lm_head).topk(self.shape.draft_topk, -1).indices

    def eager(self, steps: Callable) -> Callable:
        """Run a forward pass, every allreduce through the allreduce under test."""

        def run():
            forward = steps()
            try:
                partial = next(forward)
                while True:
                    partial = forward.send(self.allreduce(partial))
            except StopIteration as done:
                return done.value

        return run

    def draft(self):
        return self.eager(self.draft_steps)()

    # -- timing

    def measure(self, cuda_graphs: bool, mode: str, modes: tuple[str, ...] = ()) -> dict[str, Timed]:
        """The verify passes of ``modes`` (default: the engine's), the draft step, the allreduce at
        two ranks or more, and the cycle in ``mode`` derived from them."""
        s = self.shape
        verify_tensor = self.activations(self.verify_tokens)
        draft_tensor = self.activations(self.draft_tokens)
        metrics = {}
        # One rank exchanges nothing: the figure would be the cost of a call that returns, a
        # microsecond that moved by up to 17% between two runs of the same commits on an H200. What the
        # function under test does at one rank (a copy, a synchronisation) is in the verify passes.
        if self.world > 1:
            metrics["allreduce_verify_us"] = self.collective_us(verify_tensor)
            metrics["allreduce_draft_us"] = self.collective_us(draft_tensor)
        for verify_mode in modes or (mode,):
            if verify_mode != "eager" and not cuda_graphs:
                raise SystemExit(f"verify_step_workload: {verify_mode} needs CUDA graphs")
            metrics[VERIFY_OF_MODE[verify_mode]] = self.timed_ms(self.verify_in(verify_mode))
        metrics["draft_ms"] = self.timed_ms(self.draft_in(mode))
        draft, verify = metrics["draft_ms"], metrics[VERIFY_OF_MODE[mode]]
        cycle = s.num_steps * draft.value + verify.value
        cycle_se = math.hypot(s.num_steps * draft.se, verify.se)  # independent timings
        metrics["cycle_ms"] = Timed(cycle, cycle_se, min(draft.calls, verify.calls))
        tok_s = 1000 * s.accept_length / cycle
        metrics["tok_s"] = Timed(tok_s, tok_s * cycle_se / cycle, metrics["cycle_ms"].calls)
        decode = metrics["decode_ms"] = self.timed_ms(self.target_in(mode, self.decode_steps))
        plain = 1000 / decode.value
        metrics["baseline_tok_s"] = Timed(plain, plain * decode.se / decode.value, decode.calls)
        speedup = tok_s / plain
        relative_se = math.hypot(cycle_se / cycle, decode.se / decode.value)  # independent timings
        calls = min(decode.calls, metrics["cycle_ms"].calls)
        metrics["spec_speedup"] = Timed(speedup, speedup * relative_se, calls)
        return metrics

    def verify_in(self, mode: str) -> Callable:
        return self.target_in(mode, self.verify_steps)

    def target_in(self, mode: str, steps: Callable) -> Callable:
        """A target-model pass (verify or plain decode) as the engine runs it in ``mode``."""
        if mode == "full":
            return self.graphed(self.eager(steps))
        if mode == "piecewise":
            return self.piecewise(steps)
        return self.eager(steps)

    def draft_in(self, mode: str) -> Callable:
        return self.draft if mode == "eager" else self.graphed(self.draft)

    def cycle_name(self, mode: str) -> str:
        how = {"full": "one CUDA graph", "piecewise": "piecewise CUDA graphs", "eager": "eager"}[mode]
        return f"one EAGLE-3 cycle ({self.shape.num_steps} draft steps + verify), {how}"

    def profile(self, mode: str, trace: Path | None, steps: int, roots: list[str] | None = None) -> int:
        """Run ``steps`` cycles in ``mode`` under the profiler, after warming up; untimed. Only rank 0
        (``trace`` given) records; the others run the same steps, whose collectives it waits on.
        ``roots``: the repository's folders, whose frames `annotate_trace` names (None: no stacks)."""
        torch = self.torch
        verify, draft = self.verify_in(mode), self.draft_in(mode)

        def cycle():  # no synchronisation of its own: the profile would count it as the code's
            for _ in range(self.shape.num_steps):
                draft()
            verify()

        with torch.inference_mode():
            for _ in range(max(self.warmup, 1)):
                cycle()
            if trace is None:
                for _ in range(steps + 1):
                    cycle()
            else:
                self.profiled(cycle, trace, steps, roots)
        if roots is not None:  # every rank: the recording rank's cycles wait on the others' collectives
            record_lines(cycle, roots, trace.parent.parent if trace is not None else None, torch)
        return steps

    def profiled(self, cycle: Callable, trace: Path, steps: int, roots: list[str] | None) -> None:
        """``steps`` cycles under PyTorch's profiler (after one it counts as its warm-up), the trace
        written to ``trace`` and, with ``roots``, its Python calls named."""
        from torch.profiler import ProfilerActivity, profile, schedule

        activities = [ProfilerActivity.CPU]
        if self.device.type == "cuda":
            activities.append(ProfilerActivity.CUDA)
        trace.parent.mkdir(parents=True, exist_ok=True)

        # Kernels count in the step whose host window launched them (`kineto`), so the device
        # may run behind; the profiler drains it when it stops, after the last step's window.
        def export(done) -> None:
            done.export_chrome_trace(str(trace))
            if roots is None:
                return
            try:
                annotate_trace(done, trace, roots)
            except Exception as error:  # noqa: BLE001 - the map is extra: the kernel profile stands
                print(
                    f"verify_step_workload: no per-step map: the trace's Python calls could not be "
                    f"named ({type(error).__name__}: {error})",
                    file=sys.stderr,
                )

        with contextlib.ExitStack() as stack:
            with compiler_left_unimported(self.torch):  # only while it starts (`prepare_trace`)
                profiler = stack.enter_context(
                    profile(
                        activities=activities,
                        schedule=schedule(wait=0, warmup=1, active=steps, repeat=1),
                        with_stack=roots is not None,
                        on_trace_ready=export,
                    )
                )
            for _ in range(steps + 1):
                cycle()
                profiler.step()

    def warm(self, mode: str, cuda_graphs: bool) -> None:
        """Each step the rounds time (verify, draft, plain decode) made as in ``mode`` (its graphs
        captured) and run once; untimed."""
        mode = mode if cuda_graphs else "eager"
        steps = (self.verify_in(mode), self.draft_in(mode), self.target_in(mode, self.decode_steps))
        with self.torch.inference_mode():  # made outside it and run inside it, as `timed_ms` does
            for step in steps:
                step()
        self.synchronize()

    def graphed(self, step: Callable) -> Callable:
        began = time.monotonic()
        try:
            return self._graphed(step)
        finally:
            self.capture_s += time.monotonic() - began

    def _graphed(self, step: Callable) -> Callable:
        torch = self.torch
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        return graph.replay

    def piecewise(self, steps: Callable) -> Callable:
        """Piecewise CUDA graphs: the compute between two allreduces is one graph; the allreduces run
        eagerly in between (SGLang's ``--enable-piecewise-cuda-graph``), so host-side costs of the
        allreduce under test (a synchronisation, an extra launch) stay visible."""
        began = time.monotonic()
        try:
            return self._piecewise(steps)
        finally:
            self.capture_s += time.monotonic() - began

    def _piecewise(self, steps: Callable) -> Callable:
        torch = self.torch
        self.eager(steps)()  # warm-up outside capture (cuBLAS handles, NCCL communicators)
        graphs, partials, reduced_inputs = [], [], []
        forward, received = steps(), None
        while True:
            graph = torch.cuda.CUDAGraph()
            finished = False
            with torch.cuda.graph(graph):
                try:
                    partial = next(forward) if received is None else forward.send(received)
                except StopIteration:
                    finished = True
            graphs.append(graph)
            if finished:
                break
            received = torch.empty_like(partial)
            partials.append(partial)
            reduced_inputs.append(received)

        def run():
            for graph, partial, received in zip(graphs, partials, reduced_inputs, strict=False):
                graph.replay()
                received.copy_(self.allreduce(partial))
            graphs[-1].replay()

        return run

    def timed_ms(self, step: Callable) -> Timed:
        """The median of up to ``iters`` timed calls, in batches of `BATCH`, stopping once its
        standard error is within ``target_se`` of it (every rank times as many calls)."""
        timer = self.time_cuda if self.device.type == "cuda" else self.time_cpu
        samples: list[float] = []
        with self.torch.inference_mode():
            for _ in range(self.warmup):
                step()
            while len(samples) < self.iters:
                samples += timer(step, min(BATCH, self.iters - len(samples)))
                if len(samples) >= min(MIN_ITERS, self.iters) and self.agreed_precise(samples):
                    break
        return Timed.of(samples)

    def agreed_precise(self, samples: list[float]) -> bool:
        """Whether every rank's median is precise enough (their calls are the same collectives, so
        all ranks must stop together)."""
        timed = Timed.of(samples)
        precise = self.target_se > 0 and timed.se <= self.target_se * abs(timed.value)
        if self.world == 1:
            return precise
        flag = self.torch.tensor([0.0 if precise else 1.0], device=self.device)
        self.torch.distributed.all_reduce(flag, op=self.torch.distributed.ReduceOp.MAX)
        return flag.item() == 0.0

    def collective_us(self, tensor) -> Timed:
        """Microseconds per call of the allreduce under test, from `ALLREDUCE_BLOCKS` blocks of
        back-to-back calls, each block timed on the host from aligned ranks to the end of its last
        call. Launch cost and how far apart the ranks were at the start are shared by a whole
        block instead of weighing on every call. Each rank takes the median of its blocks; the
        figure is the smallest over the ranks: the rank that waited least for its peers."""
        torch, per_block = self.torch, max(10, self.iters // 2)
        blocks = []
        with torch.inference_mode():
            for _ in range(self.warmup):
                self.allreduce(tensor)
            for _ in range(ALLREDUCE_BLOCKS):
                self.align(tensor)
                began = time.perf_counter()
                for _ in range(per_block):
                    self.allreduce(tensor)
                self.synchronize()
                blocks.append(1e6 * (time.perf_counter() - began) / per_block)
        timed = Timed.of(blocks)
        smallest = torch.tensor([timed.value], dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(smallest, op=torch.distributed.ReduceOp.MIN)
        return Timed(float(smallest.item()), timed.se, per_block * ALLREDUCE_BLOCKS)

    def align(self, tensor) -> None:
        """Bring the ranks to the same instant: a barrier, then one collective that no rank can
        leave before every rank has joined it, and the device drained."""
        self.synchronize()
        self.torch.distributed.barrier()
        self.allreduce(tensor)
        self.synchronize()

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()

    def barrier(self) -> None:
        """All ranks here; nothing at one rank (a barrier would make a communicator nobody needs)."""
        if self.world > 1:
            self.synchronize()
            self.torch.distributed.barrier()

    def time_cuda(self, step: Callable, calls: int) -> list[float]:
        torch = self.torch
        torch.cuda.synchronize()
        self.barrier()
        events = [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(calls)
        ]
        for start, end in events:
            start.record()
            step()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) for start, end in events]

    def time_cpu(self, step: Callable, calls: int) -> list[float]:
        """Milliseconds of this process's CPU time per call (its threads, gloo's included), not of
        the wall clock: ranks that share cores with each other and with whatever else the machine
        runs would otherwise time how long they waited to be scheduled (on a loaded 2-core machine
        that moved two-rank cycles by 2.5x between rounds of the same code)."""
        samples = []
        for _ in range(calls):
            self.barrier()
            began = time.process_time()
            step()
            samples.append(1000 * (time.process_time() - began))
        return samples


@dataclass(frozen=True)
class Timed:
    """One metric of one round: its value, the standard error of that value, and how many timed
    calls it came from."""

    value: float
    se: float
    calls: int

    @staticmethod
    def of(samples: list[float]) -> Timed:
        """The median of ``samples`` with its large-sample standard error, from the scaled median
        absolute deviation so that a few slow calls do not inflate it."""
        middle = statistics.median(samples)
        spread = 1.4826 * statistics.median(abs(x - middle) for x in samples)
        return Timed(middle, 1.2533 * spread / math.sqrt(len(samples)), len(samples))


def split(total: int, world: int) -> int:
    """One rank's share of a dimension split over the tensor-parallel ranks."""
    if total % world:
        raise SystemExit(f"verify_step_workload: {total} does not split over {world} ranks")
    return total // world


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.gate and repository_importable(args.pythonpath):
        # Whatever is imported from here on could be the repository's own: the gate first.
        wait_at_gate(args.gate, int(os.environ.get("RANK", "1")) if args.worker else 0)
    if args.worker:
        run_rank(args)
        flush_and_exit(0)
    return launch(args, argv)


if __name__ == "__main__":
    sys.exit(main())
