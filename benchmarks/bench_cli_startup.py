"""Benchmark how fast the `perfbot` command starts, against the bare interpreter start-up.

The floor is `python -c pass` with the same interpreter: no command can start faster. Timed side
by side in one run, round-robin (so a busy moment hits every command alike): the floor,
`perfbot --version`, `perfbot --help` and `perfbot score` of a generated diff with 400 changed lines,
from a file and from standard input, and `perfbot deliver --help`. With ``--baseline DIR`` (another
checkout of perfbot, e.g. the main branch exported to a folder) the score commands are also timed
with DIR's code in the same rounds (`python -m bot` with DIR first on the path), so a change is
measured side by side with what it replaces.
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


@dataclass(frozen=True)
class Case:
    name: str
    argv: list[str]
    target_s: float | None  # absolute wall seconds on the 2-core reference machine
    target_above_floor_s: float | None  # the same budget less that machine's floor (0.02 s)
    stdin: Path | None = None  # a file to pipe in
    pythonpath: str | None = None  # the checkout whose code runs (None: the installed one)


def perfbot_argv() -> list[str]:
    """The installed `perfbot` script beside this interpreter, else `python -m bot`."""
    script = Path(sys.executable).with_name("perfbot")
    return [str(script)] if script.exists() else [sys.executable, "-m", "bot"]


def run_once(case: Case) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one fresh process; the CPU seconds change
    little with what else the machine runs, the wall seconds are what a user waits."""
    env = {**os.environ, "PYTHONPATH": case.pythonpath} if case.pythonpath else None
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
        changed = sum(
            1 for line in text.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))
        )
        cases = [
            Case("python -c pass (floor)", [sys.executable, "-c", "pass"], None, None),
            Case("perfbot --version", [*perfbot, "--version"], 0.30, 0.28),
            Case("perfbot --help", [*perfbot, "--help"], 0.30, 0.28),
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
            all_met &= met
            row += (
                f"  <= {case.target_s:.2f} s, <= {case.target_above_floor_s:.2f} s above: "
                f"{'OK' if met else 'MISSED'}"
            )
        print(row)
    return 0 if all_met else 1


if __name__ == "__main__":
    sys.exit(main())
