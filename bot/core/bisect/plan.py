"""Risk-guided bisection planner: which commit of GOOD..BAD to measure next, from known results only.

The planner keeps no state: given the range, the triage risk scores and the measurements so far
(commit -> ``ok`` / ``bad`` / ``skipped``), `next_step` says what to do next. A run can stop,
resume, or collect results from asynchronous runners in any order, and ask again.

Strategy. Each commit's risk score becomes a prior weight of being the first bad commit,
``2 ** (score / 10)`` (a score 10 points higher is twice as suspicious). The next probe splits
the remaining candidates where the prior weight on both sides is most even — with one suspicious
commit far above the rest this measures that commit and its parent first; with equal scores it
is plain halving. A budget bounds the worst case: every probe must leave both sides solvable by
halving within `probe_budget` = ``floor(log2 n) + 1`` probes in all. Plain bisection needs at
least ``floor(log2 n)`` probes wherever the culprit is, so the planner never needs more than plain
bisection + 1 for any culprit position and any scores (when nothing is skipped).

Commits that cannot be measured (build or run failures) are ``skipped`` and never proposed
again; when only skipped commits separate the last good from the first bad commit, the planner
gives up and lists the candidates, as ``git bisect`` does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

Outcome = Literal["ok", "bad", "skipped"]
OUTCOMES: tuple[Outcome, ...] = ("ok", "bad", "skipped")
RISK_DOUBLING = 10.0


@dataclass(frozen=True, slots=True)
class Probe:
    """Measure this commit next."""

    sha: str
    reason: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Culprit:
    """The first bad commit: measured bad, with its parent measured ok (or the good end)."""

    sha: str
    parent: str | None
    runs: int
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GiveUp:
    """No culprit can be named; ``candidates`` still contains it."""

    reason: str
    candidates: tuple[str, ...]
    runs: int
    notes: tuple[str, ...] = ()


Step = Probe | Culprit | GiveUp


def next_step(
    commits: Sequence[str],
    known: Mapping[str, Outcome],
    risk: Mapping[str, float] | None = None,
    good: str | None = None,
) -> Step:
    """The next move of a bisection of ``commits`` (GOOD..BAD, oldest first, BAD last).

    ``known``: measured outcomes; the BAD end counts as bad unless measured ``ok``. ``risk``:
    triage scores (0-100) by sha; missing scores count as 0. ``good``: the GOOD sha, named as
    the culprit's parent when the culprit is the first commit of the range.
    """
    risk = risk or {}
    runs = sum(1 for sha in commits if sha in known)
    if not commits:
        return GiveUp("the range is empty", (), runs)
    if known.get(commits[-1]) == "ok":
        return GiveUp("the bad end measured ok: nothing regressed in this range", (), runs)
    low, high = _bounds(commits, known)
    notes = _inconsistencies(commits, known, high)
    if high == low + 1:
        parent = commits[low] if low >= 0 else good
        return Culprit(commits[high], parent, runs, notes)
    open_positions = [i for i in range(low + 1, high) if commits[i] not in known]
    if not open_positions:
        return GiveUp(
            "only commits that could not be measured are left between the last good and the first bad commit",
            tuple(commits[low + 1 : high + 1]),
            runs,
            notes,
        )
    budget = probe_budget(len(commits)) - _probes_made(commits, known)
    position, guided = _choose(open_positions, low, high, _weights(commits, risk), budget)
    why = "splits the suspicion evenly" if guided else "halves the remaining commits"
    return Probe(commits[position], f"{why} ({high - low} candidates left)", notes)


def probe_budget(count: int) -> int:
    """Most probes the planner may need for ``count`` candidates when nothing is skipped.

    ``floor(log2 n) + 1``: plain bisection (any even split) needs at least ``floor(log2 n)``
    wherever the culprit is, so this is never more than plain bisection + 1, and never more
    than plain bisection's worst case ``ceil(log2 n)`` unless ``n`` is a power of two.
    """
    return math.floor(math.log2(count)) + 1 if count > 1 else 0


def plain_worst_case(count: int) -> int:
    """Probes plain bisection needs at most to find the first bad among ``count`` candidates."""
    return math.ceil(math.log2(count)) if count > 1 else 0


def plain_probes(count: int, culprit: int) -> int:
    """Probes plain halving (``git bisect`` on a linear history) makes to find the first bad
    commit at position ``culprit`` of ``count`` candidates, BAD (the last) known bad."""
    low, high, probes = -1, count - 1, 0
    while high - low > 1:
        middle = (low + high) // 2
        probes += 1
        low, high = (low, middle) if middle >= culprit else (middle, high)
    return probes


def _bounds(commits: Sequence[str], known: Mapping[str, Outcome]) -> tuple[int, int]:
    """(last ok position before the first bad, first bad position); -1 stands for GOOD."""
    high = next((i for i, sha in enumerate(commits) if known.get(sha) == "bad"), len(commits) - 1)
    low = max((i for i in range(high) if known.get(commits[i]) == "ok"), default=-1)
    return low, high


def _inconsistencies(commits: Sequence[str], known: Mapping[str, Outcome], high: int) -> tuple[str, ...]:
    late_ok = [sha for sha in commits[high + 1 :] if known.get(sha) == "ok"]
    if not late_ok:
        return ()
    return (
        f"{late_ok[0][:12]} measured ok after the first bad commit {commits[high][:12]}: the "
        "regression may be flaky, or fixed and reintroduced; the first bad commit is kept",
    )


def _probes_made(commits: Sequence[str], known: Mapping[str, Outcome]) -> int:
    return sum(1 for sha in commits[:-1] if known.get(sha) in ("ok", "bad"))


def _weights(commits: Sequence[str], risk: Mapping[str, float]) -> list[float]:
    def weight(sha: str) -> float:
        score = risk.get(sha, 0.0)
        score = min(100.0, max(0.0, score)) if math.isfinite(score) else 0.0
        return math.pow(2.0, score / RISK_DOUBLING)

    return [weight(sha) for sha in commits]


def _choose(
    open_positions: list[int], low: int, high: int, weights: list[float], budget: int
) -> tuple[int, bool]:
    """The probe position, and whether the risk weights chose it (else plain halving)."""

    def solvable(position: int) -> bool:
        return max(plain_worst_case(position - low), plain_worst_case(high - position)) <= budget - 1

    def count_imbalance(position: int) -> float:
        return abs((position - low) - (high - position))

    feasible = [p for p in open_positions if solvable(p)]
    if not feasible:
        return min(open_positions, key=lambda p: (count_imbalance(p), p)), False
    prefix = [0.0]
    for w in weights[low + 1 : high + 1]:
        prefix.append(prefix[-1] + w)
    total = prefix[-1]

    def weight_imbalance(position: int) -> float:
        left = prefix[position - low]
        return abs(left - (total - left))

    best = min(feasible, key=lambda p: (round(weight_imbalance(p), 9), count_imbalance(p), p))
    plain = min(feasible, key=lambda p: (count_imbalance(p), p))
    return best, best != plain
