"""How to measure, as `perfbot bench run` and `perfbot bisect` are both told (the command line's
shared options, `bot.cli.measure_options`): one definition, held by both verbs' options."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class MeasureOptions:
    """``None``: as the config's ``bench`` section says (`bench.plan` resolves them)."""

    repo: Path = Path(".")
    rounds: int | None = None  # counted rounds per side
    warmup: int | None = None  # uncounted warm-up rounds per side
    max_rounds: int | None = None  # adaptive rounds up to this many per side
    timeout: float | None = None  # seconds one round may take, whatever the suite's own timeout
    command: str | None = None  # the built-in `command` suite's command
    allow_dirty: bool = False  # measure even if the work tree has uncommitted changes
    python: str | None = None  # the engine's interpreter
