"""What the suites of the standard benchmark tools share (their kinds: `bot.core.config.suite_kinds`
modules on `result_file`): every round runs the suite's command by bash in the revision's worktree,
with ``$PERFBOT_RESULT_FILE`` naming a fresh file in the round's folder, and reads what the tool
wrote there with the format's parser (`bot.core.formats`). A missing or unreadable file fails the
round, in the parser's one line naming the file and the field. This module registers no kind.
"""

from __future__ import annotations

from abc import abstractmethod
from pathlib import Path
from typing import ClassVar

from pydantic import ValidationError

from bot.core.config.suite_kinds.base import MetricDeclaration
from bot.core.config.suite_kinds.result_file import ResultFileSuite
from bot.core.formats.base import FormatError, Readings
from bot.core.judge.kineto import Traced
from bot.core.judge.profile import Profile

from .base import (
    PROFILE_DIR,
    Command,
    Measurement,
    Output,
    RoundContext,
    RoundFailed,
    Suite,
    read_result,
    trace_traced,
)

VARIABLE = "PERFBOT_RESULT_FILE"


class ResultFileBench(Suite):
    """A suite whose command writes a standard tool's result file."""

    config: ResultFileSuite
    FILE: ClassVar[str]  # the result file's name in the round's folder, which error messages name

    @property
    def metrics(self) -> dict[str, MetricDeclaration]:
        return self.KIND.declarations()

    def setup_commands(self, worktree: Path) -> list[Command]:
        if not self.config.setup:
            return []
        return [Command("setup", ("bash", "-c", self.config.setup), dict(self.config.env))]

    def round_commands(self, context: RoundContext) -> list[Command]:
        env = {**self.config.env, VARIABLE: str(context.out_dir / self.FILE)}
        return [Command(self.name, ("bash", "-c", self.config.command), env)]

    def profile_commands(self, context: RoundContext) -> list[Command]:
        """The profiled pass (``profile: true``), as the `command` suite's: the command once more,
        un-timed, with ``$PERFBOT_PROFILE_DIR`` naming the folder where it may write a Kineto
        trace (with ``torch.profiler``, or an engine's own profiler pointed there)."""
        folder = context.out_dir / PROFILE_DIR
        folder.mkdir(parents=True, exist_ok=True)
        env = {
            **self.config.env,
            "PERFBOT_PROFILE_DIR": str(folder),
            VARIABLE: str(context.out_dir / self.FILE),
        }
        return [Command(f"{self.name}-profile", ("bash", "-c", self.config.command), env)]

    def parse_profile(self, context: RoundContext, outputs: list[Output]) -> Profile:
        return self.parse_traced(context, outputs).profile

    def parse_traced(self, context: RoundContext, outputs: list[Output]) -> Traced:
        return trace_traced(context, f"the {self.name} command's trace")

    @abstractmethod
    def read(self, content: str, source: str) -> Readings:
        """The metrics of the result file's text (`FormatError` where it cannot be read)."""

    def parse(self, context: RoundContext, outputs: list[Output]) -> Measurement:
        path = context.out_dir / self.FILE
        if not path.is_file():
            raise RoundFailed(f"{self.FILE}: the command wrote no result file (write it to ${VARIABLE})")
        try:
            readings = self.read(read_result(path, self.FILE), self.FILE)
        except FormatError as error:
            raise RoundFailed(str(error)) from None
        return measurement(readings, self.KIND.declarations())


def measurement(readings: Readings, declared: dict[str, MetricDeclaration]) -> Measurement:
    """The round's values; the declarations of the metrics the kind does not declare up front
    (primary unless the format says otherwise: a benchmark the user wrote is what the verdict is
    about); and the standard error of each value the tool's per-item numbers gave."""
    values, declarations, spread = {}, {}, {}
    for name, reading in readings.items():
        values[name] = reading.value
        if name not in declared:
            try:
                declarations[name] = MetricDeclaration(
                    unit=reading.unit, better=reading.better, role=reading.role or "primary"
                )
            except ValidationError:
                raise RoundFailed(f"metric {name!r}: unit {reading.unit!r} not understood") from None
        if reading.se is not None and reading.calls:
            spread[name] = {"se": reading.se, "calls": reading.calls}
    return Measurement(values, declarations, spread)
