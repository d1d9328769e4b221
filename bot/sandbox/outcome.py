"""What the sandbox says once its history is replayed, read from the dashboard's JSON API as a
user would see it: the regression case the watch opened for a merge whose benchmark said
regression (bisected by the sandbox's runner, its culprit named on its pull request), and the
merges with an outcome on the calibration page.

A merge whose run says regression opens a case (`docs/watch.md`), so the sandbox waits for one
when a merge regressed; with no such merge (its quick mode: no merge has a verdict) it says why
there is none instead of waiting."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bot.core.watch import cases as states

Json = Mapping[str, Any]


def regressed(merges: Sequence[Json]) -> list[Json]:
    """The merges whose benchmark said regression, oldest first."""
    found = [m for m in merges if (m.get("benchmark") or {}).get("verdict") == "regression"]
    return sorted(found, key=lambda m: m.get("number") or 0)


def settled(cases: Sequence[Json]) -> bool:
    """Whether the watch is done with its cases: at least one, each ended, and a confirmed
    culprit named on GitHub (its comment written)."""
    return bool(cases) and all(
        c.get("state") in states.ENDS and (c.get("state") != states.CONFIRMED or c.get("comment_url"))
        for c in cases
    )


def case_lines(cases: Sequence[Json], bot_url: str) -> list[str]:
    """One line per case (superseded ones left out): its merge, where it stands, its page."""
    lines = []
    for case in cases:
        if case.get("state") == states.SUPERSEDED:
            continue
        merge = f"#{case['number']}" if case.get("number") else f"{str(case.get('bad'))[:12]}"
        where = str(case.get("label") or case.get("state"))
        if case.get("state") == states.CONFIRMED and case.get("culprit"):
            named = f" #{case['culprit_number']}" if case.get("culprit_number") else ""
            where += f", {str(case['culprit'])[:12]} named on{named or ' its commit'}"
        elif case.get("note"):
            where += f" ({case['note']})"
        lines.append(
            f"Regression case of {merge} ({case.get('suite')} {case.get('metric')}): {where}: "
            f"{bot_url}/regressions/{case['key']}"
        )
    return lines


def no_case_line(merge_rounds: int, verdict_rounds: int) -> str:
    """Why the watch opened no case: no merge's benchmark said regression."""
    if merge_rounds < verdict_rounds:
        return (
            f"No regression case: with {merge_rounds} round{'s' if merge_rounds > 1 else ''} per side "
            "no merge's benchmark has a verdict (quick mode), and a case opens for a merge that "
            "regressed or a change point with enough points after it"
        )
    return "No regression case: no merge's benchmark said regression"


def calibration_line(calibration: Json, merges: Sequence[Json], bot_url: str) -> str:
    """The calibration page's address, with its merges that have an outcome and those without."""
    figures = calibration.get("all") or {}
    counted = int(figures.get("merges") or 0)
    regressions = int(figures.get("regressions") or 0)
    measured = [m for m in merges if (m.get("benchmark") or {}).get("verdict")]
    left = len(measured) - counted
    said = (
        f"{counted} merge{'s' if counted != 1 else ''} with an outcome "
        f"({regressions} regressed, {counted - regressions} did not)"
        if counted
        else "no merge has an outcome yet"
    )
    if left > 0:
        said += f"; {left} measured without a clear verdict have none"
    return f"Calibration:  {bot_url}/calibration   ({said})"
