"""The repository configuration (`.github/perfbot.yml`): schema, validation and error wording.

`Rule` and `Thresholds` validate a repository's own rules and thresholds; the risk engine uses them
as the plain data of `rules` (`Rule.plain`), which the built-in profiles are written in. A test
validates every built-in rule with `Rule`, so what a user writes is exactly what perfbot ships with.
A suite's options are its kind's model, one of the kinds `bot.core.config.suite_kinds` registers.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from bot.core import vocabulary
from bot.core.config import CONFIG_PATH, patterns, rules, suite_kinds
from bot.core.config.rules import RuleKind, Scope
from bot.core.config.strict import Strict as _Strict
from bot.core.config.suite_kinds.base import MetricDeclaration as MetricDeclaration
from bot.core.config.suite_kinds.base import SuiteOptions
from bot.errors import UserError

ProfileName = Literal["auto", "generic", "sglang", "vllm"]
LEVELS = vocabulary.LEVELS
_DEFAULT_THRESHOLDS = rules.Thresholds()


class ConfigError(UserError, ValueError):
    """A configuration that cannot be used; each entry of ``problems`` names a key path."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"{source}: {problems[0]}{more}")


class Rule(_Strict):
    """One risk signal.

    - ``path``: changed files whose path matches one of ``paths`` (gitignore-style globs).
    - ``function``: a change inside a function whose name matches ``pattern`` (an RE2 regex).
    - ``token``: an added or removed line that matches ``pattern``; with ``paths``, only in
      those files; with ``scope: hot``, only inside a hot file or a hot function.
    - ``cold``: files matching ``paths`` cannot change inference speed; they add nothing.
    - ``setup``: functions whose name matches ``pattern`` run once, at start-up; a file changed
      only inside them keeps ``weight`` percent of its path rules' weight (and so do the token
      rules that fire inside them).
    - ``dependency``: a manifest matching ``paths`` moves the version of a package whose name
      matches ``pattern`` (the whole name, any case; ``-``/``_``/``.`` written as ``-``).
    """

    id: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=80)]
    kind: RuleKind
    category: Annotated[str, Field(min_length=1, max_length=40)]
    weight: Annotated[float, Field(ge=0, le=100)] = 0
    description: Annotated[str, Field(min_length=1, max_length=200)]
    paths: tuple[Annotated[str, Field(min_length=1)], ...] = ()
    pattern: str | None = None
    scope: Scope = "any"

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                patterns.regex(patterns.scoped_flags(value))
            except patterns.PatternError as error:
                raise ValueError(str(error)) from None
        return value

    @field_validator("paths")
    @classmethod
    def _globs_compile(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        try:
            patterns.glob_regex(value)
        except patterns.PatternError as error:
            raise ValueError(str(error)) from None
        return value

    @model_validator(mode="after")
    def _fields_fit_kind(self) -> Rule:
        if self.kind in ("path", "cold", "dependency") and not self.paths:
            raise ValueError(f"a '{self.kind}' rule needs 'paths'")
        if self.kind in ("function", "token", "setup", "dependency") and not self.pattern:
            raise ValueError(f"a '{self.kind}' rule needs 'pattern'")
        return self

    def plain(self) -> rules.Rule:
        """The rule as the risk engine uses it."""
        return rules.Rule(**self.model_dump())


class Thresholds(_Strict):
    """Lowest score of each level; below ``low`` the level is ``none``."""

    low: Annotated[int, Field(ge=0, le=100)] = _DEFAULT_THRESHOLDS.low
    medium: Annotated[int, Field(ge=0, le=100)] = _DEFAULT_THRESHOLDS.medium
    high: Annotated[int, Field(ge=0, le=100)] = _DEFAULT_THRESHOLDS.high

    @model_validator(mode="after")
    def _ascending(self) -> Thresholds:
        if not self.low <= self.medium <= self.high:
            raise ValueError("thresholds must satisfy low <= medium <= high")
        return self

    def plain(self) -> rules.Thresholds:
        """The thresholds as the risk engine uses them."""
        return rules.Thresholds(**self.model_dump())

    def level(self, score: int) -> vocabulary.Level:
        """The risk level of ``score`` (`rules.Thresholds.level`, where the rule is written)."""
        return self.plain().level(score)


class RiskConfig(_Strict):
    """The ``risk`` section: which profile, and how the repository adjusts it."""

    profile: ProfileName = "auto"
    thresholds: Thresholds = Thresholds()
    rules: list[Rule] = Field(default=[], description="Added rules; an existing id replaces it.")
    disable: list[str] = Field(default=[], description="Ids of profile rules to turn off.")
    weights: dict[str, Annotated[float, Field(ge=0, le=100)]] = Field(
        default={}, description="New weights for rules, by id."
    )
    comment: Literal["none", "low", "medium", "high"] = Field(
        default="medium",
        description="The lowest risk level for which a new PR comment is written "
        "('none': every pull request). An existing comment is always "
        "kept up to date; the check run and label are always published.",
    )


_SUITE_NAME = r"^[a-z0-9][a-z0-9._-]*$"
_ENV_NAME_OR_PREFIX = r"^[A-Za-z_][A-Za-z0-9_]*\*?$"
# The GitHub runner's own channels (file commands, tokens): never given to a benchmark process.
FORBIDDEN_ENV_PREFIXES = ("GITHUB_", "ACTIONS_", "RUNNER_")

if TYPE_CHECKING:
    SuiteConfig = SuiteOptions
else:
    # One suite of any registered kind, told apart by its ``kind`` (`Union` of the registry's
    # tuple: the kinds are not known where this is written, so `A | B` cannot name them).
    SuiteConfig = Annotated[Union[suite_kinds.options_models()], Field(discriminator="kind")]  # noqa: UP007


TriggerLevel = Literal["low", "medium", "high", "never"]
# The default GPU budget of the default branch's runs: 4 GPU hours a day; and what one A/B run of a
# suite is counted as (docs/watch.md#the-budget explains both with measured figures).
DEFAULT_BUDGET_MINUTES = 240
DEFAULT_RUN_MINUTES = 5.0
MAX_BUDGET_MINUTES = 1_440_000  # a thousand GPUs all day
_WORKFLOW_FILE = r"^[A-Za-z0-9._-]+\.ya?ml$"


class Cooldowns(_Strict):
    """How soon after a `/bench` the next one is accepted, in seconds (0: at once)."""

    user: Annotated[int, Field(ge=0, le=7 * 86_400)] = Field(
        default=300, description="Seconds between two `/bench` of one person in this repository."
    )
    pr: Annotated[int, Field(ge=0, le=7 * 86_400)] = Field(
        default=300, description="Seconds between two `/bench` on one pull request."
    )


class DispatchConfig(_Strict):
    """The ``bench.dispatch`` section: when the bot starts the benchmark workflow on the GPU runners,
    with what, and what a result does to the pull request."""

    workflow: Annotated[str, Field(pattern=_WORKFLOW_FILE, max_length=100)] = Field(
        default="perfbot-bench.yml",
        description="File name of the benchmark workflow in .github/workflows on the default branch.",
    )
    suites: list[Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]{1,64}$")]] = Field(
        default=[],
        max_length=20,
        description="Suites a `/bench` without names and an automatic run measure (default: every "
        "suite of bench.suites, else verify-step).",
    )
    auto: TriggerLevel = Field(
        default="high",
        description="Risk level from which a trusted author's pull request is "
        "benchmarked on every push without asking ('never': only `/bench`).",
    )
    on_merge: TriggerLevel = Field(
        default="high",
        description="Risk level from which a merged pull request's merge commit is "
        "benchmarked against its first parent, for the default branch's history.",
    )
    schedule: Literal["never", "daily", "weekly"] = Field(
        default="never", description="Benchmark the default branch's head on this schedule."
    )
    schedule_hour: Annotated[int, Field(ge=0, le=23)] = Field(
        default=3,
        description="Hour of the day (UTC) from which the scheduled run is started; "
        "weekly runs start on Mondays.",
    )
    gate: bool = Field(
        default=False,
        description="A confirmed regression fails the `perfbot / bench` check (else it is "
        "neutral and informs).",
    )
    max_rounds: Annotated[int, Field(ge=1, le=1000)] = Field(
        default=50, description="The most rounds per side a `/bench --rounds` or `--max-rounds` may ask for."
    )
    cooldown: Cooldowns = Cooldowns()
    budget: Annotated[int, Field(ge=0, le=MAX_BUDGET_MINUTES)] | Literal["unlimited"] = Field(
        default=DEFAULT_BUDGET_MINUTES,
        description="GPU minutes per day (UTC) that merge runs, scheduled runs and bisects of this "
        "repository may draw on, riskiest first ('unlimited': no limit; 0: none of them "
        "runs). `/bench` on a pull request never draws on it.",
    )

    @field_validator("budget", mode="before")
    @classmethod
    def _minutes_or_unlimited(cls, value: object) -> object:
        """One message for both shapes the key takes (pydantic would name each member of the union)."""
        if value == "unlimited" or (
            isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_BUDGET_MINUTES
        ):
            return value
        raise ValueError(
            f"expected GPU minutes per day (a whole number from 0 to {MAX_BUDGET_MINUTES}) "
            f"or 'unlimited', not {value!r:.40}"
        )

    run_minutes: Annotated[float, Field(gt=0, le=1440)] = Field(
        default=DEFAULT_RUN_MINUTES,
        description="GPU minutes one A/B run of one suite is counted as against the budget (a bisect "
        "counts one per run it may make).",
    )


