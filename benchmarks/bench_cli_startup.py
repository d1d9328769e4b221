"""Benchmark how fast the `perfbot` command starts, against the bare interpreter start-up.

The floor is `python -c pass` with the same interpreter: no command can start faster. Timed side
by side in one run, round-robin (so a busy moment hits every command alike): the floor,
`perfbot --version`, `perfbot --help`, `perfbot score` of a one-line change (its start-up: the
work on the diff is next to nothing) and of a generated diff with 400 changed lines, from a file and
from standard input, and `perfbot deliver --help`. With ``--baseline DIR`` (another
checkout of perfbot, e.g. the main branch exported to a folder) the score commands are also timed
with DIR's code in the same rounds (`python -m bot` with DIR first on the path), so a change is
measured side by side with what it replaces. Every command runs once untimed first, with bytecode
caching on whatever PYTHONDONTWRITEBYTECODE says here, so that each then starts from its .pyc
files as an installed perfbot does (pip compiles them at install).
Each is a fresh process, timed in wall seconds from start to exit; the medians are printed with
their ratio to the floor and whether each target is met, both as absolute seconds (set on the
2-core reference machine) and as seconds above the floor (what to compare on another machine).

    python benchmarks/bench_cli_startup.py                 # 11 rounds
    python benchmarks/bench_cli_startup.py --repeat 21
    python benchmarks/bench_cli_startup.py --baseline /tmp/perfbot-main
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench_score import synthetic_diff

DIFF_CHANGED_LINES = 400
# The smallest change worth scoring: a host sync added to a communicator.
ONE_LINE = """\
diff --git a/vllm/distributed/device_communicators/pynccl.py b/vllm/distributed/device_communicators/pynccl.py
index 1111111..2222222 100644
--- a/vllm/distributed/device_communicators/pynccl.py
+++ b/vllm/distributed/device_communicators/pynccl.py
@@ -1,2 +1,3 @@ def all_reduce(self, x):
     y = x
+    torch.cuda.synchronize()
     return y
"""
# `perfbot score` start-up (the one-line change), in CPU seconds, as a multiple of the floor's.
STARTUP_X_FLOOR = 3.0


@dataclass(frozen=True)
class Case:
    name: str
    argv: list[str]
    target_s: float | None  # absolute wall seconds on the 2-core reference machine
    target_above_floor_s: float | None  # the same budget less that machine's floor (0.02 s)
    target_x_floor: float | None = None  # CPU seconds as a multiple of the floor's
    stdin: Path | None = None  # a file to pipe in
    pythonpath: str | None = None  # the checkout whose code runs (None: the installed one)


def perfbot_argv() -> list[str]:
    """The installed `perfbot` script beside this interpreter, else `python -m bot`."""
    script = Path(sys.executable).with_name("perfbot")
    return [str(script)] if script.exists() else [sys.executable, "-m", "bot"]


def run_once(case: Case) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one fresh process; the CPU seconds change
    little with what else the machine runs, the wall seconds are what a user waits."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    if case.pythonpath:
        env["PYTHONPATH"] = case.pythonpath
    with open(case.stdin or os.devnull, "rb") as stdin:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        # From a neutral folder: `python -m` puts the working directory ahead of PYTHONPATH.
        done = subprocess.run(
            case.argv,
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            cwd=tempfile.gettempdir(),
        )
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(case.argv)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11, help="rounds of every command (default 11)")
    parser.add_argument(
        "--baseline", metavar="DIR", help="also time the score commands with this checkout's code"
    )
    args = parser.parse_args()

    perfbot = perfbot_argv()
    with tempfile.TemporaryDirectory() as folder:
        diff = Path(folder) / "change.diff"
        text = synthetic_diff(DIFF_CHANGED_LINES)
        diff.write_text(text)
        small = Path(folder) / "one-line.diff"
        small.write_text(ONE_LINE)
        changed = sum(
            1 for line in text.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))
        )
        cases = [
            Case("python -c pass (floor)", [sys.executable, "-c", "pass"], None, None),
            Case("perfbot --version", [*perfbot, "--version"], 0.30, 0.28),
            Case("perfbot --help", [*perfbot, "--help"], 0.30, 0.28),
            Case(
                "perfbot score (one-line change)",
                [*perfbot, "score", str(small)],
                0.60,
                0.58,
                target_x_floor=STARTUP_X_FLOOR,
            ),
            Case(f"perfbot score ({changed}-line change)", [*perfbot, "score", str(diff)], 0.60, 0.58),
            Case("perfbot score - (the same, stdin)", [*perfbot, "score", "-"], 0.60, 0.58, stdin=diff),
            Case("perfbot deliver --help", [*perfbot, "deliver", "--help"], 0.30, 0.28),
        ]
        if args.baseline:
            module = [sys.executable, "-m", "bot"]
            here = str(Path(__file__).resolve().parents[1])
            for label, path in (("this tree", here), ("baseline", args.baseline)):
                cases.append(
                    Case(
                        f"score 1 line ({label}, -m bot)",
                        [*module, "score", str(small)],
                        None,
                        None,
                        pythonpath=path,
                    )
                )
                cases.append(
                    Case(
                        f"score ({label}, -m bot)", [*module, "score", str(diff)], None, None, pythonpath=path
                    )
                )
                cases.append(
                    Case(
                        f"score - ({label}, -m bot)",
                        [*module, "score", "-"],
                        None,
                        None,
                        stdin=diff,
                        pythonpath=path,
                    )
                )
        for case in cases:  # warm-up: page cache, .pyc files
            run_once(case)
        times: dict[str, list[float]] = {case.name: [] for case in cases}
        cpu: dict[str, list[float]] = {case.name: [] for case in cases}
        for _ in range(args.repeat):
            for case in cases:
                wall, used = run_once(case)
                times[case.name].append(wall)
                cpu[case.name].append(used)

    print(
        f"{' '.join(perfbot)}; diff: {len(text.splitlines())} lines, {changed} changed; "
        f"medians of {args.repeat} rounds, wall seconds (and CPU seconds, user + system)"
    )
    floor = statistics.median(times[cases[0].name])
    cpu_floor = statistics.median(cpu[cases[0].name])
    print(f"{'command':<36}{'median':>8}{'min':>8}{'x floor':>9}{'above':>8}{'cpu':>8}{'x floor':>9}  target")
    all_met = True
    for case in cases:
        median, fastest = statistics.median(times[case.name]), min(times[case.name])
        above = median - floor
        used = statistics.median(cpu[case.name])
        row = (
            f"{case.name:<36}{median:8.3f}{fastest:8.3f}{median / floor:8.1f}x{above:8.3f}"
            f"{used:8.3f}{used / cpu_floor:8.1f}x"
        )
        if case.target_s is not None and case.target_above_floor_s is not None:
            met = median <= case.target_s and above <= case.target_above_floor_s
            row += f"  <= {case.target_s:.2f} s, <= {case.target_above_floor_s:.2f} s above"
            if case.target_x_floor is not None:
                met &= used / cpu_floor <= case.target_x_floor
                row += f", CPU <= {case.target_x_floor:g}x the floor's"
            all_met &= met
            row += f": {'OK' if met else 'MISSED'}"
        print(row)
    return 0 if all_met else 1


if __name__ == "__main__":
    sys.exit(main())
