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

Both sides' workers start at once (`start`, then `wait_ready`): where the suite's worker says when it
has warmed up (`Suite.worker_ready`: built and captured what a round does, untimed), that start is
the side's warm-up. After the timed rounds the worker can run the profiled pass too
(`Suite.worker_profile_request`); a worker that profiled never times a round again.

A spare (`Worker.start` with ``spare``) is a process for one fresh round, started beside the
workers before any round (`Suite.spare_command`): set up as a fresh round's process is, with no
warm-up, it serves that one round and nothing else, so the round is still a process of its own (a
new context, communicator, allocator and capture), and its interpreter and libraries start while
no round is timed instead of inside the round's turn. A profiler spare (``profiler``) serves the
side's profiled pass instead, its profiler set up as it started, and times nothing: started only for
a side whose worker must not profile (one kept across runs) or that has none; a side's own worker,
warm, serves the pass otherwise (`bench.profiles_in_worker`).

`Kept` holds workers beyond one run: a bisection keeps GOOD's for every run against GOOD. A kept
worker is lent to a run only while GOOD's tree is exactly as it was when the worker last served
(`Kept.lend`); one that died, or whose tree changed, ends the run that needed it (`WorkerLost`):
nothing is measured on a stale tree, and no side silently falls back to other processes.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .integrity import Manifest, changes, manifest, summary
from .rounds import RoundResult, child_env, how_it_ended, parsed, read_text
from .scope import Scope, strategy
from .suites.base import Output, RoundContext, Suite

_POLL = 0.02


class WorkerLost(RuntimeError):
    """A worker kept across runs died, or its tree changed since it last served: the run that
    needed it measures nothing more."""


class Worker:
    """One side's serving process."""

    def __init__(
        self,
        suite: Suite,
        process: subprocess.Popen,
        log: Path,
        scope: Scope,
        ready: Path | None = None,
        spare: bool = False,
        profiler: bool = False,
    ):
        self.suite, self.process, self.log, self.scope = suite, process, log, scope
        self.ready_file = ready
        self.spare = spare  # a fresh round's process started ahead: it serves one round, no more
        self.profiler = profiler  # a spare for the profiled pass (its profiler set up as it started)
        self.served = 0
        self.began = time.monotonic()
        self._began_wall = time.time()  # the ready file's mtime is on this clock
        self.ready_seconds: float | None = None  # from its start until it said it was ready
        self.profiled = False  # it ran the profiled pass: its process times nothing any more
        self.kept = False  # lent by `Kept`: the run that borrowed it does not stop it

    @classmethod
    def start(
        cls, suite: Suite, context: RoundContext, spare: bool = False, profiler: bool = False
    ) -> Worker | None:
        """A worker for ``context.side`` in ``context.worktree`` (with ``spare``: a spare; with
        ``profiler`` too, one for the profiled pass), or None where the suite has none. It starts and
        returns at once; `wait_ready` waits for it to have warmed up (a spare: to have set up)."""
        command = suite.spare_command(context, profiler) if spare else suite.worker_command(context)
        if command is None:
            return None
        log = context.out_dir / f"{command.name}.log"
        ready = suite.worker_ready(context)
        if ready is not None:
            ready.unlink(missing_ok=True)
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
        return cls(suite, process, log, scope, ready, spare, profiler)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    @property
    def warms(self) -> bool:
        """Whether its start includes the warm-up a first round would be (`Suite.worker_ready`)."""
        return self.ready_file is not None and not self.spare

    def wait_ready(self, timeout: float) -> str | None:
        """Wait until the worker says it has warmed up (at once where it says nothing): None, or why
        it is not ready (it exited, or ``timeout`` seconds passed: then it is stopped)."""
        if self.ready_file is None or self.ready_seconds is not None:
            return None
        while not self.ready_file.exists():
            if not self.alive:
                return self._why(f"the worker ended while starting ({self.ending()})")
            if time.monotonic() - self.began > timeout:
                self.stop()
                return self._why(f"the worker was not ready after {timeout:g}s and was killed")
            time.sleep(_POLL)
        self.ready_seconds = time.monotonic() - self.began
        with contextlib.suppress(OSError):
            # When it said so, not when this wait (which waits for the others in turn) looked.
            said = self.ready_file.stat().st_mtime - self._began_wall
            self.ready_seconds = min(self.ready_seconds, max(said, 0.0))
        return None

    def serve(self, context: RoundContext, timeout: float) -> RoundResult:
        """One round in this worker, judged as a fresh round is (`rounds.parsed`) from what it wrote."""
        if self.profiled:
            raise RuntimeError("a worker that profiled times no more rounds")
        if self.spare and self.served:
            raise RuntimeError("a spare serves one round")
        self.served += 1
        request, done = self.suite.worker_request(context)
        return self._ask(context, request, done, timeout, parse=True)

    def profile(self, context: RoundContext, timeout: float) -> RoundResult | None:
        """The profiled pass in this worker (``context``: of `PROFILED_PASS`), after its timed
        rounds: ok once the pass's report appeared (the suite reads the trace from the folder),
        else why not; None where the suite's worker cannot profile. The worker times nothing after."""
        asked = self.suite.worker_profile_request(context)
        if asked is None:
            return None
        self.profiled = True
        return self._ask(context, *asked, timeout, parse=False)

    def _ask(
        self, context: RoundContext, request: dict, done: Path, timeout: float, parse: bool
    ) -> RoundResult:
        began = time.monotonic()
        context.out_dir.mkdir(parents=True, exist_ok=True)
        if self.process.stdin is None:
            return self._failed("the worker has no standard input", began)
        try:
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
        except OSError:
            return self._failed("the worker had already exited", began)
        while not done.exists():
            if not self.alive:
                return self._failed(f"the worker ended ({self.ending()})", began)
            if time.monotonic() - began > timeout:
                self.stop()
                return self._failed(f"timed out after {timeout:g}s in the worker, which was killed", began)
            time.sleep(_POLL)
        if not parse:
            return RoundResult(True, None, seconds=time.monotonic() - began)
        return parsed(self.suite, context, [Output(self.suite.name, 0, "", "")], began)

    def ending(self) -> str:
        """How the worker, which is no longer alive, ended. Under a PID namespace the process perfbot
        waits for is unshare's, whose status says only that the namespace's init ended well; the
        worker's own is what the init reported, read once its scope has ended."""
        self.scope.end()
        try:
            code = self.scope.returncode()
        except (OSError, RuntimeError):  # the init could not start it: what unshare says is all there is
            code = self.process.returncode
        return how_it_ended(code)

    def _why(self, what: str) -> str:
        try:
            log = read_text(self.log)
        except OSError:
            log = ""
        tail = [line.strip() for line in log.splitlines() if line.strip()]
        return f"{self.suite.name}: {what}" + (f": {tail[-1][:300]}" if tail else "")

    def _failed(self, why: str, began: float) -> RoundResult:
        return RoundResult(False, self._why(why), seconds=time.monotonic() - began)

    def ask_to_stop(self) -> None:
        """Tell the worker to finish, without waiting: its input is closed whether or not it was
        still alive, so a dead worker's pipe is not left open."""
        stdin = self.process.stdin
        if stdin is None or stdin.closed:
            return
        try:
            if self.alive:
                stdin.write(b"stop\n")
                stdin.flush()
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def stop(self) -> None:
        """Ask the worker to finish, then end whatever is left of its session."""
        self.ask_to_stop()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        self.scope.end()


