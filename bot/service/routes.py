"""The one pipeline of each event kind, as the intake and the worker route deliveries."""

from . import commands, installations, pull_requests, runs
from .events import (
    CommandEvent,
    InstallationEvent,
    InstallationRepositoriesEvent,
    PullRequestEvent,
    WorkflowRunEvent,
)
from .router import Pipeline, Router

# The GitHub event names each kind is parsed from are `bot.service.events.KINDS`'.
ROUTER = Router(
    {
        PullRequestEvent: Pipeline(pull_requests.wants, pull_requests.handle),
        CommandEvent: Pipeline(commands.wants, commands.handle),
        WorkflowRunEvent: Pipeline(runs.wants, runs.handle),
        InstallationEvent: Pipeline(installations.wants, installations.on_installation),
        InstallationRepositoriesEvent: Pipeline(installations.wants, installations.on_repositories),
    }
)
