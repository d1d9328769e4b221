"""Calibrate the judging core on simulated results with known truth; print Markdown tables.

    .venv/bin/python benchmarks/calibrate_stats.py            # full run: about 3 minutes of CPU
    .venv/bin/python benchmarks/calibrate_stats.py --quick    # 5x fewer repetitions

Statistics: rounds drawn from normal, log-normal, bimodal and outlier-ridden distributions with
1-10% coefficient of variation; head slowed by 0-50%. Every verdict comes from the real
`bot.core.judge.stats.judge` / `decide`. Targets: A/A false alarms <= 1% per comparison; a 5% shift at
2% CV detected in >= 95% of comparisons within 10 rounds per side.

Bisection: runs needed by `bot.core.bisect.plan.next_step` against plain bisection (halving, as
`git bisect` does on a linear history) for every culprit position, with the culprit ranked first,
in the middle or last by risk, or all scores equal; and on the sample repository of
`examples/sample_repo.py`, with the scores `perfbot triage` gives its commits and the slow commit
seeded at every position of the range.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.core.bisect import plan as bisection  # noqa: E402
from bot.core.judge import (
    results,  # noqa: E402
    stats,  # noqa: E402
)

DISTRIBUTIONS = ("normal", "lognormal", "bimodal", "outliers")
CLAIMS = ("regression", "improvement")


# ---------------------------------------------------------------- simulated rounds


def draw(rng: np.random.Generator, kind: str, rounds: int, cv: float, scale: float = 100.0) -> np.ndarray:
    """Per-round values of one side with about ``cv`` coefficient of variation."""
    if kind == "normal":
        return scale * np.abs(1 + cv * rng.standard_normal(rounds))
    if kind == "lognormal":
        sigma = math.sqrt(math.log(1 + cv * cv))
        return scale * rng.lognormal(-sigma * sigma / 2, sigma, rounds)
    if kind == "bimodal":  # 30% of rounds land in a second mode 2 CVs higher (e.g. another clock)
        second = rng.random(rounds) < 0.3
        return scale * np.abs(1 + cv / 2 * rng.standard_normal(rounds)) * np.where(second, 1 + 2 * cv, 1)
    if kind == "outliers":  # 10% of rounds 20-100% slower (a hiccup, a recompilation)
        values = scale * np.abs(1 + cv * rng.standard_normal(rounds))
        hit = rng.random(rounds) < 0.1
        values[hit] *= 1 + rng.uniform(0.2, 1.0, hit.sum())
        return values
    raise ValueError(kind)


@dataclass(frozen=True)
class Cell:
    kind: str
    cv: float
    shift: float
    rounds: int
    reps: int
    seed: int
    looks: tuple[int, ...] = ()


def run_cell(cell: Cell) -> dict[str, int]:
    """Judge ``reps`` simulated comparisons of one metric; count the verdicts."""
    rng = np.random.default_rng(cell.seed)
    counts = dict.fromkeys(("regression", "improvement", "unchanged", "inconclusive", "error"), 0)
    for rep in range(cell.reps):
        base = draw(rng, cell.kind, cell.rounds, cell.cv)
        head = draw(rng, cell.kind, cell.rounds, cell.cv) * (1 + cell.shift)
        counts[_verdict(base, head, cell.looks, rep)] += 1
    return counts


def _verdict(base: np.ndarray, head: np.ndarray, looks: tuple[int, ...], seed: int) -> str:
    """Fixed rounds, or adaptive: judge after each look at alpha / looks, stop once decided."""
    if not looks:
        return stats.judge(base, head, "lower", seed=seed).verdict
    alpha = stats.alpha_per_look(stats.DEFAULT_ALPHA, len(looks))
    verdict = "inconclusive"
    for n in looks:
        verdict = stats.judge(base[:n], head[:n], "lower", alpha=alpha, seed=seed).verdict
        if verdict != "inconclusive":
            break
    return verdict


@dataclass(frozen=True)
class FamilyCell:
    metrics: int
    shifted_cv: float
    shift: float
    rounds: int
    reps: int
    seed: int


def run_family(cell: FamilyCell) -> dict[str, int]:
    """Whole results files of several metrics through `decide` (Holm across metrics)."""
    rng = np.random.default_rng(cell.seed)
    cvs = [cell.shifted_cv] + list(np.linspace(0.01, 0.10, cell.metrics - 1))
    counts = {"false_alarm": 0, "detected": 0}
    for rep in range(cell.reps):
        data = _results_file(rng, cvs, cell.shift, cell.rounds)
        comparison = stats.decide(results.Results.model_validate(data), seed=rep)
        verdicts = {m.name: m.verdict for m in comparison.metrics}
        counts["detected"] += verdicts["m0"] == "regression"
        shifted = {"m0"} if cell.shift else set()
        counts["false_alarm"] += any(v in CLAIMS for n, v in verdicts.items() if n not in shifted)
    return counts


def _results_file(rng: np.random.Generator, cvs: list[float], shift: float, rounds: int) -> dict:
    names = [f"m{i}" for i in range(len(cvs))]
    values = {(n, side): draw(rng, "lognormal", rounds, cv) * (1 + shift * (side == "head" and n == "m0"))
              for n, cv in zip(names, cvs, strict=True) for side in ("base", "head")}
    rows = [{"side": side, "index": 2 * i + (side == "head"), "ok": True, "error": None,
             "metrics": {n: float(values[n, side][i]) for n in names}}
            for i in range(rounds) for side in ("base", "head")]
    return {"schema": results.SCHEMA, "suite": "simulated", "base": {"sha": "aaaa"},
            "head": {"sha": "bbbb"}, "metrics": {n: {"unit": "ms", "better": "lower"} for n in names},
            "rounds": rows}


# ---------------------------------------------------------------- tables


def stable_seed(*parts: object) -> int:
    """A seed that does not depend on Python's per-process string hashing."""
    return zlib.crc32(repr(parts).encode())


