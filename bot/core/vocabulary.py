"""The words perfbot decides with and shows, defined once: risk levels, verdicts, which way a
metric's change goes, the states of a benchmark request, what triggers one, and their order and
icons. Every layer reads them from here."""

from __future__ import annotations

from typing import Literal

# Risk levels, lowest first: a level "reaches" another when it is at or after it here.
Level = Literal["none", "low", "medium", "high"]
LEVELS: tuple[str, ...] = ("none", "low", "medium", "high")
FLAGGED_LEVELS: tuple[str, ...] = ("medium", "high")  # labelled on the PR, flagged on the dashboard
# Icons: a risk level is a square, a verdict a circle (or ❌ for none). A risk level is a prediction
# from the diff, a verdict a measurement on the GPU runners; the two sit side by side in the sticky
# comment, the check runs and the dashboard, and a red square next to a red circle still reads as
# two different claims at a glance ("risky change" versus "measured slower"). The colours keep one
# meaning across both (red is the worst of each), so only the shape tells which kind it is: no icon
# may serve both vocabularies (tests/core/test_vocabulary.py holds them apart).
LEVEL_ICONS: dict[str, str] = {"high": "🟥", "medium": "🟧", "low": "🟨", "none": "⬜"}

# Verdicts of a comparison, worst first: a section of several suites says its worst one.
Verdict = Literal["regression", "improvement", "unchanged", "inconclusive", "error"]
VERDICTS_WORST_FIRST: tuple[Verdict, ...] = (
    "regression",
    "error",
    "inconclusive",
    "improvement",
    "unchanged",
)
CLAIMS: tuple[Verdict, ...] = ("regression", "improvement")  # the verdicts that say the change moved speed
VERDICT_ICONS: dict[str, str] = {
    "regression": "🔴",
    "improvement": "🟢",
    "unchanged": "⚪",
    "inconclusive": "🟡",
    "error": "❌",
}

# Which way a metric is better: lower (times) or higher (throughput).
Better = Literal["lower", "higher"]
# The smallest relative change of a metric that counts as one (2%): below it, a comparison claims no
# regression or improvement and a series' history shows no change point.
MIN_EFFECT = 0.02
# The p-value (two-sided, adjusted over a run's primary metrics, divided over its looks) at which one
# run's regression stands for a stream of runs: the watch opens a case of a merge from its run alone
# at this level, and an adaptive run goes on past a weaker regression while more rounds would reach
# it. A run's own level (0.01) is for one comparison; the default branch is looked at run after run.
WATCH_ALPHA = 0.00001

# What starts a benchmark request, and the states it goes through.
Trigger = Literal["command", "auto", "merge", "schedule", "bisect"]
PULL_REQUEST_TRIGGERS: tuple[Trigger, ...] = ("command", "auto")  # on the PR; merge, schedule: the branch
# bisect: a regression case of the default branch bisected on the runners (bot.core.watch)
# requested: recorded, not yet sent; dispatching: sent to GitHub, its run not yet recorded (a retry
# looks the run up before sending again); running: GitHub has the run; then one of the ends.
REQUESTED, DISPATCHING, RUNNING = "requested", "dispatching", "running"
COMPLETED, FAILED, CANCELLED, SUPERSEDED = "completed", "failed", "cancelled", "superseded"
ACTIVE = (REQUESTED, DISPATCHING, RUNNING)
OUTDATED = "outdated"  # shown, never stored: the newest benchmark measured an earlier head


def direction(change: float, better: str) -> Literal["regression", "improvement"]:
    """Which way a relative change (after / before - 1) of a metric goes, given which way is
    ``better``: up is a regression of a time and an improvement of a throughput. A change of 0 goes
    neither way: whoever claims a direction asks for at least `MIN_EFFECT` (or its own) first."""
    worse = change > 0 if better == "lower" else change < 0
    return "regression" if worse else "improvement"


def reaches(level: Level, threshold: Level) -> bool:
    """Whether risk ``level`` is at or above ``threshold`` (both levels)."""
    return LEVELS.index(level) >= LEVELS.index(threshold)