def stop_all(workers: list[Worker]) -> None:
    """Stop ``workers``, all told at once so that they finish side by side."""
    for worker in workers:
        worker.ask_to_stop()
    for worker in workers:
        worker.stop()


@dataclass
class _Held:
    worker: Worker
    tree: Path
    sealed: Manifest  # the tree as it was when the worker last served


@dataclass
class Kept:
    """Workers kept beyond one run, by worktree (a bisection's GOOD), and what each tree held when
    its worker last served. The owner ends them (`stop_all`)."""

    root: Path | None = None  # where kept workers' folders (their logs) go; else the run's own
    held: dict[Path, _Held] = field(default_factory=dict)

    def lend(self, tree: Path) -> Worker | None:
        """The worker kept for ``tree``, to serve a run: None where none is kept (the run starts one
        and may `keep` it); `WorkerLost` where the kept one died or its tree changed since it last
        served (it is stopped and forgotten: the next run starts a new one)."""
        held = self.held.get(tree)
        if held is None:
            return None
        worker = held.worker
        if not worker.alive:
            del self.held[tree]
            worker.stop()
            raise WorkerLost(
                worker._why(
                    f"the worker kept for {tree.name} across runs died ({worker.ending()}) before "
                    f"this run; this run measures nothing"
                )
            )
        found = changes(held.sealed, manifest(tree))
        if found:
            del self.held[tree]
            worker.stop()
            raise WorkerLost(
                f"{tree.name}'s worktree changed since its kept worker last served: {summary(found)}; "
                f"the worker is stopped and this run measures nothing"
            )
        return worker

    def keep(self, tree: Path, worker: Worker) -> None:
        """Keep ``worker`` (alive, not profiled) for ``tree`` as the tree is now."""
        worker.kept = True
        self.held[tree] = _Held(worker, tree, manifest(tree))

    def release(self, tree: Path) -> None:
        """Forget and stop the worker kept for ``tree``, if any."""
        held = self.held.pop(tree, None)
        if held is not None:
            held.worker.stop()

    def stop_all(self) -> None:
        for tree in list(self.held):
            self.release(tree)
