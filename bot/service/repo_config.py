"""The repository's `.github/perfbot.yml`, read from its default branch (never from a pull request's
head: a pull request must not lower its own risk or reach the GPU runners by editing it)."""

from __future__ import annotations

from typing import NamedTuple

from bot.core.config import source as config_source
from bot.core.config.schema import RepoConfig
from bot.core.config.source import ConfigSource

from .ports.github import GitHub
from .ports.store import ConfigProblems


class ConfigRead(NamedTuple):
    """The config in force, and what is wrong with the repository's own (then: its valid keys, with
    the runs perfbot starts on its own held until it is fixed; `bot.core.config.lenient`)."""

    config: RepoConfig
    problem: str | None = None


def read(github: GitHub, repo: str, default_branch: str, noted: ConfigProblems | None = None) -> ConfigRead:
    """The config in force on the default branch (one read of GitHub); with ``noted``, what it
    found wrong (or that nothing was) is kept there for the dashboard."""
    source = ConfigSource.default_branch(default_branch)
    text = github.read_file(repo, source.path, default_branch)
    config, problem, problems = config_source.read_with_problems(text, source)
    if noted is not None:
        noted.record(repo, source.label, problems)
    return ConfigRead(config, problem)
