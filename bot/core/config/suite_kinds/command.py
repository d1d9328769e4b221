"""The `command` kind: any command, whose metrics are whatever it reports (the runner's half:
`bot.runner.suites.command`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .base import MetricDeclaration, SuiteKind, SuiteOptions


class CommandSuite(SuiteOptions):
    """Any command, run by bash in the checked-out revision. It reports metrics by printing lines
    ``PERFBOT_METRIC name=value unit=ms better=lower`` or by writing JSON to ``$PERFBOT_METRICS_FILE``."""

    kind: Literal["command"]
    command: Annotated[str, Field(min_length=1)]
    setup: str | None = Field(default=None, description="Run once per checked-out revision, before rounds.")
    metrics: dict[str, MetricDeclaration] = Field(
        default={}, description="Units and directions of the metrics the command reports."
    )
    profile_command: str | None = Field(
        default=None,
        description="The profiled pass (with profile: true): writes a Kineto/Chrome trace "
        "into $PERFBOT_PROFILE_DIR. Default: the command itself.",
    )


class Command(SuiteKind, name="command"):
    options = CommandSuite
    built_in = True  # with the command line's --command

    @classmethod
    def default_options(cls, command: str | None = None) -> CommandSuite | None:
        return CommandSuite(kind="command", command=command) if command else None

    @classmethod
    def needs(cls) -> str:
        return "--command CMD or bench.suites.command.command in the config"