class WatchConfig(_Strict):
    """The ``bench.watch`` section: what perfbot does when a regression lands on the default branch."""

    bisect: bool = Field(
        default=True,
        description="Bisect a regression on the default branch on the GPU runners, "
        "within bench.dispatch.budget, and name the culprit on its pull request.",
    )
    issue: bool = Field(
        default=False,
        description="Also open an issue for each confirmed culprit (one per regression, "
        "updated rather than duplicated).",
    )


class BenchConfig(_Strict):
    """The ``bench`` section: named suites, the defaults of `perfbot bench run`, and when the bot
    dispatches benchmarks (``dispatch``)."""

    suites: dict[Annotated[str, Field(pattern=_SUITE_NAME, max_length=60)], SuiteConfig] = Field(
        default={}, description="Suites by name; a name of a built-in suite changes its options."
    )
    rounds: Annotated[int, Field(ge=1, le=1000)] = 5
    warmup: Annotated[int, Field(ge=0, le=100)] = 1
    max_rounds: Annotated[int, Field(ge=1, le=1000)] | None = None
    timeout: Annotated[float, Field(gt=0)] = 900
    python: Annotated[str, Field(min_length=1)] | None = Field(
        default=None,
        description="The engine's interpreter, which the suites run (default: python3 on "
        "PATH); a suite's own python wins.",
    )
    pass_env: list[Annotated[str, Field(pattern=_ENV_NAME_OR_PREFIX)]] = Field(
        default=[],
        description="More variables of the runner's environment for the benchmark processes: "
        "names, or prefixes ending in '*' (which never pass a secret-looking name).",
    )

    @field_validator("pass_env")
    @classmethod
    def _not_the_runners_channels(cls, names: list[str]) -> list[str]:
        for name in names:
            if name.startswith(FORBIDDEN_ENV_PREFIXES):
                raise ValueError(
                    f"{name}: GITHUB_*, ACTIONS_* and RUNNER_* variables are never given to benchmarks"
                )
        return names

    dispatch: DispatchConfig = DispatchConfig()
    watch: WatchConfig = WatchConfig()