def rate(hits: int, total: int) -> str:
    return f"{hits / total:.1%}" if total else "–"


def upper_bound(hits: int, total: int) -> float:
    """One-sided 95% upper bound (Clopper-Pearson) of a rate."""
    return scipy_stats.binomtest(hits, total).proportion_ci(0.90, method="exact").high


def table_aa(pool: ProcessPoolExecutor, reps: int) -> tuple[int, int]:
    cells = [Cell(k, cv, 0.0, n, reps, seed=stable_seed(k, cv, n))
             for k in DISTRIBUTIONS for cv in (0.01, 0.03, 0.10) for n in (5, 10, 20)]
    print(f"\n#### A/A: false alarms per single-metric comparison ({reps} comparisons per cell)\n")
    print("| rounds | CV | " + " | ".join(DISTRIBUTIONS) + " |")
    print("|---:|---:|" + "---:|" * len(DISTRIBUTIONS))
    outcome = dict(zip(cells, pool.map(run_cell, cells), strict=True))
    alarms = total = 0
    for n in (5, 10, 20):
        for cv in (0.01, 0.03, 0.10):
            row = []
            for k in DISTRIBUTIONS:
                counts = outcome[Cell(k, cv, 0.0, n, reps, seed=stable_seed(k, cv, n))]
                hits = counts["regression"] + counts["improvement"]
                alarms, total = alarms + hits, total + reps
                row.append(f"{rate(hits, reps)} (unchanged {rate(counts['unchanged'], reps)})")
            print(f"| {n} | {cv:.0%} | " + " | ".join(row) + " |")
    print(f"\nAll A/A cells together: {alarms} false alarms in {total} comparisons = "
          f"{rate(alarms, total)} (95% upper bound {upper_bound(alarms, total):.2%}).")
    return alarms, total


