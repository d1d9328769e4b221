"""The interface every suite implements: commands to run per round, and how to read their metrics.

A suite's class is the runner's half of its kind (``class VerifyStepBench(BuiltInSuite,
kind="verify-step")``): it is registered in `RUNNERS` under the kind's name, which must be a kind
of `bot.core.config.suite_kinds`, the core's half (options, metrics, built-in or not).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from bot.core.config import suite_kinds
from bot.core.config.suite_kinds.base import MetricDeclaration, SuiteKind
from bot.core.formats.base import too_large
from bot.core.judge.kineto import Traced
from bot.core.judge.profile import Profile

PROFILE_DIR = "profile"  # the folder of a profiled pass's traces, inside its round folder


def trace_traced(context: RoundContext, what: str, prefer: str = "") -> Traced:
    """What the trace a profiled pass wrote under its ``profile/`` folder says: its profile and,
    where its Python calls (an engine's profiler with Python stacks) are functions of the side's
    worktree, the per-step map's entries (`bot.runner.trace_map`)."""
    from ..trace_map import read_traced
    from ..traces import TraceUnreadable, find

    try:
        return read_traced(find(context.out_dir / PROFILE_DIR, prefer), context.worktree, what)
    except TraceUnreadable as error:
        raise RoundFailed(f"profile: {error}") from None


class SuiteError(ValueError):
    """A suite that cannot be used as named or configured (unknown name, missing option)."""


class RoundFailed(Exception):
    """A round whose output cannot be trusted: the message says why, in one line."""


@dataclass(frozen=True)
class Command:
    """One process of a round: argv, extra environment, and a short name for messages."""

    name: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Output:
    """What one command left behind: how it ended and the tail of its output. ``returncode`` is its
    exit status (negative: the signal that killed it), None where it did not end by itself: it ran
    past the deadline and was killed (`timed_out`)."""

    name: str
    returncode: int | None
    stdout: str
    stderr: str

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    @property
    def ok(self) -> bool:
        return self.returncode == 0


RoundKind = Literal["warmup", "counted", "profiled", "worker"]
# What the profiled pass's processes see as PERFBOT_ROUND (docs/runner.md): no round's number.
PROFILED_ROUND = -100


@dataclass(frozen=True)
class RoundId:
    """Which round a context is for: a warm-up (``number``: the run's warm-ups of both sides in
    order, from 1), a counted round (``number``: its index in the results file, from 0), the
    profiled pass, or the start of a worker (which then serves rounds, each with its own context)."""

    kind: RoundKind
    number: int = 0

    def __post_init__(self) -> None:
        if self.number < (1 if self.kind == "warmup" else 0):
            raise ValueError(f"a {self.kind} round numbered {self.number}")

    @property
    def variable(self) -> str:
        """``PERFBOT_ROUND`` of its processes: a counted round's number, a warm-up's negated
        (-1, -2, ...), `PROFILED_ROUND` for the profiled pass; -1 for a worker, as ever."""
        if self.kind == "counted":
            return str(self.number)
        if self.kind == "warmup":
            return str(-self.number)
        return str(PROFILED_ROUND) if self.kind == "profiled" else "-1"

    @property
    def label(self) -> str:
        """How its folder's name starts after the side's: ``3``, ``warmup1``, ``profile``, ``worker``."""
        if self.kind == "counted":
            return str(self.number)
        if self.kind == "warmup":
            return f"warmup{self.number}"
        return "profile" if self.kind == "profiled" else "worker"


PROFILED_PASS = RoundId("profiled")
WORKER_START = RoundId("worker")


@dataclass(frozen=True)
class RoundContext:
    """Where a round runs and writes: the revision's worktree and a fresh folder of its own, and
    which round it is; and what its processes may read but not change, where their scope can see to
    it (the other side's worktree, perfbot's own files: `bot.runner.integrity.fenced`)."""

    worktree: Path
    out_dir: Path
    side: str
    round: RoundId
    read_only: tuple[Path, ...] = ()
    # A worker's or spare's start only, for a suite that is `Suite.gated`: a file that the run
    # creates once it has walked the engine's import path after the set-up, which the process
    # waits for before it runs any of the repository's code.
    gate: Path | None = None


@dataclass
class Measurement:
    """The numbers one round produced, with the declarations of any metric not known up front (or
    known better now: the mode the engine ran in) and, where the benchmark timed many calls, each
    value's standard error and call count (``{name: {"se": ..., "calls": ...}}``)."""

    values: dict[str, float]
    declarations: dict[str, MetricDeclaration] = field(default_factory=dict)
    spread: dict[str, dict[str, float]] = field(default_factory=dict)


class Suite(ABC):
    """A benchmark adapter. Rounds run in fresh processes; the suite never keeps state between them."""

    KIND: ClassVar[type[SuiteKind]]  # the core's half of the kind this class runs
    name: str
    timeout: float | None = None
    python: str | None = None  # the engine's interpreter, which its processes run
    pass_env: tuple[str, ...] = ()  # the config's additions to the allow-listed environment
    needs_torch: bool = False  # its rounds import torch: `perfbot bench run` refuses an interpreter without
    # Its workers and spares wait at `RoundContext.gate` before they run any of the repository's
    # code: they may start before the engine's import path is walked after the set-up.
    gated: bool = False

    def __init_subclass__(cls, kind: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if kind is None:
            return  # a base of other suites
        core = suite_kinds.get(kind)
        if core is None:
            raise TypeError(
                f"{cls.__qualname__} runs suite kind {kind!r}, which bot.core.config.suite_kinds "
                f"does not know"
            )
        if kind in RUNNERS:
            raise TypeError(
                f"suite kind {kind!r} has two runners ({RUNNERS[kind].__qualname__}, {cls.__qualname__})"
            )
        cls.KIND = core
        RUNNERS[kind] = cls

    def __init__(self, name: str, config: Any):
        """A suite called ``name``, set up from its options (``config``: its kind's options model)."""
        self.name, self.config, self.timeout, self.profile = name, config, config.timeout, config.profile

    @property
    @abstractmethod
    def metrics(self) -> dict[str, MetricDeclaration]:
        """Metrics declared up front (a command suite may report more)."""

    def judging(self) -> dict[str, Any]:
        """How the comparison of this suite's results is to be judged beyond the defaults, recorded
        in the results file's ``options`` (default: nothing)."""
        return {}

    def setup_commands(self, worktree: Path) -> list[Command]:
        """Commands to run once per revision's worktree before any round (default: none)."""
        return []

    @abstractmethod
    def round_commands(self, context: RoundContext) -> list[Command]:
        """The processes of one round, run in order, in the worktree."""

    @abstractmethod
    def parse(self, context: RoundContext, outputs: list[Output]) -> Measurement:
        """The round's metrics, or `RoundFailed` saying why the output cannot be used."""

    # -- the profiled pass: one per side, after the timed rounds, never timed

    profile: bool | None = None  # the config's `profile`: on, off, or None for `profiles_by_default`

    def profiles(self, gpus: Callable[[], bool]) -> bool:
        """Whether this run profiles: as the config says, else `profiles_by_default`; ``gpus``
        (whether the machine has one) is asked only then (nvidia-smi takes a while)."""
        return self.profile if self.profile is not None else self.profiles_by_default(gpus())

    def profiles_by_default(self, gpus: bool) -> bool:
        """Profile without being asked (``gpus``: the machine's fingerprint saw a GPU)? Only where a
        profiler is known to be there; a suite that cannot profile never does."""
        return False

    def profile_commands(self, context: RoundContext) -> list[Command]:
        """The processes of the profiled pass (a suite that can profile says how)."""
        raise RoundFailed(f"suite {self.name!r} cannot profile")

    def parse_profile(self, context: RoundContext, outputs: list[Output]) -> Profile:
        """The profile the pass left behind, or `RoundFailed` saying why there is none."""
        raise RoundFailed(f"suite {self.name!r} cannot profile")

    def parse_traced(self, context: RoundContext, outputs: list[Output]) -> Traced:
        """The profile and, where the pass recorded the repository's frames, the per-step map's
        entries; a suite whose trace names no frame has the profile only."""
        return Traced(self.parse_profile(context, outputs))

    # -- a long-lived worker per side (`bot.runner.workers`), for suites that can serve rounds

    def worker_command(self, context: RoundContext) -> Command | None:
        """The process that serves this side's rounds, or None: every round a fresh process."""
        return None

    def spare_command(self, context: RoundContext, profiler: bool = False) -> Command | None:
        """A process for one fresh round, started ahead of it: set up (interpreter, libraries,
        device) as a fresh round's process is when its round begins, then serving one request as
        a worker does, with no warm-up (its `worker_ready` file written once set up); None where the
        suite has none (its fresh rounds then pay their start-up). With ``profiler``: one for the
        profiled pass instead, its profiler's one-time set-up done before it says it is ready."""
        return None

    def worker_request(self, context: RoundContext) -> tuple[dict, Path]:
        """What to send a worker for one round, and the file whose appearance says it is done."""
        raise RoundFailed(f"suite {self.name!r} has no worker")

    def worker_ready(self, context: RoundContext) -> Path | None:
        """The file whose appearance says the worker started for ``context`` (of `WORKER_START`) has
        warmed up (built and captured what a round builds, untimed) and waits for requests; None
        where its worker says nothing before its first round (which then pays its start-up)."""
        return None

    def worker_profile_request(self, context: RoundContext) -> tuple[dict, Path] | None:
        """What to send a worker for the profiled pass (``context``: of `PROFILED_PASS`), and the
        file whose appearance says it is done; None where its worker cannot profile (the pass then
        runs in fresh processes)."""
        return None

    def round_seconds(self, context: RoundContext) -> dict[str, float]:
        """Where the round's own time went, as its process reported it (interpreter start, model
        build, capture, ...: the keys are the suite's); empty where it says nothing."""
        return {}


def read_result(path: Path, name: str) -> str:
    """The text of a file a benchmark wrote for the round to read: `RoundFailed` in one line where
    it is over the size a result file may be (`bot.core.formats.base.MAX_FILE_BYTES`), before a
    byte of it is read."""
    refused = too_large(path.stat().st_size, name)
    if refused is not None:
        raise RoundFailed(str(refused))
    return path.read_text(errors="replace")


def finite(name: str, value: object) -> float:
    """``value`` as a finite float >= 0, or `RoundFailed` naming the metric."""
    if isinstance(value, bool):
        raise RoundFailed(f"metric {name!r}: {value!r} is not a number")
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise RoundFailed(f"metric {name!r}: {str(value)[:60]!r} is not a number") from None
    if not math.isfinite(number) or number < 0:
        # Times, rates and lengths: the results contract takes finite numbers >= 0 only.
        raise RoundFailed(f"metric {name!r}: {number} is not a finite number >= 0")
    return number


class BuiltInSuite(Suite):
    """A suite whose metrics are fixed by the benchmark it runs (its kind's), set up from its config."""

    def __init__(self, name: str, config: Any):
        super().__init__(name, config)
        self.python = config.python

    @property
    def metrics(self) -> dict[str, MetricDeclaration]:
        return self.KIND.declarations()


RUNNERS: dict[str, type[Suite]] = {}  # the runner's half of every kind, by name, as its module registers it
