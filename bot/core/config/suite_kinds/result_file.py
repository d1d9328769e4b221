"""What the kinds that run a standard benchmark tool share: a command, run by bash in the
checked-out revision in every round, that writes the tool's result file where
``$PERFBOT_RESULT_FILE`` says; the runner reads it with the format's parser (`bot.core.formats`).
This module registers no kind of its own.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .base import SuiteOptions


class ResultFileSuite(SuiteOptions):
    """A command that writes a benchmark tool's result file to ``$PERFBOT_RESULT_FILE``."""

    command: Annotated[str, Field(min_length=1)] = Field(
        description="Run by bash in the checked-out revision every round; it writes the tool's result "
        "file to $PERFBOT_RESULT_FILE."
    )
    setup: str | None = Field(default=None, description="Run once per checked-out revision, before rounds.")