def table_detection(pool: ProcessPoolExecutor, reps: int) -> None:
    shifts, cvs, rounds = (0.0, 0.01, 0.02, 0.03, 0.05, 0.10, 0.50), (0.01, 0.02, 0.05, 0.10), (5, 10, 20)
    cells = {(s, cv, n): Cell("lognormal", cv, s, n, reps, seed=stable_seed(s, cv, n))
             for s in shifts for cv in cvs for n in rounds}
    outcome = dict(zip(cells, pool.map(run_cell, cells.values()), strict=True))
    print(f"\n#### Detection: share of comparisons that say `regression` (log-normal rounds, "
          f"{reps} comparisons per cell)\n")
    print("| shift | " + " | ".join(f"CV {cv:.0%}, {n} rounds" for cv in cvs for n in rounds) + " |")
    print("|---:|" + "---:|" * (len(cvs) * len(rounds)))
    for s in shifts:
        row = [rate(outcome[s, cv, n]["regression"], reps) for cv in cvs for n in rounds]
        print(f"| {s:.0%} | " + " | ".join(row) + " |")
    print("\nA shift below the 2% minimum effect is never meant to be called a regression; there the "
          "table shows how often a true but small change is (correctly) not claimed.")


def table_target(pool: ProcessPoolExecutor, reps: int) -> list[float]:
    print(f"\n#### Target: 5% slower at 2% CV, within 10 rounds per side ({reps} comparisons each)\n")
    print("| distribution | fixed 10 rounds | adaptive: look at 5, 8, 10 (α/3 each) | A/A false alarms, "
          "adaptive | fixed 20 rounds |")
    print("|---|---:|---:|---:|---:|")
    fixed = [Cell(k, 0.02, 0.05, 10, reps, seed=11 + i) for i, k in enumerate(DISTRIBUTIONS)]
    longer = [Cell(k, 0.02, 0.05, 20, reps, seed=41 + i) for i, k in enumerate(DISTRIBUTIONS)]
    adaptive = [Cell(k, 0.02, 0.05, 10, reps, seed=21 + i, looks=(5, 8, 10))
                for i, k in enumerate(DISTRIBUTIONS)]
    null = [Cell(k, 0.02, 0.0, 10, reps, seed=31 + i, looks=(5, 8, 10)) for i, k in enumerate(DISTRIBUTIONS)]
    found = list(pool.map(run_cell, fixed + adaptive + null + longer))
    count = len(DISTRIBUTIONS)
    detected = []
    for i, k in enumerate(DISTRIBUTIONS):
        f, a, z, twenty = (found[j * count + i] for j in range(4))
        detected.append(f["regression"] / reps)
        print(f"| {k} | {rate(f['regression'], reps)} | {rate(a['regression'], reps)} | "
              f"{rate(z['regression'] + z['improvement'], reps)} | {rate(twenty['regression'], reps)} |")
    return detected


def table_family(pool: ProcessPoolExecutor, reps: int) -> None:
    cells = [FamilyCell(9, 0.02, 0.0, 10, reps, 41), FamilyCell(9, 0.02, 0.05, 10, reps, 42),
             FamilyCell(9, 0.02, 0.0, 20, reps, 43), FamilyCell(9, 0.02, 0.05, 20, reps, 44)]
    found = list(pool.map(run_family, cells))
    print(f"\n#### Whole results files: 9 metrics (CV 1-10%), Holm across them ({reps} files each)\n")
    print("| rounds | truth | any false alarm in the file | the 5% shift of m0 (2% CV) detected |")
    print("|---:|---|---:|---:|")
    for cell, counts in zip(cells, found, strict=True):
        truth = "m0 5% slower" if cell.shift else "A/A"
        detected = rate(counts["detected"], reps) if cell.shift else "–"
        print(f"| {cell.rounds} | {truth} | {rate(counts['false_alarm'], reps)} | {detected} |")


# ---------------------------------------------------------------- bisection


