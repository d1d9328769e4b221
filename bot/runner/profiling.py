"""The profiled pass of `perfbot bench run`: after the timed rounds, one un-timed run per side under
a profiler, whose trace becomes that side's kernel profile in the results file.

It runs as a round does (`rounds.run_pass`: the same allow-listed environment, the same deadline and
the same way of killing what it started), or, where the side's worker is alive and the suite's
worker can profile (`Suite.worker_profile_request`), in that worker after its last timed round (no
process start of its own; the worker times nothing afterwards). Either way it comes after the timed
rounds, so profiling changes nothing about how they ran and never touches their numbers; a pass
that fails leaves its side without a profile and says why, and the verdict is unaffected. Where
the pass recorded the repository's frames, it also gives the per-step map of its commit
(`bot.core.stepmap`), with the lines that ran in the measured steps where the workload recorded
them (`step_lines`); a record that is unfit is left out and the map stands without lines.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from bot.core import stepmap
from bot.core.judge.kineto import Traced
from bot.core.judge.profile import Profile
from bot.core.stepmap import StepMap

from . import step_lines
from .rounds import could_not_start, run_pass
from .suites.base import Output, RoundContext, RoundFailed, Suite
from .workers import Worker


@dataclass
class ProfileOutcome:
    profile: Profile | None
    error: str | None
    seconds: float
    step_map: StepMap | None = None
    where: str = "fresh process"


def profile_side(
    suite: Suite, context: RoundContext, timeout: float, commit: str = "", worker: Worker | None = None
) -> ProfileOutcome:
    """One side's profiled pass (``context``: of `PROFILED_PASS`): its profile, or why there is none,
    and the per-step map of ``commit`` where the pass recorded the repository's frames. In
    ``worker`` where given and its suite's worker can profile, else in fresh processes."""
    served = serve_pass(suite, context, timeout, worker)
    return served if isinstance(served, ProfileOutcome) else read_pass(suite, context, served, commit)


@dataclass
class ServedPass:
    """A profiled pass that ran (`serve_pass`), its trace not read yet (`read_pass`)."""

    outputs: list[Output]
    where: str
    began: float


def serve_pass(
    suite: Suite, context: RoundContext, timeout: float, worker: Worker | None = None
) -> ServedPass | ProfileOutcome:
    """Run one side's profiled pass: what it left to read, or (a `ProfileOutcome` without a profile)
    why it failed. Reading its trace is left to `read_pass`, which may run beside the next pass:
    it takes the CPU only, while a pass is the GPU's."""
    began = time.monotonic()
    where = "fresh process"
    try:
        served = worker.profile(context, timeout) if worker is not None else None
        if served is None:
            outputs = run_pass(suite, suite.profile_commands, context, timeout)
        else:
            where = "in the worker"  # where it ran, whether or not it succeeded
            if not served.ok:
                raise RoundFailed(served.error or "the worker's profiled pass failed")
            outputs = [Output(suite.name, 0, "", "")]
    except RoundFailed as failure:
        return ProfileOutcome(None, str(failure), time.monotonic() - began, where=where)
    except OSError as error:
        return ProfileOutcome(None, could_not_start(error), time.monotonic() - began, where=where)
    return ServedPass(outputs, where, began)


def read_pass(suite: Suite, context: RoundContext, served: ServedPass, commit: str = "") -> ProfileOutcome:
    """The profile (and per-step map of ``commit``) of the pass `serve_pass` ran, or why it has none."""
    try:
        traced: Traced = suite.parse_traced(context, served.outputs)
    except RoundFailed as failure:
        return ProfileOutcome(None, str(failure), time.monotonic() - served.began, where=served.where)
    except OSError as error:
        return ProfileOutcome(
            None, could_not_start(error), time.monotonic() - served.began, where=served.where
        )
    mapped = traced.step_map(commit, suite.name)
    if mapped is not None:
        mapped = with_recorded_lines(mapped, context)
    return ProfileOutcome(traced.profile, None, time.monotonic() - served.began, mapped, served.where)


def with_recorded_lines(mapped: StepMap, context: RoundContext) -> StepMap:
    """``mapped`` with the lines the workload recorded in the pass's folder, where it did and the
    record is fit; else ``mapped`` as it is."""
    recorded = step_lines.read(context.out_dir)
    if recorded is None:
        return mapped
    try:
        return stepmap.with_lines(mapped, recorded)
    except stepmap.StepMapError:
        return mapped
