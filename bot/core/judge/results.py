"""The results file of `perfbot bench run` (schema `perfbot.results/1`): the one model that the
runner builds and writes and `perfbot compare` reads back and validates.

Results come back from GPU runners and are untrusted: everything is size-capped, every value is
checked, and every problem becomes one `ResultsError` line that names where it is. A file is well
formed while its run is still starting; `load` also wants rounds of both sides, to have something
to judge.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Annotated, Any, Literal, TypeGuard

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from bot.core.judge.profile import Profile
from bot.core.stepmap import StepMap, StepMapError
from bot.core.stepmap import parse as parse_step_map
from bot.core.text import clip, printable

SCHEMA = "perfbot.results/1"
MAX_METRICS = 200
MAX_ROUNDS = 10_000
MAX_FINGERPRINT_LEAVES = 5_000
MAX_FINGERPRINT_DEPTH = 10
MAX_ERROR_CHARS = 2_000
METRIC_NAME = r"^[A-Za-z0-9_][A-Za-z0-9_.:/@+-]{0,99}$"
Side = Literal["base", "head"]
SIDES: tuple[Side, Side] = ("base", "head")


class ResultsError(ValueError):
    """A results file that cannot be judged; the message is one line naming what and where."""


def _truncate_error(value: Any) -> Any:
    """Runners put whole tracebacks in `error`; keep the start, which says what failed."""
    return clip(value, MAX_ERROR_CHARS + 1) if isinstance(value, str) else value


MetricName = Annotated[str, Field(pattern=METRIC_NAME)]
ErrorText = Annotated[str | None, BeforeValidator(_truncate_error)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class Revision(_Model):
    """One side of the comparison: the commit measured, the machine it ran on and, optionally, the
    kernels of one profiled pass (`profile.Profile`), left out of a file when absent."""

    sha: Annotated[str, Field(pattern=r"^[0-9a-fA-F]{4,64}$")]
    fingerprint: dict[str, Any] = {}
    profile: Annotated[Profile | None, Field(exclude_if=lambda value: value is None)] = None

    @field_validator("fingerprint")
    @classmethod
    def _bounded(cls, value: dict[str, Any]) -> dict[str, Any]:
        leaves = _count_leaves(value, depth=1)
        if leaves > MAX_FINGERPRINT_LEAVES:
            raise ValueError(f"more than {MAX_FINGERPRINT_LEAVES} values")
        return value


def _count_leaves(value: Any, depth: int) -> int:
    if depth > MAX_FINGERPRINT_DEPTH:
        raise ValueError(f"nested deeper than {MAX_FINGERPRINT_DEPTH} levels")
    if isinstance(value, dict):
        return sum(_count_leaves(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return sum(_count_leaves(v, depth + 1) for v in value)
    return 1


Role = Literal["headline", "primary", "diagnostic"]
_UNSET = {"exclude_if": lambda value: value is None}  # optional fields a file leaves out when unset


class MetricSpec(_Model):
    """What a metric's numbers mean: unit, direction, and (optionally) what the verdict makes of it.

    ``role``: ``headline`` (the metric the suite's verdict speaks about first; a primary),
    ``primary`` (the verdict is about it), ``diagnostic`` (reported, explains, never decides the
    verdict); unset in files written before roles existed (`role_of` then decides). ``mode``: how the
    engine ran when the metric was measured (``piecewise``), named beside it in reports.
    """

    unit: Annotated[str, Field(max_length=32)]
    better: Literal["lower", "higher"]
    role: Annotated[Role | None, Field(**_UNSET)] = None
    mode: Annotated[str | None, Field(max_length=40, **_UNSET)] = None


class RoundSpread(_Model):
    """How precisely one round measured one metric: the standard error of the round's value (in the
    metric's unit) from the scatter of its ``calls`` timed calls."""

    se: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    calls: Annotated[int, Field(ge=1)]


class Round(_Model):
    """One benchmark round of one side; a failed round's metrics are dropped unread. ``seconds``:
    how long the round's processes ran, start-up included (where the runner recorded it);
    ``process``: ``fresh`` (a process of its own) or ``worker`` (served by the side's long-lived one)."""

    side: Side
    index: Annotated[int, Field(ge=0)]
    ok: bool
    error: ErrorText = None
    metrics: dict[MetricName, Any] = {}
    spread: Annotated[dict[MetricName, RoundSpread] | None, Field(**_UNSET)] = None
    seconds: Annotated[float | None, Field(ge=0, allow_inf_nan=False, **_UNSET)] = None
    process: Annotated[Literal["fresh", "worker"] | None, Field(**_UNSET)] = None

    @model_validator(mode="before")
    @classmethod
    def _drop_failed_metrics(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("ok") is False:
            return {**data, "metrics": {}, "spread": None}
        return data

    @model_validator(mode="after")
    def _values_are_measurements(self) -> Round:
        for name, value in self.metrics.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"metric {name}: must be a number, got {type(value).__name__}")
            if not _finite(value) or value < 0:
                raise ValueError(f"metric {name}: must be a finite number >= 0, got {_clip(repr(value))}")
        unmeasured = sorted(set(self.spread or {}) - set(self.metrics))
        if unmeasured:
            raise ValueError(f"spread of {unmeasured[0]}: the round did not measure it")
        return self


def _finite(value: int | float) -> bool:
    """Whether ``value`` is a finite number a float can hold (JSON integers have no bound)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


class Warmup(_Model):
    """An uncounted warm-up round: which side ran it and whether it ran."""

    side: Side
    ok: bool
    error: ErrorText = None
    seconds: Annotated[float | None, Field(ge=0, allow_inf_nan=False, **_UNSET)] = None


def looks(rounds: int, max_rounds: int) -> int:
    """How many times an adaptive run of ``rounds`` to ``max_rounds`` rounds per side may look at
    its data before it stops: once per round count from the minimum to the maximum (1 for a run of
    fixed length). Its verdicts share the false-alarm rate among these looks."""
    return max(1, min(max_rounds - rounds + 1, MAX_ROUNDS))


class Results(_Model):
    """A results file: what was run where, the metrics' declarations, and every round."""

    schema_: Annotated[Literal["perfbot.results/1"], Field(alias="schema")]
    suite: Annotated[str, Field(min_length=1, max_length=100)]
    repo: Annotated[str, Field(max_length=200)] = ""
    base: Revision
    head: Revision
    metrics: Annotated[dict[MetricName, MetricSpec], Field(max_length=MAX_METRICS)]
    rounds: Annotated[list[Round], Field(max_length=MAX_ROUNDS)]
    started_at: Annotated[str | None, Field(max_length=64)] = None
    finished_at: Annotated[str | None, Field(max_length=64)] = None
    # Beyond the contract, written by `perfbot bench run`: how the run ended, why, and how it was
    # asked for (rounds, max_rounds, ...).
    status: Annotated[str | None, Field(max_length=32)] = None
    error: ErrorText = None
    warmups: Annotated[list[Warmup], Field(max_length=MAX_ROUNDS)] = []
    options: dict[str, Any] = {}
    # Why a side has no `Revision.profile` although the run profiled (``{side: error}``).
    profile_errors: Annotated[dict[Side, ErrorText] | None, Field(**_UNSET)] = None
    # The per-step map of the base side's profiled pass (`bot.core.stepmap`), as JSON.
    step_map: Annotated[dict[str, Any] | None, Field(**_UNSET)] = None

    @field_validator("step_map")
    @classmethod
    def _a_step_map(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        try:
            return parse_step_map(value).to_dict()
        except StepMapError as error:
            raise ValueError(str(error)) from None

    @property
    def map(self) -> StepMap | None:
        """The per-step map the file holds, if any."""
        return None if self.step_map is None else parse_step_map(self.step_map)

    @field_validator("options")
    @classmethod
    def _bounded_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        if _count_leaves(value, depth=1) > 200:
            raise ValueError("more than 200 values")
        return value

    @property
    def looks(self) -> int:
        """The `looks` of the run, from ``options.rounds`` and ``options.max_rounds``; 1 when the
        file does not say."""
        low, high = self.options.get("rounds"), self.options.get("max_rounds")
        if _is_count(low) and _is_count(high):
            return looks(low, high)
        return 1

    @model_validator(mode="after")
    def _consistent(self) -> Results:
        if self.step_map is not None and self.step_map["commit"] not in (
            self.base.sha.lower(),
            self.head.sha.lower(),
        ):
            raise ValueError("step_map.commit: the map is of neither side's commit")
        seen: set[tuple[str, int]] = set()
        for position, round_ in enumerate(self.rounds):
            key = (round_.side, round_.index)
            if key in seen:
                raise ValueError(f"rounds[{position}]: round {round_.index} of {round_.side} appears twice")
            seen.add(key)
            unknown = sorted(set(round_.metrics) - set(self.metrics))
            if unknown:
                raise ValueError(f"rounds[{position}]: metric {unknown[0]} is not declared in 'metrics'")
        return self

    def revision(self, side: Side) -> Revision:
        return self.base if side == "base" else self.head

    def rounds_of(self, side: Side) -> list[Round]:
        """The rounds of one side in the order they ran."""
        return sorted((r for r in self.rounds if r.side == side), key=lambda r: r.index)

    def values(self, side: Side, metric: str) -> list[float]:
        """The successful measurements of one metric on one side, in round order."""
        return [float(r.metrics[metric]) for r in self.rounds_of(side) if r.ok and metric in r.metrics]

    def spreads(self, side: Side, metric: str) -> list[float] | None:
        """The standard errors of `values` (same rounds, same order), or None unless every one of
        those rounds recorded its spread."""
        errors = [
            r.spread.get(metric) if r.spread else None
            for r in self.rounds_of(side)
            if r.ok and metric in r.metrics
        ]
        if not errors or any(e is None for e in errors):
            return None
        return [e.se for e in errors if e is not None]

    def role(self, metric: str) -> Role:
        """The metric's role: as declared, else `role_of` its name."""
        return self.metrics[metric].role or role_of(metric)

    def failures(self, side: Side) -> list[Round]:
        return [r for r in self.rounds_of(side) if not r.ok]


# Roles of the built-in suites' metric names, for files that do not declare them (written before
# roles existed). Timings bound by the host (an eager pass launched from Python) or by when the
# ranks meet (a single collective call) are diagnostics; every other metric is primary.
_DIAGNOSTICS = frozenset(
    (
        "verify_eager_ms",
        "allreduce_us",
        "allreduce_verify_us",
        "allreduce_draft_us",
        "draft_ms",
        "spec_tok_s",
        "spec_speedup",
        "ttft_ms",
        "baseline_ttft_ms",
    )
)


def role_of(metric: str) -> Role:
    """The role of a metric whose file declares none: ``cycle_ms`` is the headline of both EAGLE-3
    suites; the built-in suites' host- or launch-bound and derived metrics are diagnostics; any
    other metric is primary."""
    if metric == "cycle_ms":
        return "headline"
    return "diagnostic" if metric in _DIAGNOSTICS else "primary"


def load(data: str | bytes, source: str = "results") -> Results:
    """Parse and validate a results file; raise `ResultsError` with one line naming the problem."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ResultsError(f"{source}: not UTF-8 text (byte {error.start})") from None
    parsed = _parse_json(data, source)
    _check_schema(parsed, source)
    try:
        loaded = Results.model_validate(parsed)
    except ValidationError as error:
        raise ResultsError(f"{source}: {problem(error)}") from None
    for side in SIDES:
        if not loaded.rounds_of(side):
            raise ResultsError(f"{source}: no rounds for the {side} side")
    return loaded


def problem(error: ValidationError) -> str:
    """What the model refused, in one line that names where."""
    problems = error.errors()
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{_describe(problems[0])}{more}"


def _is_count(value: object) -> TypeGuard[int]:
    """An integer (JSON's true and false are not counts)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_json(text: str, source: str) -> Any:
    if not text.strip():
        raise ResultsError(f"{source}: empty file, not a results file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        ended_early = error.pos >= len(text.rstrip()) or error.msg.startswith("Unterminated")
        hint = " (truncated?)" if ended_early else ""
        raise ResultsError(
            f"{source}: not valid JSON{hint}: {error.msg} (line {error.lineno}, column {error.colno})"
        ) from None
    except RecursionError:
        raise ResultsError(f"{source}: JSON nested too deeply") from None
    except ValueError:
        # Python's guard against quadratic-time conversions (sys.get_int_max_str_digits()).
        raise ResultsError(
            f"{source}: not a results file: it holds an integer of more than "
            f"{sys.get_int_max_str_digits()} digits"
        ) from None


def _check_schema(parsed: Any, source: str) -> None:
    if not isinstance(parsed, dict):
        raise ResultsError(f"{source}: the top level must be a JSON object, not {_json_type(parsed)}")
    schema = parsed.get("schema")
    if schema is None:
        raise ResultsError(f"{source}: not a perfbot results file (no 'schema' key)")
    if schema != SCHEMA:
        raise ResultsError(
            f"{source}: unsupported schema {_clip(repr(schema))} (this perfbot reads {SCHEMA})"
        )


def _json_type(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _clip(text: str, limit: int = 40) -> str:
    """A piece of untrusted input fit for a one-line error: printable, ``limit`` characters at most
    before the ellipsis."""
    return clip(printable(text), limit + 1)


def _describe(error: ErrorDetails) -> str:
    loc = error["loc"]
    message = _clip(error["msg"].removeprefix("Value error, "), 200)
    if loc[-1:] == ("[key]",):
        loc = loc[:-1]
        message = "metric names are 1-100 characters: letters, digits and _.:/@+-"
    elif error["type"] == "string_pattern_mismatch":
        message = f"does not match {error['ctx']['pattern']}"
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{_clip(str(p))}" for p in loc)
    return f"{path.lstrip('.')}: {message}" if path else message