def guided_bisection(commits: list[str], culprit: int, risk: dict[str, float],
                     skipped: frozenset[str] = frozenset()) -> tuple[bisection.Step, int]:
    known: dict[str, bisection.Outcome] = {}
    while True:
        step = bisection.next_step(commits, known, risk, good="GOOD")
        if not isinstance(step, bisection.Probe):
            return step, len(known)
        position = commits.index(step.sha)
        known[step.sha] = "skipped" if step.sha in skipped else ("bad" if position >= culprit else "ok")


def seeded_scores(rng: random.Random, commits: list[str], culprit: int, quality: str) -> dict[str, float]:
    """Triage-like scores: unrelated commits 0-60; the culprit ranked first, middle or last."""
    scores = {sha: rng.uniform(0, 60) for sha in commits}
    if quality == "equal":
        return dict.fromkeys(commits, 0.0)
    others = sorted((v for sha, v in scores.items() if sha != commits[culprit]), reverse=True)
    if quality == "first":
        scores[commits[culprit]] = min(100.0, (others[0] if others else 40) + 20)
    elif quality == "middle" and others:
        middle = len(others) // 2
        scores[commits[culprit]] = (others[middle] + others[max(0, middle - 1)]) / 2
    elif others:
        scores[commits[culprit]] = max(0.0, others[-1] - 1)
    return scores


