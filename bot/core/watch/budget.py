"""The daily GPU budget of a repository's default-branch runs and bisects, riskiest first.

Runs arrive one at a time through the day, so "riskiest first" cannot be a sort of the day's
runs: instead each risk may spend only its share of the day's budget, and the rest is kept for
riskier work that may still come. A bisect of a regression on the default branch is the riskiest
there is (a slowdown has landed); a merge run goes by the risk its pull request was merged with;
a scheduled run, which looks for what nobody flagged, by `SCHEDULED`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Literal

from bot.core.vocabulary import Level

Unlimited = Literal["unlimited"]
Kind = Literal["merge", "schedule", "bisect"]
SHARES: dict[str, float] = {"high": 1.0, "medium": 0.8, "low": 0.6, "none": 0.4}
BISECT: Level = "high"
SCHEDULED: Level = "low"
# What a bisect is counted as before it runs: the reference run, the probes of up to 64 commits
# (6) and the confirmation; settled to the runs it made once its report is read.
BISECT_RUNS_RESERVED = 8


def day(now: datetime) -> str:
    """The budget's day (UTC) of a moment, ``YYYY-MM-DD`` (a naive moment is taken as UTC)."""
    return (now.astimezone(UTC) if now.tzinfo is not None else now).date().isoformat()


def run_cost(suites: Sequence[str], run_minutes: float) -> float:
    """GPU minutes an A/B run of ``suites`` is counted as."""
    return run_minutes * max(1, len(suites))


def bisect_cost(runs: int, run_minutes: float) -> float:
    """GPU minutes a bisect of ``runs`` benchmark runs (of one suite) is counted as."""
    return run_minutes * max(1, runs)


def allows(level: str, spent: float, cost: float, budget: int | Unlimited) -> bool:
    """Whether work of risk ``level`` costing ``cost`` GPU minutes may start when ``spent`` were
    spent today: within its level's share of the day's ``budget`` (an unknown level: the least)."""
    if budget == "unlimited":
        return True
    share = SHARES.get(level, min(SHARES.values()))
    return spent + cost <= share * budget + 1e-9


def left(spent: float, budget: int | Unlimited) -> float:
    """GPU minutes left today (infinity when unlimited)."""
    return math.inf if budget == "unlimited" else max(0.0, budget - spent)
