"""The profiled pass of `perfbot bench run`: after the timed rounds, one un-timed run per side under
a profiler, whose trace becomes that side's kernel profile in the results file.

It runs as a round does (`rounds.run_round`: the same allow-listed environment, the same deadline and
the same way of killing what it started), so profiling changes nothing about how the timed rounds
ran and never touches their numbers; a pass that fails leaves its side without a profile and says
why, and the verdict is unaffected.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.config.schema import MetricDeclaration
from bot.core.judge.profile import Profile

from .rounds import run_round
from .suites.base import Command, Measurement, Output, RoundContext, Suite


@dataclass
class ProfileOutcome:
    profile: Profile | None
    error: str | None
    seconds: float


class _ProfilePass(Suite):
    """A suite's profiled pass, seen as a round of its own."""

    def __init__(self, suite: Suite):
        self.suite = suite
        self.name, self.timeout = suite.name, suite.timeout
        self.python, self.pass_env = suite.python, suite.pass_env
        self.found: Profile | None = None

    @property
    def metrics(self) -> dict[str, MetricDeclaration]:
        return {}

    def round_commands(self, context: RoundContext) -> list[Command]:
        return self.suite.profile_commands(context)

    def parse(self, context: RoundContext, outputs: list[Output]) -> Measurement:
        self.found = self.suite.parse_profile(context, outputs)
        return Measurement({"profiled_steps": float(self.found.steps)})


def profile_side(suite: Suite, context: RoundContext, timeout: float) -> ProfileOutcome:
    """One side's profiled pass: its profile, or why there is none."""
    profiled = _ProfilePass(suite)
    outcome = run_round(profiled, context, timeout)
    if not outcome.ok or profiled.found is None:
        return ProfileOutcome(None, outcome.error or "the pass left no profile", outcome.seconds)
    return ProfileOutcome(profiled.found, None, outcome.seconds)
