"""Monte-Carlo benchmark of the watch's decision: simulated default-branch streams, the product's
own detection (`bot.core.watch.opening.established` and `decide`) run after every new point, and
the cases it opens, moves, widens and recovers kept as the service keeps them.

Each stream is a series of one metric (lower is better) measured once per point. A stepped stream
gets a step of ``+STEP`` at a random point after ``WARM`` quiet points; a quiet stream never
changes. Noise is Gaussian or heavy-tailed (Student's t with 3 degrees of freedom, scaled to the
same standard deviation), at a coefficient of variation of 1% or 2%. Three ways of measuring:

- ``daily``: one scheduled run a day, several merges apart: every span holds several commits;
- ``merges``: every merge measured against its parent, its own run inconclusive (the series alone
  must find the step: its one-commit span is re-measured by the case);
- ``runs``: every merge measured by a run of its own, `ROUNDS` rounds a side judged by the
  product's statistics, whose regression is put to the watch's merge rule (`from_merge_run`).

A case is dispatched to its bisect as soon as it opens (an unlimited budget), and the bisect
reports ``BISECT_DELAY`` points later: confirmed when the case's range holds the step's commit,
not reproduced otherwise. Printed per cell: for stepped streams, how often the step gave exactly
one case and one bisect, how often it was found (a case confirmed), misses, the delay (points
measured after the step when the case opened: median and 90th percentile), cases and bisects per
step; for quiet streams, the share of streams that opened any case and the cases per stream. Each
rate has a 95% Wilson interval. Two seeds are run: the tuning set and a held-out set.

    python benchmarks/bench_watch.py                  # 1,000 streams a cell, both sets
    python benchmarks/bench_watch.py --streams 200    # quicker
    python benchmarks/bench_watch.py --full           # also every merge measured, 30-point streams
    python benchmarks/bench_watch.py --mode runs      # every merge's own run judged (the merge rule)
    python benchmarks/bench_watch.py --check          # exit 1 if a target is missed (held-out set)
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing import Pool

import numpy as np

from bot.core.judge.verdicts import judge
from bot.core.watch import cases as states
from bot.core.watch.cases import Span
from bot.core.watch.opening import (
    Decision,
    Found,
    KnownCase,
    Move,
    Open,
    Recover,
    SeriesPoint,
    Widen,
    decide,
    established,
    from_merge_run,
)

WARM = 30  # quiet points before a step may come
ROUNDS = 5  # rounds per side of a merge's run in ``runs`` mode (the config's bench.rounds)
AFTER = 24  # points measured after the step
BISECT_DELAY = 1  # points between a bisect's dispatch and its report
SEEDS = {"tuning": 20261206, "held-out": 777_000_001}


@dataclass
class SimCase:
    key: str
    span: Span
    state: str
    opened_at: int  # how many points the series had when it opened
    source: str = "changepoint"


@dataclass
class Outcome:
    cases: list[SimCase] = field(default_factory=list)
    bisects: int = 0
    found_at: int | None = None  # points after the step when the first case holding it opened
    confirmed: bool = False


def sha(i: int) -> str:
    return f"{i:040x}"


def noise(rng: np.random.Generator, n: int, cv: float, tails: str) -> np.ndarray:
    if tails == "gaussian":
        return rng.normal(0.0, cv, n)
    return rng.standard_t(3, n) * cv / math.sqrt(3.0)


def merge_run(
    rng: np.random.Generator, base_level: float, head_level: float, cv: float, tails: str
) -> tuple[float, Found | None]:
    """One merge's run, as a runner makes it: `ROUNDS` rounds a side on one machine, each round
    scattering at the stream's CV, and a factor of the machine shared by both sides, sized so that
    the series' point (the head's median) scatters at the stream's CV too (the same noise as the
    other ways of measuring: the change-point test's floor is 2%); the run judged by the product's
    statistics, and what the watch's merge rule makes of its verdict."""
    # the median of ROUNDS Gaussian values scatters by about 1.2 / sqrt(ROUNDS) of one of them
    machine = 1.0 + noise(rng, 1, cv * math.sqrt(1.0 - 1.44 / ROUNDS), tails)[0]
    base = base_level * machine * (1.0 + noise(rng, ROUNDS, cv, tails))
    head = head_level * machine * (1.0 + noise(rng, ROUNDS, cv, tails))
    verdict = judge(base.tolist(), head.tolist(), "lower")
    found = from_merge_run("o/r", "s", "m", "", "", verdict.verdict, verdict.change, verdict.p_value)
    return float(np.median(head)), found


