"""What a suite kind is, as the core knows it: the options a suite of the kind takes (its model under
``bench.suites.NAME``), the metrics it reports (unit, better direction, role in the verdict, and the
words reports use for them), and whether a suite of the kind's own name is known without a config
entry. How a suite of the kind runs a round and reads what the round left is the runner's half
(`bot.runner.suites`), registered under the same name. This module registers no kind of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal, get_args

from pydantic import Field, ValidationError

from bot.core.config.strict import Strict

ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class MetricDeclaration(Strict):
    """What a number means: its unit, which direction is better, and what the verdict makes of it."""

    unit: Annotated[str, Field(max_length=20)] = ""
    better: Literal["lower", "higher"]
    role: Literal["headline", "primary", "diagnostic"] | None = Field(
        default=None,
        description="primary: the verdict is about it (headline: the one it names "
        "first); diagnostic: reported, never decides the verdict. "
        "Default: primary.",
    )
    mode: Annotated[str, Field(max_length=40)] | None = Field(
        default=None, description="How the engine ran when this was measured, named in reports."
    )


Quantity = Literal["time", "rate", "count", "ratio"]
# What a metric is to the speculation explanation (`bot.core.judge.speculation`): the speculative
# and the plain decoding rate, their ratio, the accept length, the cycle, or a part of the cycle
# (``communication``: a part that is a collective call).
Part = Literal[
    "speculative_rate", "plain_rate", "speedup", "accept_length", "cycle", "cycle_part", "communication"
]
# The parts the explanation reads as one quantity each: one metric name stands for it in every kind.
SINGLE_PARTS: tuple[Part, ...] = ("speculative_rate", "plain_rate", "speedup", "accept_length", "cycle")


@dataclass(frozen=True, slots=True)
class MetricRole:
    """How reports name a metric (``label``), what sort of quantity it is, what it means, and what
    it is to the speculation explanation, if anything (``part``)."""

    label: str
    quantity: Quantity
    meaning: str
    part: Part | None = None


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric of a kind: what its results files declare of it, and its words. ``retired``: an
    earlier version of the benchmark reported it and this one does not; its words stay, for the
    results files that have it."""

    declared: MetricDeclaration
    role: MetricRole
    retired: bool = False


class SuiteOptions(Strict):
    """What every suite accepts, whatever its kind (the model of a kind adds its own options and
    its ``kind``, the tag of the config's union of kinds)."""

    if TYPE_CHECKING:
        kind: str  # each kind's model declares it as the Literal of its name

    env: dict[Annotated[str, Field(pattern=ENV_NAME)], str] = Field(
        default={}, description="Extra environment variables for every process of the suite."
    )
    timeout: Annotated[float, Field(gt=0)] | None = Field(
        default=None, description="Seconds one round may take (default: the bench timeout)."
    )
    profile: bool | None = Field(
        default=None,
        description="One un-timed profiled pass per side after the timed rounds, read "
        "into a kernel diff (true or false). Default: on for verify-step "
        "where the machine has a GPU, off for the other suites.",
    )


class SuiteKind:
    """One kind of suite. A subclass that names its kind (``class VerifyStep(SuiteKind,
    name="verify-step")``) is registered under that name as its module is imported; the registry
    (`bot.core.config.suite_kinds`) imports every module of its package."""

    name: ClassVar[str]
    options: ClassVar[type[SuiteOptions]]  # the model of a suite of this kind in the config
    metrics: ClassVar[Mapping[str, Metric]] = {}  # what it reports, whatever its options
    # A suite named after the kind is known without a config entry (`perfbot bench run --suite`,
    # `/bench`): with `default_options`, or refused at the runner saying what it `needs`.
    built_in: ClassVar[bool] = False

    def __init_subclass__(cls, name: str | None = None, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if name is None:
            return  # a base of kinds that share something (no kind of its own)
        tag = cls.options.model_fields.get("kind")
        if tag is None or get_args(tag.annotation) != (name,):
            raise TypeError(f"suite kind {name!r}: its options need kind: Literal[{name!r}]")
        if name in KINDS:
            raise TypeError(
                f"suite kind {name!r} is registered twice ({KINDS[name].__qualname__}, {cls.__qualname__})"
            )
        cls.name = name
        KINDS[name] = cls

    @classmethod
    def declarations(cls) -> dict[str, MetricDeclaration]:
        """The metrics a results file of this kind declares before any round: those it reports."""
        return {name: metric.declared for name, metric in cls.metrics.items() if not metric.retired}

    @classmethod
    def default_options(cls, command: str | None = None) -> SuiteOptions | None:
        """The built-in suite's options where the config has no entry of its name: the defaults,
        or None where some option has none (`needs` says which). ``command``: the command line's
        ``--command``, for a kind that takes one."""
        try:
            return cls.options.model_validate({"kind": cls.name})
        except ValidationError:
            return None

    @classmethod
    def needs(cls) -> str:
        """What the built-in suite needs where `default_options` has none, in the user's words."""
        required = [
            name for name, field in cls.options.model_fields.items() if field.is_required() and name != "kind"
        ]
        return f"bench.suites.{cls.name} in the config ({', '.join(required)})"


KINDS: dict[str, type[SuiteKind]] = {}  # by name, as the kinds' modules register them
