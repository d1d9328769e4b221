"""Where a run's seconds went: a timeline of its phases, written into the results file
(``timeline``) and shown in the report (`markdown`).

A phase is one stretch of the run's wall time on perfbot's side (``fingerprint``, ``worktrees``,
``integrity``, ``set-up``, ``worker start``, ``warm-up``, ``round``, ``profile``, ``report``), with
the side it was for, when it began (seconds since the run began) and how long it took. A round's
phase also carries what its benchmark process said of its own time (``inside``: interpreter and torch
start, model build, graph capture, the rest), where the suite reports it (`Suite.round_seconds`).
Phases may overlap where perfbot runs them at once (the machine's fingerprint beside the worktrees,
both sides' workers starting).

The file's other readers ignore the field (the results model of `bot.core.judge.results` keeps only
what it knows), so reading it back here is as careful as reading any results file: `read` takes what
is well formed and bounded, and leaves out the rest.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

PHASES = (
    "fingerprint",
    "worktrees",
    "integrity",
    "set-up",
    "worker start",
    "warm-up",
    "round",
    "profile",
    "report",
)
# What a round's process says of its own time (`Suite.round_seconds`), in the report's words.
INSIDE = {
    "start": "interpreter and torch start",
    "build": "model build",
    "run": "graph capture and timing (or profiling)",
    "capture": "graph capture",  # a part of "run"
    "profiler": "profiler set-up",  # a profiled pass's spare, before it said it was ready
    "gate": "waiting at the gate for the import path's walk",  # `RoundContext.gate`
}
MAX_PHASES = 2_000  # far more than any run has: a run of 10,000 rounds keeps its first ones


@dataclass
class Phase:
    name: str
    began: float  # seconds since the run began
    seconds: float
    side: str | None = None
    detail: str | None = None
    inside: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "phase": self.name,
            "start": round(self.began, 3),
            "seconds": round(self.seconds, 3),
        }
        if self.side:
            data["side"] = self.side
        if self.detail:
            data["detail"] = self.detail
        if self.inside:
            data["inside"] = {key: round(value, 3) for key, value in self.inside.items()}
        return data


@dataclass
class Timeline:
    """The phases of one run, from ``origin`` (`time.monotonic` when the run began)."""

    origin: float = field(default_factory=time.monotonic)
    phases: list[Phase] = field(default_factory=list)
    total: float | None = None  # read back: the seconds from the run's start to the file's writing

    def add(
        self,
        name: str,
        began: float,
        side: str | None = None,
        detail: str | None = None,
        inside: dict[str, float] | None = None,
        ended: float | None = None,
    ) -> Phase:
        """A phase that began at ``began`` (`time.monotonic`) and ends now (or at ``ended``)."""
        end = time.monotonic() if ended is None else ended
        phase = Phase(name, max(began - self.origin, 0.0), max(end - began, 0.0), side, detail, inside or {})
        if len(self.phases) < MAX_PHASES:
            self.phases.append(phase)
        return phase

    @contextmanager
    def phase(self, name: str, side: str | None = None, detail: str | None = None) -> Iterator[None]:
        began = time.monotonic()
        try:
            yield
        finally:
            self.add(name, began, side, detail)

    def branch(self) -> Timeline:
        """A timeline of the same run holding the phases so far (one per suite of the run)."""
        return Timeline(self.origin, list(self.phases))

    def to_json(self) -> dict[str, Any]:
        return {
            "seconds": round(time.monotonic() - self.origin, 3),
            "phases": [phase.to_json() for phase in self.phases],
        }


def read(data: object) -> Timeline | None:
    """The timeline a results file's ``timeline`` holds (its JSON), or None where it has none or
    it is not one; phases that are not well formed are left out."""
    if not isinstance(data, dict) or not isinstance(data.get("phases"), list):
        return None
    total = _seconds(data.get("seconds"))
    phases = []
    for entry in data["phases"][:MAX_PHASES]:
        if not isinstance(entry, dict) or entry.get("phase") not in PHASES:
            continue
        began, seconds = _seconds(entry.get("start")), _seconds(entry.get("seconds"))
        if began is None or seconds is None:
            continue
        side = entry.get("side") if entry.get("side") in ("base", "head") else None
        detail = entry.get("detail") if isinstance(entry.get("detail"), str) else None
        reported = entry.get("inside")
        inside: dict = reported if isinstance(reported, dict) else {}
        kept = {key: value for key in INSIDE if (value := _seconds(inside.get(key))) is not None}
        phases.append(Phase(entry["phase"], began, seconds, side, detail and detail[:200], kept))
    return Timeline(0.0, phases, total)


def _seconds(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and 0 <= value < 1e7 else None


def markdown(timeline: Timeline) -> str:
    """The timeline as the report shows it: for each phase, how many times it ran and its seconds
    (phases that overlapped count in full), and inside the rounds' processes where the time went."""
    rows = []
    for name in PHASES:
        of = [p for p in timeline.phases if p.name == name]
        if not of:
            continue
        seconds = sum(p.seconds for p in of)
        sides = ", ".join(
            f"{side} {sum(p.seconds for p in of if p.side == side):.1f} s"
            for side in ("base", "head")
            if any(p.side == side for p in of)
        )
        notes = sorted({p.detail for p in of if p.detail})
        what = "; ".join(filter(None, [sides, *notes[:3]]))
        rows.append(f"| {name} | {len(of)} | {seconds:.1f} s | {what} |")
    if not rows:
        return ""
    end = max((p.began + p.seconds for p in timeline.phases), default=0.0)
    whole = timeline.total if timeline.total is not None else end
    lines = [
        f"<details><summary>Where the time went: {whole:.1f} s from start to the results</summary>",
        "",
        "| phase | times | seconds | of which |",
        "|---|---:|---:|---|",
        *rows,
    ]
    inside = {
        key: sum(
            p.inside.get(key, 0.0) for p in timeline.phases if p.name in ("round", "warm-up", "worker start")
        )
        for key in INSIDE
    }
    if any(inside.values()):
        said = ", ".join(
            f"{INSIDE[key]} {inside[key]:.1f} s"
            for key in ("start", "gate", "build", "run", "profiler")
            if inside[key]
        )
        captured = f" (of which graph capture {inside['capture']:.1f} s)" if inside["capture"] else ""
        lines += ["", f"Inside the benchmark's processes, as they reported it: {said}{captured}."]
    lines += [
        "",
        "Phases that ran at once (the fingerprint beside the worktrees, both workers starting) "
        "count in full.",
        "",
        "</details>",
    ]
    return "\n".join(lines)