def simulate(
    rng: np.random.Generator, *, n: int, step: float, step_at: int | None, cv: float, tails: str, mode: str
) -> Outcome:
    """One stream, the decision run after every point; the outcome for its step (if any)."""
    values = 10.0 * (1.0 + noise(rng, n, cv, tails))
    if step_at is not None:
        values[step_at:] *= 1.0 + step
    commits_per_point = 3 if mode == "daily" else 1
    points: list[SeriesPoint] = []
    cases: dict[str, SimCase] = {}
    pending: dict[str, int] = {}  # bisecting case -> the point count when it reports
    out = Outcome()
    # Commit numbering: point i measures commit c(i) = (i + 1) * commits_per_point; the step's
    # commit is the one measured first at ``step_at`` (or, in daily mode, one of the commits in
    # between, which the range (good, bad] holds either way).
    step_commit = None if step_at is None else step_at * commits_per_point + 1

    def commit_of(sha_text: str) -> int:
        return int(sha_text, 16)

    for i in range(n):
        commit = (i + 1) * commits_per_point
        base = commit - 1
        by_run: list[Decision] = []
        if mode == "runs":

            def level(c: int) -> float:
                return 10.0 * (1.0 + step if step_commit is not None and c >= step_commit else 1.0)

            values[i], found_by_run = merge_run(rng, level(base), level(commit), cv, tails)
            if found_by_run is not None:
                by_run.append(Open(Found(Span("o/r", "s", "m", sha(base), sha(commit)), "merge")))
        points.append(SeriesPoint(sha(commit), sha(base), float(values[i])))
        for key, due in list(pending.items()):
            if len(points) >= due:
                case = cases[key]
                holds = step_commit is not None and commit_of(case.span.good) < step_commit <= commit_of(
                    case.span.bad
                )
                case.state = states.CONFIRMED if holds else states.NOT_REPRODUCED
                out.confirmed |= holds
                del pending[key]
        found = established("o/r", "s", "m", "lower", points)
        for decision in by_run:
            _apply(decision, cases, pending, out, len(points))
        known = [KnownCase(c.key, c.span, c.source, c.state) for c in cases.values()]  # type: ignore[arg-type]
        for decision in decide(found, known, points, "lower", metric="m"):
            _apply(decision, cases, pending, out, len(points))
        if step_at is not None and out.found_at is None:
            for case in cases.values():
                if commit_of(case.span.good) < (step_commit or 0) <= commit_of(case.span.bad):
                    out.found_at = i - step_at + 1
                    break
    out.cases = list(cases.values())
    return out


def _apply(
    decision: Decision, cases: dict[str, SimCase], pending: dict[str, int], out: Outcome, now: int
) -> None:
    """As the service applies it: a new case is bisected at once; a move or widening supersedes
    the old case by a new one (bisected again when it was bisecting); a recovery ends it."""
    if isinstance(decision, Recover):
        cases[decision.key].state = states.RECOVERED
        return
    span = decision.found.span
    key = span.key()
    if isinstance(decision, Move | Widen):
        cases[decision.key].state = states.SUPERSEDED
        pending.pop(decision.key, None)
    if key in cases:
        return
    cases[key] = SimCase(key, span, states.BISECTING, now, decision.found.source)
    pending[key] = now + BISECT_DELAY
    out.bisects += 1


@dataclass
class Rate:
    hits: int
    total: int

    def __str__(self) -> str:
        if self.total == 0:
            return "-"
        p, n, z = self.hits / self.total, self.total, 1.96
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return f"{100 * p:5.1f}% [{100 * max(0, centre - half):4.1f}, {100 * min(1, centre + half):5.1f}]"

    @property
    def value(self) -> float:
        return self.hits / self.total if self.total else math.nan


@dataclass
class Cell:
    name: str
    exact_one: Rate
    found: Rate
    missed: Rate
    delays: list[int]
    cases_per: float
    bisects_per: float
    false_streams: Rate | None = None


def _stepped_one(args: tuple[int, int, float, float, str, str]) -> tuple[int, int, int | None]:
    seed, index, step, cv, tails, mode = args
    rng = np.random.default_rng([seed, index])
    step_at = WARM + int(rng.integers(0, 10))
    out = simulate(rng, n=step_at + AFTER, step=step, step_at=step_at, cv=cv, tails=tails, mode=mode)
    return len(out.cases), out.bisects, out.found_at


def _quiet_one(args: tuple[int, int, int, float, str, str]) -> tuple[int, int]:
    seed, index, n, cv, tails, mode = args
    rng = np.random.default_rng([seed, index])
    out = simulate(rng, n=n, step=0.0, step_at=None, cv=cv, tails=tails, mode=mode)
    return len(out.cases), out.bisects


def stepped(pool: Pool, streams: int, seed: int, *, step: float, cv: float, tails: str, mode: str) -> Cell:
    outs = pool.map(_stepped_one, [(seed, i, step, cv, tails, mode) for i in range(streams)], chunksize=8)
    one = sum(cases == 1 and bisects == 1 and found is not None for cases, bisects, found in outs)
    delays = [found for _, _, found in outs if found is not None]
    name = f"+{step:.0%} step, CV {cv:.0%}, {tails}, {mode}"
    return Cell(
        name,
        Rate(one, streams),
        Rate(len(delays), streams),
        Rate(streams - len(delays), streams),
        delays,
        sum(cases for cases, _, _ in outs) / streams,
        sum(bisects for _, bisects, _ in outs) / streams,
    )