def reaches(level: vocabulary.Level, trigger: TriggerLevel) -> bool:
    """Whether a risk ``level`` ('none' ... 'high') is at or above a dispatch ``trigger`` level."""
    return trigger != "never" and vocabulary.reaches(level, trigger)


class RepoConfig(_Strict):
    """Everything `.github/perfbot.yml` may hold."""

    version: Literal[1] = 1
    risk: RiskConfig = RiskConfig()
    bench: BenchConfig = BenchConfig()


def schema() -> dict[str, Any]:
    """The JSON schema of `.github/perfbot.yml`."""
    return RepoConfig.model_json_schema()


def load(text: str | bytes, source: str = CONFIG_PATH) -> RepoConfig:
    """Parse and validate YAML text; raise `ConfigError` naming the key path of each problem."""
    data = parse(text, source)
    try:
        return RepoConfig.model_validate(data)
    except ValidationError as error:
        raise ConfigError(source, [describe(e, data) for e in error.errors()]) from None


def parse(text: str | bytes, source: str = CONFIG_PATH) -> dict[str, Any]:
    """The YAML text as a mapping, not yet validated; `ConfigError` when it is not YAML or not a
    mapping."""
    import yaml  # here, not at the top: a command that reads no config file never needs it

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
    return data


_KEY = "[key]"  # pydantic's mark for a problem with a mapping's key rather than its value
_MAPPING_TYPES = ("model_type", "model_attributes_type", "dict_type")


