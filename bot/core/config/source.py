"""Where a repository's config is read from, and reading it there: one policy for every caller.

A change is judged by rules it cannot edit: the review of a pull request reads the config of the
default branch (through GitHub), a benchmark the config committed at its base revision, never the
head's. Only the local commands (`perfbot triage`, `perfbot score --repo`) read the work tree,
which is the user's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from bot.core.config import CONFIG_PATH

if TYPE_CHECKING:
    from bot.core.config.schema import RepoConfig

Where = Literal["work-tree", "revision", "default-branch"]


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """Where the config comes from: the work tree, a commit, or the default branch on GitHub."""

    where: Where
    revision: str | None = None  # the commit's sha, or the default branch's name

    @classmethod
    def at_revision(cls, sha: str) -> ConfigSource:
        return cls("revision", sha)

    @classmethod
    def default_branch(cls, branch: str) -> ConfigSource:
        return cls("default-branch", branch)

    @property
    def path(self) -> str:
        return CONFIG_PATH

    @property
    def label(self) -> str:
        """How error messages name it."""
        if self.where == "revision":
            return f"{CONFIG_PATH} at {(self.revision or '')[:10]}"
        if self.where == "default-branch":
            return f"{CONFIG_PATH}@{self.revision}"
        return CONFIG_PATH


WORK_TREE = ConfigSource("work-tree")


def read(text: str | bytes | None, source: ConfigSource) -> RepoConfig:
    """The config in ``text`` as read from ``source`` (None: there is none, so the defaults);
    `ConfigError` naming ``source`` when it is invalid."""
    # The schema (pydantic) is loaded here, where a config is made, not by whoever names a source.
    from bot.core.config.schema import RepoConfig, load

    if text is None:
        return RepoConfig()
    return load(text, source.label)


def read_or_defaults(text: str | bytes | None, source: ConfigSource) -> tuple[RepoConfig, str | None]:
    """As `read`, for a caller that must go on (a review still goes out): an invalid config keeps its
    valid keys, leaves out the invalid ones and holds the runs perfbot starts on its own until it is
    fixed (`lenient`); with the line that says so. A file that is not YAML gives the defaults, held
    the same way."""
    config, line, _ = read_with_problems(text, source)
    return config, line


def read_with_problems(
    text: str | bytes | None, source: ConfigSource
) -> tuple[RepoConfig, str | None, tuple[str, ...]]:
    """As `read_or_defaults`, with each problem of the file apart (one per invalid key, with its
    "did you mean"), for whoever lists them all (the dashboard)."""
    from bot.core.config import lenient
    from bot.core.config.schema import ConfigError, RepoConfig, parse

    if text is None:
        return RepoConfig(), None, ()
    try:
        config, problems = lenient.salvage(parse(text, source.label))
    except ConfigError as error:
        return lenient.held(RepoConfig()), lenient.problem_line(error), tuple(error.problems)
    if not problems:
        return config, None, ()
    return config, lenient.problem_line(ConfigError(source.label, problems)), tuple(problems)
