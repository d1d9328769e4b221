"""Run one round of a suite: its commands as fresh processes under one deadline, then parse them.

Every process runs in a scope of its own (`bot.runner.scope`: a PID namespace where the machine
allows one), so a timeout kills it with everything it started (the ranks of a tensor-parallel
benchmark included), and nothing it started outlives it, even a process that left its session;
where the scope has mounts of its own, what the round's context names read-only is read-only to it.
Output goes to files in the round's folder, never to a pipe that a chatty benchmark could fill.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bot.core.config.schema import MetricDeclaration

from .environment import benchmark_env
from .scope import Scope, strategy
from .suites.base import Command, Output, RoundContext, RoundFailed, Suite
from .suites.verify_step_workload import SAFE_ENV

OUTPUT_LIMIT = 8 * 2**20  # bytes of each stream read back for parsing


@dataclass
class RoundResult:
    ok: bool
    error: str | None
    metrics: dict[str, float] = field(default_factory=dict)
    declarations: dict[str, MetricDeclaration] = field(default_factory=dict)
    seconds: float = 0.0
    spread: dict[str, dict[str, float]] = field(default_factory=dict)


def child_env(
    extra: dict[str, str],
    context: RoundContext | None = None,
    python: str | None = None,
    passed: Iterable[str] = (),
) -> dict[str, str]:
    """The environment of a suite's process: the allow-listed part of ours (`environment`), NVLink
    multicast kept off, the engine's interpreter first on ``PATH``, the suite's additions."""
    env = benchmark_env(passed)
    for key, value in SAFE_ENV.items():
        env.setdefault(key, value)
    if python is not None:
        # A command suite's `python` is the engine's, as if its environment were activated.
        env["PATH"] = os.pathsep.join(filter(None, [os.path.dirname(python), env.get("PATH")]))
        env["PERFBOT_PYTHON"] = python
    if context is not None:
        env.update(
            PERFBOT_SIDE=context.side,
            PERFBOT_ROUND=context.round.variable,
            PERFBOT_OUT_DIR=str(context.out_dir),
            PERFBOT_WORKTREE=str(context.worktree),
        )
    for key, value in extra.items():
        if key == "PYTHONPATH" and env.get("PYTHONPATH"):
            value = os.pathsep.join([value, env["PYTHONPATH"]])
        env[key] = value
    return env


def run_round(suite: Suite, context: RoundContext, timeout: float) -> RoundResult:
    """One round: ok only if every command exited 0 and the suite could read finite metrics."""
    began = time.monotonic()
    try:
        return parsed(suite, context, run_pass(suite, suite.round_commands, context, timeout), began)
    except RoundFailed as failure:
        return RoundResult(False, str(failure), seconds=time.monotonic() - began)
    except OSError as error:
        return RoundResult(False, could_not_start(error), seconds=time.monotonic() - began)


def run_pass(
    suite: Suite, commands: Callable[[RoundContext], list[Command]], context: RoundContext, timeout: float
) -> list[Output]:
    """The processes ``commands`` names for ``context`` (a round's, or the profiled pass's), run in
    order in its worktree under one deadline: their outputs, or `RoundFailed` naming the first
    that did not exit 0 (`OSError` where one could not start)."""
    deadline = time.monotonic() + timeout
    context.out_dir.mkdir(parents=True, exist_ok=True)
    outputs = []
    for number, command in enumerate(commands(context)):
        env = child_env(command.env, context, suite.python, suite.pass_env)
        output = run_command(
            command,
            context.worktree,
            env,
            deadline,
            context.out_dir / f"{number}-{command.name}",
            context.read_only,
        )
        outputs.append(output)
        if not output.ok:
            raise RoundFailed(describe_failure(output, timeout))
    return outputs


def could_not_start(error: OSError) -> str:
    return f"could not start the benchmark: {error}"


def parsed(suite: Suite, context: RoundContext, outputs: list[Output], began: float) -> RoundResult:
    """The round's result from what its processes (or its worker) left: ok only if the suite reads
    metrics from it, and at least one; ``began``: when the round started (`time.monotonic`)."""
    try:
        measurement = suite.parse(context, outputs)
    except RoundFailed as failure:
        return RoundResult(False, str(failure), seconds=time.monotonic() - began)
    if not measurement.values:
        return RoundResult(False, "the suite reported no metrics", seconds=time.monotonic() - began)
    return RoundResult(
        True, None, measurement.values, measurement.declarations, time.monotonic() - began, measurement.spread
    )


def run_command(
    command: Command,
    cwd: Path,
    env: dict[str, str],
    deadline: float,
    log_stem: Path,
    read_only: tuple[Path, ...] = (),
) -> Output:
    """Run one process until it exits or the deadline passes, then end its scope: whatever it
    started, in whatever session, is killed before this returns. ``read_only``: folders it may
    not change, where its scope can see to it."""
    stdout_path, stderr_path = log_stem.with_suffix(".stdout"), log_stem.with_suffix(".stderr")
    scope = Scope(strategy())
    returncode: int | None
    with stdout_path.open("wb") as stdout, stderr_path.open("wb") as stderr:
        process = scope.popen(command.argv, cwd, env, stdout, stderr, read_only=read_only)
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            scope.end()
            returncode = None  # it did not end by itself: `Output.timed_out`
        except BaseException:  # interrupted (SIGTERM of a cancelled job): leave nothing running
            scope.end()
            raise
        else:
            scope.end()  # leftovers of a process that exited (daemons, stuck ranks, setsid escapes)
            returncode = scope.returncode()
    return Output(command.name, returncode, read_text(stdout_path), read_text(stderr_path))


def read_text(path: Path) -> str:
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(size - OUTPUT_LIMIT, 0))
        return handle.read().decode(errors="replace")


def describe_failure(output: Output, timeout: float) -> str:
    if output.returncode is None:  # timed out
        return f"{output.name}: timed out after {timeout:g}s and was killed"
    last = last_line(output.stderr) or last_line(output.stdout)
    return f"{output.name}: {how_it_ended(output.returncode)}" + (f": {last}" if last else "")


def how_it_ended(returncode: int) -> str:
    """A process's end as `subprocess` reports it (negative: the signal that killed it), in words."""
    if returncode >= 0:
        return f"exit status {returncode}"
    if -returncode in signal.valid_signals():
        return f"killed by signal {signal.Signals(-returncode).name}"
    return f"exit {returncode}"


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