def describe(error: ErrorDetails, data: object, *, guess: bool = False) -> str:
    """One problem as the user wrote it: the key path in their file (``bench.suites.NAME.preset``,
    ``risk.rules[0].paths``) and what was expected, in the words of the file, not of the models;
    with ``guess``, an unknown key close to a known one says which ("did you mean ...?")."""
    path, key_problem = key_path(error["loc"], data)
    where = path or "(top level)"
    kind, context, value = error["type"], error.get("ctx") or {}, error.get("input")
    if key_problem:
        expected = context.get("expected")
        return f"{where}: unknown key" + (f" (expected one of {expected})" if expected else "")
    if kind == "extra_forbidden":
        close = (
            difflib.get_close_matches(str(error["loc"][-1]), _known_keys(error["loc"][:-1]), n=1)
            if guess
            else []
        )
        return f"{where}: unknown key" + (f" (did you mean '{close[0]}'?)" if close else "")
    if kind == "missing":
        return f"{where}: missing (required)"
    if kind in _MAPPING_TYPES:
        return f"{where}: expected a mapping of keys to values, not {_yaml_type(value)}"
    if kind == "literal_error":
        return f"{where}: {_shown(value)} is not allowed (expected {context.get('expected')})"
    if kind == "union_tag_invalid":
        return f"{where}.kind: {_shown(context.get('tag'))} is not a suite kind (expected one of {_kinds()})"
    if kind == "union_tag_not_found":
        return f"{where}: missing 'kind' (one of {_kinds()})"
    message = re.sub(r" or instance of \w+", "", error["msg"].removeprefix("Value error, "))
    return f"{where}: {message}"


def key_path(loc: tuple[int | str, ...], data: object) -> tuple[str, bool]:
    """``loc`` as a path through ``data``, without the parts the models add (the tag of a suite's
    kind after its name: no other model's fields are named like one of its kinds); and whether
    the problem is with the last key itself (``[key]``)."""
    parts: list[str] = []
    node: object = data
    key_problem = tag_skipped = False
    for item in loc:
        if item == _KEY:
            key_problem = True
            continue
        if isinstance(node, dict) and not tag_skipped and node.get("kind") == item:
            # A suite's error passes through its kind (the union's tag) first, even when the suite
            # also has a key of that name: a step of the models, not a key of the file.
            tag_skipped = True
            continue
        tag_skipped = False
        if isinstance(item, int) and isinstance(node, list):
            parts.append(f"[{item}]")
            node = node[item] if 0 <= item < len(node) else None
            continue
        parts.append(f".{item}")
        node = node.get(item) if isinstance(node, dict) else None
    return "".join(parts).lstrip("."), key_problem


def _known_keys(loc: tuple[int | str, ...]) -> list[str]:
    """The keys the model at ``loc`` (pydantic's location of a mapping) accepts, for a guess at the
    key an unknown one meant."""
    model: Any = RepoConfig
    for part in loc:
        model = _inner(_plain(model), part)
        if model is None:
            return []
    model = _plain(model)
    return list(model.model_fields) if isinstance(model, type) and issubclass(model, BaseModel) else []


def _plain(kind: Any) -> Any:
    """``kind`` without ``Annotated`` and ``| None``."""
    while typing.get_origin(kind) is Annotated:
        kind = typing.get_args(kind)[0]
    if typing.get_origin(kind) in (Union, types.UnionType):
        members = [m for m in typing.get_args(kind) if m is not type(None)]
        if len(members) == 1:
            return _plain(members[0])
    return kind


def _inner(kind: Any, part: int | str) -> Any:
    """The type one location part further in: a model's field, a mapping's or a list's item, or the
    suite kind's model that the part (the union's tag) names."""
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        field = kind.model_fields.get(str(part))
        return field.annotation if field is not None else None
    origin = typing.get_origin(kind)
    if origin is dict:
        return typing.get_args(kind)[1]
    if origin in (list, tuple):
        return typing.get_args(kind)[0]
    if origin in (Union, types.UnionType):
        for member in map(_plain, typing.get_args(kind)):
            tag = (
                member.model_fields.get("kind")
                if isinstance(member, type) and issubclass(member, BaseModel)
                else None
            )
            if tag is not None and part in typing.get_args(tag.annotation):
                return member
    return None


def _kinds() -> str:
    return ", ".join(repr(name) for name in suite_kinds.names())


def _yaml_type(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "nothing" if value is None else type(value).__name__


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
