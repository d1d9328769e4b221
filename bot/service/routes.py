"""The one pipeline of each event kind, as the intake and the worker route deliveries: GitHub's
events, and the bot's own steps (`bot.service.chain`), which only the worker ever sees."""

from typing import Any

from . import chain, commands, events, installations, pull_requests, runs, steps
from .events import (
    CommandEvent,
    InstallationEvent,
    InstallationRepositoriesEvent,
    PullRequestEvent,
    WorkflowRunEvent,
)
from .router import Pipeline, Router


def _parse(event: str, payload: dict[str, Any]) -> Any:
    return chain.parse(payload) if event == chain.EVENT else events.parse(event, payload)


# The GitHub event names each kind is parsed from are `bot.service.events.KINDS`'.
ROUTER = Router(
    {
        PullRequestEvent: Pipeline(pull_requests.wants, pull_requests.handle),
        CommandEvent: Pipeline(commands.wants, commands.handle),
        WorkflowRunEvent: Pipeline(runs.wants, runs.handle),
        InstallationEvent: Pipeline(installations.wants, installations.on_installation, brief=True),
        InstallationRepositoriesEvent: Pipeline(
            installations.wants, installations.on_repositories, brief=True
        ),
        chain.Step: Pipeline(steps.wants, steps.handle),
    },
    parse=_parse,
)
