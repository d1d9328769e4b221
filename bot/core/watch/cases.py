"""A regression case: one change of one metric of one suite between a good and a bad commit of
the default branch, its key, its states and the moves between them.

The key is the change itself (repository, suite, metric, good and bad commit): a redelivered
event, a second server or a re-detection of the same change finds the case already opened. A
state moves only along `MOVES`; the store applies each move as a conditional update, so two
processes racing to move one case agree on who did.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

State = Literal[
    "detected",
    "bisecting",
    "confirmed",
    "unconfirmed",
    "not_reproduced",
    "failed",
    "out_of_budget",
    "superseded",
    "cancelled",
    "recovered",
    "inconclusive",
    "dismissed",
]
DETECTED: State = "detected"
BISECTING: State = "bisecting"
CONFIRMED: State = "confirmed"  # a culprit confirmed against its parent
UNCONFIRMED: State = "unconfirmed"  # the bisect leaned somewhere without confirming a culprit
NOT_REPRODUCED: State = "not_reproduced"  # good and bad no longer differ in today's environment
FAILED: State = "failed"  # the bisect run measured nothing usable, or GitHub refused it
OUT_OF_BUDGET: State = "out_of_budget"
SUPERSEDED: State = "superseded"  # a later point moved the change: another case holds it
CANCELLED: State = "cancelled"  # `/bench cancel`, or bisecting is turned off
RECOVERED: State = "recovered"  # the series came back within noise before a bisect was spent on it
INCONCLUSIVE: State = "inconclusive"  # good and bad measured again, without the runs deciding
DISMISSED: State = "dismissed"  # `/bench dismiss`: a maintainer says it is noise, or known

Source = Literal["merge", "changepoint", "command"]

OPEN: tuple[State, ...] = (DETECTED, OUT_OF_BUDGET)  # not yet bisecting: may still be superseded
ACTIVE: tuple[State, ...] = (DETECTED, OUT_OF_BUDGET, BISECTING)
ENDS: tuple[State, ...] = (
    CONFIRMED,
    UNCONFIRMED,
    NOT_REPRODUCED,
    INCONCLUSIVE,
    FAILED,
    SUPERSEDED,
    CANCELLED,
    RECOVERED,
    DISMISSED,
)
KNOWN: tuple[State, ...] = tuple(s for s in (*ACTIVE, *ENDS) if s != SUPERSEDED)  # a series' cases

MOVES: dict[State, tuple[State, ...]] = {
    DETECTED: (BISECTING, OUT_OF_BUDGET, SUPERSEDED, CANCELLED, RECOVERED, DISMISSED),
    OUT_OF_BUDGET: (BISECTING, SUPERSEDED, CANCELLED, RECOVERED, DISMISSED),
    BISECTING: (
        CONFIRMED,
        UNCONFIRMED,
        NOT_REPRODUCED,
        INCONCLUSIVE,
        FAILED,
        CANCELLED,
        SUPERSEDED,
        DISMISSED,
    ),
    **{end: () for end in ENDS},
}

# What the bisect report's status makes of the case (the runner's `perfbot bisect --format json`).
_BY_REPORT: dict[str, State] = {
    "confirmed": CONFIRMED,
    "likely": UNCONFIRMED,
    "not_confirmed": UNCONFIRMED,
    "not_reproduced": NOT_REPRODUCED,
    "error": FAILED,
}
REPORT_STATUSES = tuple(_BY_REPORT)

LABELS: dict[State, str] = {
    DETECTED: "detected",
    BISECTING: "bisecting",
    CONFIRMED: "culprit confirmed",
    UNCONFIRMED: "no culprit confirmed",
    NOT_REPRODUCED: "not reproduced in today's environment",
    FAILED: "bisect failed",
    OUT_OF_BUDGET: "out of budget",
    SUPERSEDED: "superseded",
    CANCELLED: "cancelled",
    RECOVERED: "back within noise",
    INCONCLUSIVE: "re-measured without a decision",
    DISMISSED: "dismissed by a maintainer",
}


@dataclass(frozen=True, order=True)
class Span:
    """A change of one series between two commits of the default branch: ``good`` measured before
    it, ``bad`` the first commit measured after it."""

    repo: str
    suite: str
    metric: str
    good: str
    bad: str

    def key(self) -> str:
        """The case's key: the same for the same change, however it was found."""
        text = "\0".join((self.repo, self.suite, self.metric, self.good, self.bad))
        return "case-" + hashlib.sha256(text.encode()).hexdigest()[:32]

    def series(self) -> tuple[str, str, str]:
        return self.repo, self.suite, self.metric


def can_move(current: str, wanted: State) -> bool:
    """Whether a case in ``current`` may move to ``wanted`` (an unknown state may not move)."""
    return wanted in MOVES.get(current, ())  # type: ignore[call-overload]


def sources_of(wanted: State) -> tuple[State, ...]:
    """The states from which a case may move to ``wanted``: the condition of the store's update."""
    return tuple(state for state, targets in MOVES.items() if wanted in targets)


def after_bisect(report_status: str, reference_verdict: str | None = None) -> State:
    """The state a bisecting case ends in, given its report's status (an unknown one: failed): a
    range not reproduced because GOOD against BAD, measured again, was only inconclusive is said to
    be inconclusive, never that the two no longer differ."""
    if report_status == "not_reproduced" and reference_verdict == "inconclusive":
        return INCONCLUSIVE
    return _BY_REPORT.get(report_status, FAILED)
