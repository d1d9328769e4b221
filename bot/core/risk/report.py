"""What scoring found, as data: the signals (a rule that fired at a place), each file's risk, and
the report of a whole diff.

The words are `reasons`' and the JSON is `serialise`'s, derived from the fields here (their
metadata says where the JSON differs from a field: another key, sentences, or nothing); the
methods below are their short forms for the renderers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.core.risk import reasons, serialise
from bot.core.risk.serialise import json_as
from bot.core.vocabulary import Level

# Categories of token rules whose removal takes work off the hot path instead of adding it.
IMPROVES_WHEN_REMOVED = frozenset({"host-sync", "allocation", "streams"})


@dataclass(frozen=True, slots=True)
class Signal:
    """A rule that fired at one place. ``line`` is on the new side unless ``side`` is 'old'."""

    rule: str
    kind: str
    category: str
    weight: float
    description: str = field(metadata=json_as())  # the JSON's ``reason`` says it
    path: str
    function: str | None
    line: int | None
    side: str = "new"
    match: str | None = None
    count: int = 1
    # Other rules of the same category that fired at the same place, named instead of counted.
    also: tuple[str, ...] = ()
    # Why the signal keeps less than its rule's weight (``full_weight``), when it does.
    note: str | None = None
    full_weight: float | None = None

    @property
    def improves(self) -> bool:
        """A possible improvement (a removed sync, copy or allocation), not a risk."""
        return self.side == "old" and self.kind == "token" and self.category in IMPROVES_WHEN_REMOVED

    def what(self) -> str:
        """The rule's description with what it matched: a token, or a version change."""
        return reasons.describe(self)

    def qualifier(self) -> str:
        """What follows the rule id and weight: a lowered weight and why, the rules also met."""
        return reasons.qualifier(self)

    def sentence(self) -> str:
        return reasons.sentence(self)

    def to_dict(self) -> dict[str, Any]:
        return serialise.to_json(self, reason=self.sentence())


@dataclass(slots=True)
class FileRisk:
    path: str
    old_path: str | None
    status: str
    is_binary: bool = field(metadata=json_as(("binary", "value")))
    added: int
    removed: int
    score: int
    cold: str | None
    signals: list[Signal] = field(metadata=json_as(("reasons", "sentences")))
    damaged: str | None = field(default=None, metadata=json_as())
    # Changed lines of code: outside cosmetic hunks, neither blank nor only a comment.
    code_lines: int = field(default=0, metadata=json_as())
    improvements: list[Signal] = field(default_factory=list, metadata=json_as())

    def to_dict(self) -> dict[str, Any]:
        return serialise.to_json(self)


@dataclass(slots=True)
class RiskReport:
    score: int
    level: Level
    profile: str
    files: list[FileRisk]
    signals: list[Signal] = field(metadata=json_as(("reasons", "sentences"), ("signals", "value")))
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Possible improvements (removed syncs, copies, allocations), weighed apart from the score.
    improvement: int = 0
    improvements: list[Signal] = field(default_factory=list, metadata=json_as(("improvements", "sentences")))

    @property
    def reasons(self) -> list[str]:
        return [s.sentence() for s in self.signals]

    def to_dict(self) -> dict[str, Any]:
        return serialise.to_json(self)