def table_bisection(trials: int) -> bool:
    print(f"\n#### Bisection: benchmark runs to find the first bad commit ({trials} seeded culprit "
          "positions per row)\n")
    print("| commits | culprit's risk rank | guided: mean | guided: worst | plain: mean | plain: worst "
          "| guided − plain, worst single case |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    rng, within_bound = random.Random(5), True
    for count in (9, 30, 100, 1000):
        commits = [f"{i:040x}" for i in range(count)]
        mixed_guided, mixed_plain = [], []
        for quality in ("first", "middle", "last", "equal"):
            guided, plain, worst_gap = [], [], -99
            for _ in range(trials if count < 1000 else max(20, trials // 5)):
                culprit = rng.randrange(count)
                step, runs = guided_bisection(commits, culprit, seeded_scores(rng, commits, culprit, quality))
                assert isinstance(step, bisection.Culprit) and step.sha == commits[culprit]
                baseline = bisection.plain_probes(count, culprit)
                guided.append(runs)
                plain.append(baseline)
                worst_gap = max(worst_gap, runs - baseline)
            within_bound &= worst_gap <= 1
            if quality != "equal":
                mixed_guided += guided
                mixed_plain += plain
            print(f"| {count} | {quality} | {statistics.mean(guided):.2f} | {max(guided)} | "
                  f"{statistics.mean(plain):.2f} | {max(plain)} | {worst_gap:+d} |")
        print(f"| {count} | first/middle/last mixed | {statistics.mean(mixed_guided):.2f} | "
              f"{max(mixed_guided)} | {statistics.mean(mixed_plain):.2f} | {max(mixed_plain)} | |")
    return within_bound


def table_skips(trials: int) -> None:
    rng = random.Random(9)
    print(f"\n#### Bisection with 20% of commits unmeasurable ({trials} trials per row)\n")
    print("| commits | culprit named | gave up, culprit among the candidates | wrong answer |")
    print("|---:|---:|---:|---:|")
    for count in (9, 30, 100):
        commits = [f"{i:040x}" for i in range(count)]
        named = gave_up = wrong = 0
        for _ in range(trials):
            culprit = rng.randrange(count)
            skipped = frozenset(sha for sha in commits[:-1] if rng.random() < 0.2)
            scores = seeded_scores(rng, commits, culprit, "middle")
            step, _ = guided_bisection(commits, culprit, scores, skipped)
            if isinstance(step, bisection.Culprit) and step.sha == commits[culprit]:
                named += 1
            elif isinstance(step, bisection.GiveUp) and commits[culprit] in step.candidates:
                gave_up += 1
            else:
                wrong += 1
        print(f"| {count} | {rate(named, trials)} | {rate(gave_up, trials)} | {rate(wrong, trials)} |")


def sample_repository_scores() -> tuple[dict[str, float], str]:
    """Triage scores (by subject) of the sample repository's range, and the slow commit's subject,
    from a real `perfbot triage --format json` of a freshly built copy."""
    from bot.cli.main import main as perfbot
    from examples import sample_repo

    with tempfile.TemporaryDirectory() as scratch:
        manifest = sample_repo.build(Path(scratch) / "sample")
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            perfbot(["triage", "--repo", manifest["path"], f"{manifest['first']}..{manifest['head']}",
                     "--format", "json", "--quiet"])
    ranking = json.loads(output.getvalue())["commits"]
    return {c["subject"]: float(c["score"]) for c in ranking}, sample_repo.SLOW_SUBJECT


def table_sample_repository(orders: int) -> None:
    scores, slow = sample_repository_scores()
    others = [subject for subject in scores if subject != slow]
    rng = random.Random(3)
    print(f"\n#### Bisection on the sample repository: real triage scores, the slow commit seeded at every "
          f"position ({orders} orders of the other commits each)\n")
    print(f"Triage scores: {slow!r} {scores[slow]:g}; the others "
          + ", ".join(f"{scores[s]:g}" for s in others) + ".\n")
    print("| slow commit at | guided: mean | guided: worst | plain: mean | plain: worst |")
    print("|---:|---:|---:|---:|---:|")
    all_guided, all_plain = [], []
    for position in range(len(scores)):
        guided, plain = [], []
        for _ in range(orders):
            order = rng.sample(others, len(others))
            order.insert(position, slow)
            risk = {subject: scores[subject] for subject in order}
            step, runs = guided_bisection(order, position, risk)
            assert isinstance(step, bisection.Culprit) and step.sha == slow
            guided.append(runs)
            plain.append(bisection.plain_probes(len(order), position))
        all_guided += guided
        all_plain += plain
        print(f"| {position + 1} of {len(scores)} | {statistics.mean(guided):.2f} | {max(guided)} | "
              f"{statistics.mean(plain):.2f} | {max(plain)} |")
    print(f"| all | {statistics.mean(all_guided):.2f} | {max(all_guided)} | "
          f"{statistics.mean(all_plain):.2f} | {max(all_plain)} |")


# ---------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (about 5x faster)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    scale = 5 if args.quick else 1
    started = time.perf_counter()
    print(f"### Calibration ({'quick' if args.quick else 'full'} run, {args.workers} workers, "
          f"min effect {stats.DEFAULT_MIN_EFFECT:.0%}, alpha {stats.DEFAULT_ALPHA})")
    with ProcessPoolExecutor(args.workers) as pool:
        alarms, total = table_aa(pool, 200 // scale)
        table_detection(pool, 40 // scale)
        detected = table_target(pool, 400 // scale)
        table_family(pool, 150 // scale)
    bounded = table_bisection(300 // scale)
    table_skips(300 // scale)
    table_sample_repository(20 // scale)
    print("\n#### Targets\n")
    print(f"- A/A false alarms <= 1% per comparison: {rate(alarms, total)} -> "
          f"{'met' if alarms / total <= 0.01 else 'MISSED'}")
    normal = detected[DISTRIBUTIONS.index("lognormal")]
    print(f"- 5% shift at 2% CV detected >= 95% within 10 rounds (log-normal rounds): {normal:.1%} -> "
          f"{'met' if normal >= 0.95 else 'MISSED'}; by distribution: "
          + ", ".join(f"{k} {d:.1%}" for k, d in zip(DISTRIBUTIONS, detected, strict=True)))
    print(f"- bisection never more than plain + 1 in any trial: {'met' if bounded else 'MISSED'}")
    print(f"\n(ran in {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
