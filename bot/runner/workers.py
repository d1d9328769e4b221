"""Long-lived benchmark workers: one process per side that serves rounds on request, for suites that
can (`Suite.worker_command`), so that a round pays for its measurement and not for a process start.

A worker starts in a scope of its own (`bot.runner.scope`, as every benchmark command does: a PID
namespace where the machine allows one, so that nothing it starts outlives it) in the side's
worktree, with the environment and read-only folders a round gets (`rounds.child_env`,
`RoundContext.read_only`), and reads one JSON request per
round on standard input; a round is done when the suite's output file appears (so a worker writes it
aside and renames it into place: a file written in place can be read before its content), and failed when the
worker exits or the round's deadline passes (the whole scope is ended, and the side's later rounds
run in fresh processes again; so do all of them where the worker cannot start). What a
worker cannot see, every fresh round still does: process start-up, a new CUDA context and
communicator; `bench` runs the first pair and the pair that completes the minimum in fresh
processes for that reason.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from pathlib import Path

from .rounds import RoundResult, child_env, parsed, read_text
from .scope import Scope, strategy
from .suites.base import Output, RoundContext, Suite

_POLL = 0.02


class Worker:
    """One side's serving process."""

    def __init__(self, suite: Suite, process: subprocess.Popen, log: Path, scope: Scope):
        self.suite, self.process, self.log, self.scope = suite, process, log, scope

    @classmethod
    def start(cls, suite: Suite, context: RoundContext) -> Worker | None:
        """A worker for ``context.side`` in ``context.worktree``, or None where the suite has none."""
        command = suite.worker_command(context)
        if command is None:
            return None
        log = context.out_dir / f"{command.name}.log"
        scope = Scope(strategy())
        with log.open("wb") as output:
            process = scope.popen(
                command.argv,
                context.worktree,
                child_env(command.env, context, suite.python, suite.pass_env),
                output,
                output,
                stdin=subprocess.PIPE,
                read_only=context.read_only,
            )
        return cls(suite, process, log, scope)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def serve(self, context: RoundContext, timeout: float) -> RoundResult:
        """One round in this worker, judged as a fresh round is (`rounds.parsed`) from what it wrote."""
        began = time.monotonic()
        context.out_dir.mkdir(parents=True, exist_ok=True)
        request, done = self.suite.worker_request(context)
        if self.process.stdin is None:
            return self._failed("the worker has no standard input", began)
        try:
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
        except OSError:
            return self._failed("the worker had already exited", began)
        while not done.exists():
            if not self.alive:
                return self._failed(f"the worker exited with status {self.process.returncode}", began)
            if time.monotonic() - began > timeout:
                self.stop()
                return self._failed(f"timed out after {timeout:g}s in the worker, which was killed", began)
            time.sleep(_POLL)
        return parsed(self.suite, context, [Output(self.suite.name, 0, "", "")], began)

    def _failed(self, why: str, began: float) -> RoundResult:
        tail = [line.strip() for line in read_text(self.log).splitlines() if line.strip()]
        return RoundResult(
            False,
            f"{self.suite.name}: {why}" + (f": {tail[-1][:300]}" if tail else ""),
            seconds=time.monotonic() - began,
        )

    def stop(self) -> None:
        """Ask the worker to finish, then end whatever is left of its session. Its input is closed
        whether or not it was still alive, so a dead worker's pipe is not left open."""
        stdin = self.process.stdin
        try:
            try:
                if stdin is not None and self.alive:
                    stdin.write(b"stop\n")
                    stdin.flush()
            finally:
                if stdin is not None:
                    with contextlib.suppress(OSError):
                        stdin.close()
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.scope.end()
