"""The repository configuration (`.github/perfbot.yml`): schema, validation and error wording.

The same `Rule` model describes the built-in profiles and a repository's own rules, so what a
user writes is exactly what perfbot ships with.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

RuleKind = Literal["path", "function", "token", "cold"]
ProfileName = Literal["auto", "generic", "sglang", "vllm"]
LEVELS = ("none", "low", "medium", "high")

CONFIG_PATH = ".github/perfbot.yml"


class ConfigError(ValueError):
    """A configuration that cannot be used; each entry of ``problems`` names a key path."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{source}: {problems[0]}{more}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Rule(_Strict):
    """One risk signal.

    - ``path``: changed files whose path matches one of ``paths`` (gitignore-style globs).
    - ``function``: a change inside a function whose name matches ``pattern`` (a regex).
    - ``token``: an added or removed line that matches ``pattern``; with ``paths``, only in
      those files; with ``scope: hot``, only inside a hot file or a hot function.
    - ``cold``: files matching ``paths`` cannot change inference speed; they add nothing.
    """

    id: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=80)]
    kind: RuleKind
    category: Annotated[str, Field(min_length=1, max_length=40)]
    weight: Annotated[float, Field(ge=0, le=100)] = 0
    description: Annotated[str, Field(min_length=1, max_length=200)]
    paths: tuple[Annotated[str, Field(min_length=1)], ...] = ()
    pattern: str | None = None
    scope: Literal["any", "hot"] = "any"

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(scoped_flags(value))
            except re.error as error:
                raise ValueError(f"not a valid regular expression: {error}") from None
        return value

    @model_validator(mode="after")
    def _fields_fit_kind(self) -> Rule:
        if self.kind in ("path", "cold") and not self.paths:
            raise ValueError(f"a '{self.kind}' rule needs 'paths'")
        if self.kind in ("function", "token") and not self.pattern:
            raise ValueError(f"a '{self.kind}' rule needs 'pattern'")
        return self


_LEADING_FLAGS = re.compile(r"^\(\?([aiLmsux]+)\)")


def scoped_flags(pattern: str) -> str:
    """Turn leading global flags, ``(?i)x``, into a scoped group, ``(?i:x)``, so that the
    pattern can sit inside an alternation with others."""
    match = _LEADING_FLAGS.match(pattern)
    if match is None:
        return pattern
    return f"(?{match[1]}:{pattern[match.end():]})"


class Thresholds(_Strict):
    """Lowest score of each level; below ``low`` the level is ``none``."""

    low: Annotated[int, Field(ge=0, le=100)] = 1
    medium: Annotated[int, Field(ge=0, le=100)] = 30
    high: Annotated[int, Field(ge=0, le=100)] = 60

    @model_validator(mode="after")
    def _ascending(self) -> Thresholds:
        if not self.low <= self.medium <= self.high:
            raise ValueError("thresholds must satisfy low <= medium <= high")
        return self

    def level(self, score: int) -> str:
        if score >= self.high:
            return "high"
        if score >= self.medium:
            return "medium"
        if score >= self.low:
            return "low"
        return "none"


class RiskConfig(_Strict):
    """The ``risk`` section: which profile, and how the repository adjusts it."""

    profile: ProfileName = "auto"
    thresholds: Thresholds = Thresholds()
    rules: list[Rule] = Field(default=[], description="Added rules; an existing id replaces it.")
    disable: list[str] = Field(default=[], description="Ids of profile rules to turn off.")
    weights: dict[str, Annotated[float, Field(ge=0, le=100)]] = Field(
        default={}, description="New weights for rules, by id."
    )


class RepoConfig(_Strict):
    """Everything `.github/perfbot.yml` may hold."""

    version: Literal[1] = 1
    risk: RiskConfig = RiskConfig()


def schema() -> dict[str, Any]:
    """The JSON schema of `.github/perfbot.yml`."""
    return RepoConfig.model_json_schema()


def load(text: str | bytes, source: str = CONFIG_PATH) -> RepoConfig:
    """Parse and validate YAML text; raise `ConfigError` naming the key path of each problem."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(source, [f"{where}not valid YAML ({problem})"]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(source, [f"the top level must be a mapping, not {type(data).__name__}"])
    try:
        return RepoConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(source, [_describe(e) for e in error.errors()]) from None


def _describe(error: dict[str, Any]) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"]).lstrip(".")
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "unknown key"
    return f"{path or '(top level)'}: {message}"
