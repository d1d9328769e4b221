"""How often the risk alerts were right: the precision of each risk level and each rule against
what the merges did, measured by benchmarks and settled by maintainers' triage.

A merge has an outcome when a maintainer triaged it (confirmed, reverted, fixed: it regressed;
false alarm: it did not) or, failing that, when a benchmark gave a clear verdict (regression: it
regressed; improvement or unchanged: it did not). Inconclusive and failed benchmarks, and merges
never measured, have none and are left out of every figure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from bot.core.vocabulary import FLAGGED_LEVELS, LEVELS

REGRESSED_STATES = ("confirmed", "reverted", "fixed")
CLEARED_STATES = ("false_alarm",)
CLEAR_VERDICTS = {"regression": True, "improvement": False, "unchanged": False}


def regressed(verdict: str | None, triage_state: str | None) -> bool | None:
    """Whether the merge made things slower; None when nobody can say yet."""
    if triage_state in REGRESSED_STATES:
        return True
    if triage_state in CLEARED_STATES:
        return False
    return CLEAR_VERDICTS.get(verdict or "")


@dataclass(frozen=True, slots=True)
class Outcome:
    """One merge with an outcome: the risk it merged with and whether it regressed."""

    repo: str
    level: str | None
    rules: tuple[str, ...]
    regressed: bool


@dataclass(frozen=True, slots=True)
class Row:
    """Of the ``merges`` with an outcome that carry ``key`` (a level or a rule), ``regressed``
    did; ``caught`` is the share of all regressions that carried it."""

    key: str
    merges: int
    regressed: int
    caught: float | None

    @property
    def precision(self) -> float | None:
        return self.regressed / self.merges if self.merges else None

    def to_dict(self) -> dict[str, object]:
        return {
            "key": self.key,
            "merges": self.merges,
            "regressed": self.regressed,
            "precision": self.precision,
            "share_of_regressions": self.caught,
        }


@dataclass(frozen=True, slots=True)
class Calibration:
    merges: int  # merges with an outcome
    regressions: int
    flagged: int  # merges with an outcome at a flagged level
    flagged_regressions: int
    levels: list[Row] = field(default_factory=list)
    rules: list[Row] = field(default_factory=list)

    @property
    def precision(self) -> float | None:
        """Of the flagged merges, the share that regressed."""
        return self.flagged_regressions / self.flagged if self.flagged else None

    @property
    def missed(self) -> int:
        """Regressions merged without a flag."""
        return self.regressions - self.flagged_regressions

    @property
    def recall(self) -> float | None:
        """Of the regressions, the share that was flagged."""
        return self.flagged_regressions / self.regressions if self.regressions else None

    def to_dict(self) -> dict[str, object]:
        return {
            "merges": self.merges,
            "regressions": self.regressions,
            "flagged": self.flagged,
            "flagged_regressions": self.flagged_regressions,
            "missed": self.missed,
            "precision": self.precision,
            "recall": self.recall,
            "levels": [r.to_dict() for r in self.levels],
            "rules": [r.to_dict() for r in self.rules],
        }


def calibrate(outcomes: Iterable[Outcome], flagged_levels: Sequence[str] = FLAGGED_LEVELS) -> Calibration:
    """The figures for ``outcomes``: per level (highest first), per rule (most often fired first)."""
    items = list(outcomes)
    total = sum(o.regressed for o in items)
    by_level = {level: _Count() for level in reversed(LEVELS)}
    by_rule: dict[str, _Count] = {}
    for o in items:
        by_level.setdefault(o.level or "unscored", _Count()).add(o.regressed)
        for rule in set(o.rules):
            by_rule.setdefault(rule, _Count()).add(o.regressed)
    flagged = [o for o in items if o.level in flagged_levels]
    rules = sorted(by_rule.items(), key=lambda item: (-item[1].merges, item[0]))
    return Calibration(
        merges=len(items),
        regressions=total,
        flagged=len(flagged),
        flagged_regressions=sum(o.regressed for o in flagged),
        levels=[c.row(level, total) for level, c in by_level.items() if c.merges or level in LEVELS],
        rules=[c.row(rule, total) for rule, c in rules],
    )


@dataclass(slots=True)
class _Count:
    merges: int = 0
    regressed: int = 0

    def add(self, regressed: bool) -> None:
        self.merges += 1
        self.regressed += regressed

    def row(self, key: str, total: int) -> Row:
        return Row(key, self.merges, self.regressed, self.regressed / total if total else None)