def quiet(pool: Pool, streams: int, seed: int, *, n: int, cv: float, tails: str, mode: str) -> Cell:
    outs = pool.map(_quiet_one, [(seed, i, n, cv, tails, mode) for i in range(streams)], chunksize=8)
    name = f"quiet {n} points, CV {cv:.0%}, {tails}, {mode}"
    cell = Cell(name, Rate(0, 0), Rate(0, 0), Rate(0, 0), [], 0.0, sum(b for _, b in outs) / streams)
    cell.false_streams = Rate(sum(cases > 0 for cases, _ in outs), streams)
    cell.cases_per = sum(cases for cases, _ in outs) / streams
    return cell


@dataclass(frozen=True)
class Target:
    what: str
    cell: str
    holds: Callable[[Cell], bool]


TARGETS = (
    Target(
        "≥ 98% of +8% steps at CV 1% give exactly one case and one bisect",
        "+8% step, CV 1%, gaussian, daily",
        lambda c: c.exact_one.value >= 0.98,
    ),
    Target(
        "+8% at CV 2% found in ≥ 97%, median delay ≤ 6 points",
        "+8% step, CV 2%, gaussian, daily",
        lambda c: c.found.value >= 0.97 and statistics.median(c.delays) <= 6,
    ),
    Target(
        "≤ 1% of quiet streams at CV 2% over 90 points open a case",
        "quiet 90 points, CV 2%, gaussian, daily",
        lambda c: c.false_streams is not None and c.false_streams.value <= 0.01,
    ),
    Target(
        "+3% at CV 1% found in ≥ 90%", "+3% step, CV 1%, gaussian, daily", lambda c: c.found.value >= 0.90
    ),
)


def run(pool: Pool, streams: int, seed: int, full: bool, modes: tuple[str, ...] = ("daily",)) -> list[Cell]:
    """The targets' cells in both noise shapes (``modes``, daily runs by default); with ``full``,
    every cell in both ways of measuring."""
    cells = []
    for mode in ("daily", "merges", *[m for m in modes if m not in ("daily", "merges")]) if full else modes:
        for tails in ("gaussian", "heavy"):
            for step, cv in ((0.08, 0.01), (0.08, 0.02), (0.03, 0.01)):
                cells.append(stepped(pool, streams, seed, step=step, cv=cv, tails=tails, mode=mode))
            for n, cv in ((30, 0.02), (90, 0.01), (90, 0.02)) if full else ((90, 0.02),):
                cells.append(quiet(pool, streams, seed + n, n=n, cv=cv, tails=tails, mode=mode))
    return cells


def show(cells: list[Cell]) -> None:
    header = ("stream", "one case+bisect", "found", "delay med/p90", "cases", "bisects")
    print(f"{header[0]:44} {header[1]:>22} {header[2]:>22} {header[3]:>13} {header[4]:>6} {header[5]:>7}")
    for c in cells:
        if c.false_streams is not None:
            print(
                f"{c.name:44} {'any case: ' + str(c.false_streams):>46} {'':>13} {'':>6} {c.bisects_per:7.3f}"
            )
            continue
        delay = "-"
        if c.delays:
            ordered = sorted(c.delays)
            delay = f"{statistics.median(ordered):g}/{ordered[int(0.9 * (len(ordered) - 1))]}"
        print(
            f"{c.name:44} {c.exact_one!s:>22} {c.found!s:>22} {delay:>13} "
            f"{c.cases_per:6.3f} {c.bisects_per:7.3f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=1000, help="streams per cell (default 1000)")
    parser.add_argument("--set", choices=[*SEEDS, "both"], default="both")
    parser.add_argument("--full", action="store_true", help="every cell, also every merge measured")
    parser.add_argument(
        "--mode",
        action="append",
        choices=("daily", "merges", "runs"),
        help="ways of measuring (default: daily; runs: every merge's own run judged)",
    )
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="processes (default: all cores)"
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if a target is missed on the held-out set"
    )
    args = parser.parse_args()
    failed = False
    for name, seed in SEEDS.items():
        if args.set not in ("both", name):
            continue
        started = time.monotonic()
        with Pool(args.jobs) as pool:
            cells = run(pool, args.streams, seed, args.full, tuple(args.mode or ("daily",)))
        took = time.monotonic() - started
        print(f"\n## {name} set (seed {seed}), {args.streams} streams a cell, {took:.0f} s")
        show(cells)
        by_name = {c.name: c for c in cells}
        for target in TARGETS:
            if target.cell not in by_name:
                continue
            ok = target.holds(by_name[target.cell])
            print(f"{'met ' if ok else 'MISSED'} {target.what}")
            failed |= not ok and name == "held-out"
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
