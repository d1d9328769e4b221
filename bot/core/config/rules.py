"""Risk rules and thresholds as plain data: what the built-in profiles are written in and what the
risk engine matches with.

No pydantic here: scoring with the built-in profiles (`perfbot score` without a config file) never
loads the schema. A config file's rules and thresholds are validated by `schema` (the same fields,
with their limits and checks) and then become these; a test validates every built-in rule through
the schema, so the profiles cannot drift from what a user may write.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.core.vocabulary import Level

RuleKind = Literal["path", "function", "token", "cold", "setup", "dependency"]
Scope = Literal["any", "hot"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One risk signal; `schema.Rule` says what each kind matches."""

    id: str
    kind: RuleKind
    category: str
    weight: float = 0.0
    description: str
    paths: tuple[str, ...] = ()
    pattern: str | None = None
    scope: Scope = "any"

    @property
    def required_pattern(self) -> str:
        """``pattern`` of a rule whose kind needs one (validation made sure it is there)."""
        if self.pattern is None:
            raise ValueError(f"rule '{self.id}' ({self.kind}) has no pattern")
        return self.pattern


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Lowest score of each level; below ``low`` the level is ``none``."""

    low: int = 1
    medium: int = 30
    high: int = 60

    def level(self, score: int) -> Level:
        if score >= self.high:
            return "high"
        if score >= self.medium:
            return "medium"
        if score >= self.low:
            return "low"
        return "none"
