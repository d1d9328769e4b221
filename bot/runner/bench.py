"""`perfbot bench run` orchestration: worktrees, set-up, warm-ups, ABBA rounds, fingerprints, results.

The flow for each suite: take the machine's fingerprint (beside checking out base and head as
worktrees, and beside the first suite's processes starting: `Fingerprint`), run the suite's set-up
in each, start both sides' workers at once where the suite has them (`workers`; a worker that warms
up as it starts, building and capturing what a round does, is its side's first warm-up) and beside
them the spares (`Spares`: a process for each fresh round, and for a profiled pass that the side's
worker does not serve, set up ahead of its one use), run the warm-up rounds (not counted), then
counted rounds in ABBA pairs until `adaptive.should_continue` says stop, each round a fresh process
(a spare where there is one) or a worker's under a timeout, and last, where the suite profiles
(`Suite.profiles`), one un-timed profiled pass per side (`profiling`), in the side's worker where it
can (warm, its timed rounds done), else in the side's profiler spare (a worker kept across runs is
never profiled). The results file is rewritten after every round, so an interrupted run still leaves
what it measured, and records where the seconds went (`timeline`).

A caller can keep a side's worker beyond the run (`workers.Kept`: a bisection keeps GOOD's for every
run against GOOD); such a worker serves a run only while its tree is as it last served, and one that
died ends the run that needed it (`WorkerLost`), which then measures nothing.

No side's processes may change what the other side runs (`integrity`): each gets the other's
worktree, and every round, worker and pass the engine's import path, read-only where its scope can;
before each of a side's set-ups, rounds and passes its tree is checked against what it held after
its last one, and the engine's import path after the set-ups, at the end and, where the scope
cannot make it read-only, before every round too. A change
ends the run: every round it measured is discarded, and the results file says why (``failed``).
A suite whose processes wait at a gate before they run the repository's code (`Suite.gated`) has
them started before the walk after the set-ups, which then runs beside their interpreter's and
torch's start; the gate opens once it is done (`open_gate`), so no code of either side runs before
the reference is taken. A walk that finds the import path listed as the last one did, byte for
byte, parses nothing (`integrity.walk`).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import ValidationError

from bot.adapters.git_repo import GitRepo
from bot.core.config.schema import BenchConfig
from bot.core.judge.results import SIDES, Revision, Side, problem
from bot.core.render import rounds as rounds_summary

from . import fingerprint, integrity, profiling, scope
from .integrity import Guard, TreeChanged
from .options import MeasureOptions
from .progress import Progress
from .results import ResultsFile, out_path
from .rounds import RoundResult, child_env, describe_failure, run_command, run_round
from .schedule import pair_order, warmup_order
from .suites import Suite, make_suite
from .suites.base import PROFILED_PASS, WORKER_START, RoundContext, RoundId
from .timeline import Timeline
from .timeline import markdown as timeline_markdown
from .workers import Kept, Worker, WorkerLost, stop_all
from .worktrees import Worktrees

if TYPE_CHECKING:
    from . import adaptive

# The adaptive rule judges with SciPy (about a second to import): imported aside while the run's
# processes start (`run_suite`), where `measure` needs it only once the rounds begin; not before
# they are started, whose start it would slow (one interpreter lock: 0.3 s on the H100 machine).
_ADAPTIVE = "bot.runner.adaptive"
GATE = "gate"  # created once the engine's import path is walked after the set-up (`open_gate`)
T = TypeVar("T")


class BenchError(ValueError):
    """A benchmark that cannot start as asked (dirty checkout, conflicting options)."""


@dataclass
class BenchOptions:
    base: str
    head: str | None
    suites: list[str]
    out: Path
    measure: MeasureOptions = field(default_factory=MeasureOptions)
    aa: bool = False
    stop_on_failure: bool = False
    repo_name: str | None = None
    summary_path: Path | None = None
    profile: bool | None = None  # None: as each suite's config says (`Suite.profiles`)
    written: dict[Path, str] = field(default_factory=dict)  # the results files' SHA-256, as written


@dataclass
class SuiteOutcome:
    suite: str
    path: Path
    status: str
    ok_rounds: int
    failed_rounds: int
    error: str | None = None
    tampered: bool = False  # a side's tree or the engine changed: nothing of the run is trusted
    lost: str | None = None  # a worker kept across runs died or went stale: nothing was measured


@dataclass
class Plan:
    """Resolved settings of one run: what `perfbot bench run` will do before it does anything."""

    repo: GitRepo
    base_sha: str
    head_sha: str
    suites: list[Suite]
    rounds: int
    warmup: int
    max_rounds: int
    timeout: float
    paths: dict[str, Path] = field(default_factory=dict)
    timeout_given: bool = False
    # An adaptive run's regression stops it only at the level at which one run stands for the
    # default branch (`adaptive`); a bisection's runs turn this off: a probe only steers the search.
    watch_level: bool = True

    def round_timeout(self, suite: Suite) -> float:
        """``--timeout`` if given, else the suite's own, else the config's default."""
        return self.timeout if self.timeout_given else suite.timeout or self.timeout


def round_limits(measure: MeasureOptions, config: BenchConfig) -> tuple[int, int]:
    """Rounds per side, and the most that adaptive rounds may reach: the command line's, else
    the config's (``bench.rounds``, ``bench.max_rounds``). A run and the significance level it is
    judged at must both read them here: a judgement that counted fewer looks than the run took
    would raise false alarms."""
    rounds = measure.rounds or config.rounds
    return rounds, max(measure.max_rounds or config.max_rounds or rounds, rounds)


def plan(options: BenchOptions, config: BenchConfig) -> Plan:
    """Check everything the user named (repository, revisions, suites, options); raise before running."""
    measure = options.measure
    repo = GitRepo.open(measure.repo)
    if repo.bare:
        raise BenchError(f"{measure.repo}: a bare repository has no work tree to benchmark from")
    if not measure.allow_dirty and repo.is_dirty(untracked_files=False):
        raise BenchError(
            f"{repo.work_tree}: the work tree has uncommitted changes "
            f"(commit or stash them, or pass --allow-dirty)"
        )
    base_sha = repo.resolve(options.base)
    if options.aa:
        if options.head and repo.resolve(options.head) != base_sha:
            raise BenchError("--aa benchmarks --base against itself; leave out --head")
        head_sha = base_sha
    elif not options.head:
        raise BenchError("--head is required (or --aa for a noise run of --base against itself)")
    else:
        head_sha = repo.resolve(options.head)
    if not options.suites:
        raise BenchError("name at least one --suite")
    try:
        scope.strategy()
    except scope.ScopeError as error:
        raise BenchError(str(error)) from None
    engine = interpreter(measure.python or config.python or DEFAULT_PYTHON)
    suites = [make_suite(name, config, measure.command, engine) for name in dict.fromkeys(options.suites)]
    for suite in suites:
        if suite.python and suite.python != engine:
            suite.python = interpreter(suite.python, f"suite '{suite.name}': ")
    rounds, max_rounds = round_limits(measure, config)
    warmup = config.warmup if measure.warmup is None else measure.warmup
    paths = {s.name: out_path(options.out, s.name, len(suites) > 1) for s in suites}
    return Plan(
        repo,
        base_sha,
        head_sha,
        suites,
        rounds,
        warmup,
        max_rounds,
        measure.timeout or config.timeout,
        paths,
        timeout_given=measure.timeout is not None,
    )


DEFAULT_PYTHON = "python3"


def interpreter(name: str, where: str = "") -> str:
    """``name`` as the path of an executable (looked up on ``PATH`` unless it has a slash).

    The engine's interpreter, not perfbot's: perfbot runs from a virtual environment of its own,
    and the benchmarks must see the engine's packages exactly as the engine does.
    """
    found = shutil.which(name)
    if found is None:
        raise BenchError(
            f"{where}{name}: no such interpreter (name the engine's with --python or bench.python)"
        )
    # Absolute, since rounds run in the worktrees; not resolved, so that a venv's python stays one.
    return os.path.abspath(found)


def run(
    options: BenchOptions,
    config: BenchConfig,
    progress: Progress,
    base_tree: Path | None = None,
    head_tree: Path | None = None,
    planned: Plan | None = None,
    kept: Kept | None = None,
    keep: Path | None = None,
    stacks: dict[str, dict] | None = None,
) -> list[SuiteOutcome]:
    """Benchmark every suite; the results files are written as rounds finish.

    ``base_tree`` / ``head_tree``: worktrees of ``options.base`` / ``options.head`` that the caller
    made and keeps (a bisection keeps GOOD's across runs, and checks each before and after its
    rounds); the sides it does not give are checked out here. ``planned``: `plan` of these
    ``options`` and ``config``, where the caller made it already (a bisection, for its suite).
    ``kept``: workers the caller keeps across runs; the worker of the side whose tree is ``keep``
    (one the caller gave) is taken from it, or started and left in it, for the next run.
    ``stacks``: the engine interpreter's packages as an earlier run of the caller's asked them
    (`fingerprint.machine`), filled here where empty.
    """
    timeline = Timeline()
    p = planned if planned is not None else plan(options, config)
    contained = scope.strategy()
    fenced = "; the other side's worktree and perfbot's files are read-only to it" * contained.read_only
    progress.say(
        f"fingerprinting the machine (base {p.base_sha[:10]}, head {p.head_sha[:10]}); every "
        f"benchmark process runs in a scope of its own: {contained.name}{fenced}"
    )
    outcomes = []
    # The fingerprint asks the engine's interpreter for its packages (it imports torch: seconds),
    # so it is taken beside the checkouts, the integrity manifests and the start of the first
    # suite's processes (`Fingerprint`).
    with ThreadPoolExecutor(2) as probes, Worktrees(p.repo) as scratch:
        gpus = probes.submit(fingerprint.nvidia_gpus)  # first: whether to start profiler spares
        machine = Fingerprint(probes.submit(_fingerprint, p.suites[0].python, stacks, gpus), gpus, p.suites)
        with timeline.phase("worktrees"):
            trees = {
                "base": base_tree or scratch.add("base", p.base_sha),
                "head": head_tree or scratch.add("head", p.head_sha),
            }
        with timeline.phase("integrity", detail="the import path and each tree's manifest"):
            guard = new_guard(p, trees, scratch.root)
        progress.say(
            f"each side's worktree is checked before every round; the engine's import path "
            f"({len(guard.shared)} folders) is read-only to the rounds and checked after the set-up "
            f"and at the end"
            if guard.shared_fenced
            else f"each side's worktree and the engine's import path ({len(guard.shared)} folders) are "
            f"checked before every round"
        )
        for suite in p.suites:
            outcome = run_suite(
                p, suite, guard, scratch.root, machine, options, progress, timeline.branch(), kept, keep
            )
            outcomes.append(outcome)
            if outcome.tampered or outcome.lost or (options.stop_on_failure and outcome.failed_rounds):
                break
    return outcomes


def _fingerprint(
    python: str | None, stacks: dict[str, dict] | None, gpus: Future[list[dict]]
) -> tuple[dict, float]:
    """The machine's fingerprint (its GPUs as ``gpus`` found them), and when it was done
    (`time.monotonic`)."""
    return fingerprint.machine(python, stacks, gpus.result()), time.monotonic()


class Fingerprint:
    """The machine's fingerprint, taken aside (``taken``) while the run goes on: waited for only
    where it is needed (`get`: a suite's results file; the first time, every suite's interpreter
    is checked for torch, `check_torch`), and recorded once in each suite's timeline."""

    def __init__(self, taken: Future[tuple[dict, float]], gpus: Future[list[dict]], suites: list[Suite]):
        self.taken, self._gpus, self.suites = taken, gpus, suites
        self.began = time.monotonic()
        self._machine: dict | None = None
        self._done = 0.0

    def get(self, timeline: Timeline | None = None) -> dict:
        if self._machine is None:
            machine, self._done = self.taken.result()
            check_torch(self.suites, machine)
            self._machine = machine
        if timeline is not None and not any(p.name == "fingerprint" for p in timeline.phases):
            timeline.add("fingerprint", self.began, ended=self._done)
        return self._machine

    def gpus(self) -> bool:
        """Whether the machine has a GPU, without waiting for the rest of the fingerprint (the
        fingerprint records the same answer)."""
        return bool(self._gpus.result())


def new_guard(p: Plan, trees: dict[str, Path], scratch: Path) -> Guard:
    """The run's `Guard`: the two worktrees, and every folder the suites' interpreters import
    from (asked with the rounds' environment); perfbot's own files are read-only to every round."""
    engine: set[Path] = set()
    for suite in p.suites:
        if suite.python:
            env = child_env({}, None, suite.python, suite.pass_env)
            engine.update(integrity.import_path(suite.python, env, [*trees.values(), scratch]))
    own = integrity.perfbot_files(engine)
    kept = [*trees.values(), scratch]
    return Guard(
        trees,
        sorted(engine),
        fences=[path for path in own if not integrity.holds(path, kept)],
        shared_fenced=scope.strategy().read_only,
    )


def check_torch(suites: list[Suite], machine: dict) -> None:
    """Refuse at once a suite that runs torch (`Suite.needs_torch`) in an interpreter without it,
    instead of failing every round; ``machine``: the fingerprint, which asked the first suite's
    interpreter already. ``suites``: as `plan` made them, each with its interpreter."""
    for suite in suites:
        if not suite.needs_torch:
            continue
        python = suite.python or "python3"  # `plan` gives every suite one; else what its commands run
        stack = machine if suite.python == suites[0].python else fingerprint.python_stack(python)
        if "torch" not in stack:
            why = stack.get("torch_error") or "it did not answer perfbot's probe"
            raise BenchError(
                f"{python}: this interpreter cannot import torch ({why}), and suite "
                f"'{suite.name}' runs torch: name the engine's interpreter with --python (the "
                f"action's engine-python) or bench.python"
            )


def run_suite(
    p: Plan,
    suite: Suite,
    guard: Guard,
    scratch: Path,
    machine: Fingerprint,
    options: BenchOptions,
    progress: Progress,
    timeline: Timeline | None = None,
    kept: Kept | None = None,
    keep: Path | None = None,
) -> SuiteOutcome:
    """One suite's set-up, warm-ups and rounds; ``scratch``: this run's folder for their outputs.
    Its processes start before the machine's fingerprint is waited for (the results file records
    it), and no round begins before both are done."""
    timeline = timeline if timeline is not None else Timeline()
    workers: dict[str, Worker | None] = {}
    spares = Spares(profiles=options.profile if options.profile is not None else suite.profiles(machine.gpus))
    results: ResultsFile | None = None
    reads: ProfileReads | None = None
    clocks: Future[dict] | None = None
    tampered = lost = None
    try:
        # A gated suite's processes start before the engine's import path is walked after the
        # set-up (seconds of torch's import beside the walk), and wait at the gate before they run
        # the repository's code (`open_gate`).
        gate = scratch / "workers" / suite.name / GATE if suite.gated and scope.strategy().read_only else None
        stopped = set_up(suite, guard, scratch, p.round_timeout(suite), progress, timeline, gate is None)
        launched = not stopped and launch_workers(
            p, suite, guard, scratch, progress, workers, timeline, kept, keep, spares, gate
        )
        if gate is not None and not stopped:
            open_gate(guard, gate, timeline)
        aside(partial(importlib.import_module, _ADAPTIVE))  # once the processes are on their way
        results = new_results(p, suite, machine.get(timeline), options, timeline)
        if launched:
            wait_for_workers(p, suite, guard, progress, workers, timeline, spares)
        stopped = (
            stopped
            or warm_up(p, suite, guard, scratch, results, options, progress, workers, timeline)
            or measure(p, suite, guard, scratch, results, options, progress, workers, timeline, spares)
        )
        if not stopped and any(r.ok for r in results.rounds) and spares.profiles:
            reads = profile(p, suite, guard, scratch, results, progress, workers, timeline, spares)
        # Every process this run has done with ends while the engine is walked and the profiles are
        # read: the spares (each served its one use) and the workers but the one the caller keeps.
        # The GPUs' clocks after the rounds are asked meanwhile (nvidia-smi takes a while).
        clocks = aside(fingerprint.clocks)
        for process in [*spares.all(), *leaving(workers, guard, kept, keep)]:
            process.ask_to_stop()
        guard.check_shared()  # what the last round left in the engine, before this suite's verdict
        if reads is not None:
            reads.collect()
    except TreeChanged as error:
        tampered = str(error)
        progress.say(f"{suite.name}: {tampered}")
    except WorkerLost as error:
        lost = str(error)
        progress.say(f"{suite.name}: {lost}")
    except KeyboardInterrupt:
        if results is not None:
            finish(results, "stopped", "interrupted before the rounds were done")
        raise
    finally:
        if reads is not None:
            reads.close()
        trusted = not (tampered or lost)
        stop_workers(workers, guard, kept, keep if trusted else None, spares.all())
        if kept is not None and not trusted:
            kept.stop_all()
    if results is None:  # the set-up or a kept worker ended the suite before the file was begun
        results = new_results(p, suite, machine.get(timeline), options, timeline)
    began = time.monotonic()
    if tampered or lost:
        why = tampered or lost or ""
        results.discard(why)
        finish(results, "failed", why, clocks)
    elif stopped:
        finish(results, "stopped", stopped, clocks)
    elif not any(r.ok for r in results.rounds):
        last = results.rounds[-1].error if results.rounds else None
        why = "no round was measured successfully" + (f"; the last: {last}" if last else "")
        finish(results, "failed", why, clocks)
    else:
        finish(results, "complete", after=clocks)
    timeline.add("report", began, detail="the results file finished and the step summary written")
    results.write()  # with the report's phase
    append_summary(options.summary_path, results)
    ok = sum(r.ok for r in results.rounds)
    return SuiteOutcome(
        suite.name,
        results.path,
        results.status,
        ok,
        len(results.rounds) - ok,
        results.error,
        tampered=tampered is not None,
        lost=lost,
    )


def new_results(
    p: Plan, suite: Suite, machine: dict, options: BenchOptions, timeline: Timeline | None = None
) -> ResultsFile:
    """The suite's results file, written before any round; `BenchError` when what it would record
    does not fit the model (a fingerprint too large, a repository name too long)."""
    settings = {
        "rounds": p.rounds,
        "warmup": p.warmup,
        "max_rounds": p.max_rounds,
        "timeout": p.round_timeout(suite),
        "aa": options.aa,
        "order": "ABBA",
        "stop_on_failure": options.stop_on_failure,
        **suite.judging(),
    }
    name = options.repo_name or p.repo.name
    path = p.paths[suite.name]
    try:
        base, head = (
            Revision(sha=sha, fingerprint={**machine, "git": fingerprint.checkout(p.repo, sha)})
            for sha in (p.base_sha, p.head_sha)
        )
        results = ResultsFile(
            path,
            suite.name,
            name,
            base,
            head,
            suite.metrics,
            settings,
            ledger=options.written,
            timeline=timeline,
        )
        results.write()
    except ValidationError as error:
        raise BenchError(f"{path}: this run cannot be recorded: {problem(error)}") from None
    return results


def finish(
    results: ResultsFile, status: str, error: str | None = None, after: Future[dict] | None = None
) -> None:
    """Finish ``results`` with the GPUs' clocks after the rounds: ``after``, where they were asked
    already (`aside`), else asked now."""
    results.finish(status, error, after=after.result() if after is not None else fingerprint.clocks())


def aside(call: Callable[[], T]) -> Future[T]:
    """``call`` on a thread of its own, its answer waited for where it is needed."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="perfbot-aside")
    try:
        return pool.submit(call)
    finally:
        pool.shutdown(wait=False)


def set_up(
    suite: Suite,
    guard: Guard,
    scratch: Path,
    timeout: float,
    progress: Progress,
    timeline: Timeline | None = None,
    seal_shared: bool = True,
) -> str | None:
    """Run the suite's set-up in each worktree; a failure stops the suite (every round would fail).
    A set-up may install into the engine: what its import path holds afterwards is the reference,
    walked here unless ``seal_shared`` is false (`open_gate` walks it then)."""
    for side, tree in guard.trees.items():
        guard.check_tree(side)
        for command in suite.setup_commands(tree):
            began = time.monotonic()
            progress.say(f"{suite.name}: set-up in {side} ({command.name})")
            logs = scratch / f"setup-{suite.name}-{side}"
            logs.mkdir(exist_ok=True)
            output = run_command(
                command,
                tree,
                child_env(command.env, None, suite.python, suite.pass_env),
                time.monotonic() + timeout,
                logs / command.name,
                guard.fence(side),
            )
            if timeline is not None:
                timeline.add("set-up", began, side, command.name)
            if not output.ok:
                guard.seal(side)
                return f"set-up in {side} failed: {describe_failure(output, timeout)}"
        guard.seal(side)
    if seal_shared:
        guard.seal_shared()
    return None


def open_gate(guard: Guard, gate: Path, timeline: Timeline) -> None:
    """Walk the engine's import path after the set-up (the reference of every later walk), then
    open the gate (create ``gate``) at which the processes just launched wait before they run any
    of the repository's code (`RoundContext.gate`): they start their interpreter and torch while
    the import path is walked, and no code of either side runs before that walk."""
    began = time.monotonic()
    guard.seal_shared()
    timeline.add("integrity", began, detail="the import path after the set-up, while the processes started")
    gate.parent.mkdir(parents=True, exist_ok=True)
    gate.touch()


def warm_up(
    p: Plan,
    suite: Suite,
    guard: Guard,
    scratch: Path,
    results: ResultsFile,
    options: BenchOptions,
    progress: Progress,
    workers: dict[str, Worker | None],
    timeline: Timeline | None = None,
) -> str | None:
    """The uncounted rounds; where the suite has a worker, the worker serves them, so that its
    start-up is paid by a round that was going to be thrown away. A worker that warmed up as it
    started (built and captured what a round does, untimed: `Worker.warms`) was its side's first
    warm-up already, and a worker kept warm from an earlier run needs none."""
    timeline = timeline if timeline is not None else Timeline()
    order = warmup_order(p.warmup)
    warmed = set()
    for side in SIDES:
        worker = workers.get(side)
        if p.warmup and worker is not None and worker.warms and worker.ready_seconds is not None:
            warmed.add(side)
            if not worker.kept:  # one kept from an earlier run warmed up there
                results.add_warmup(side, True, None, worker.ready_seconds)
    for number, side in enumerate(order):
        if side in warmed:
            warmed.discard(side)  # this warm-up was the worker's start
            continue
        began = progress.round_started(
            suite.name, "warm-up", number // 2 + 1, p.warmup, side, sha_of(p, side), len(order) - number
        )
        ran = take_turn(guard, workers, side, timeline)
        worker = serving(workers, suite, guard, scratch, side, progress)
        warmup = context(guard, scratch, suite, side, RoundId("warmup", number + 1))
        outcome = run_one(p, suite, warmup, worker)
        timeline.add(
            "warm-up", ran, side, "worker" if worker is not None else "fresh", suite.round_seconds(warmup)
        )
        seal(guard, side, timeline)
        lost_worker(worker, outcome.error)
        progress.round_finished(began, outcome.ok, outcome.error)
        results.add_warmup(side, outcome.ok, outcome.error, outcome.seconds)
        if not outcome.ok and options.stop_on_failure:
            return f"warm-up round on {side} failed: {outcome.error}"
    return None


def launch_workers(
    p: Plan,
    suite: Suite,
    guard: Guard,
    scratch: Path,
    progress: Progress,
    workers: dict[str, Worker | None],
    timeline: Timeline,
    kept: Kept | None = None,
    keep: Path | None = None,
    spares: Spares | None = None,
    gate: Path | None = None,
) -> bool:
    """Both sides' workers started at once, before any round (`wait_for_workers` waits until each
    has warmed up): their start-ups overlap instead of adding up, and no round is timed while a
    worker is still starting. A side whose tree has a worker in ``kept`` gets that one
    (`Kept.lend`: `WorkerLost` where it died or its tree changed). Beside them, into ``spares``, a
    spare for each of the side's fresh rounds (`fresh_rounds`) and, where the run profiles, one
    for its profiled pass where the side's worker will not serve it (`Spares.in_worker`). Whether
    anything was started. Where a round's scope cannot keep one side's
    processes off the other's tree, no worker lives through the other side's rounds (`take_turn`),
    and each starts when its side first needs it, as before. ``gate``: where a gated suite's
    processes wait before they run the repository's code (`open_gate`)."""
    if not scope.strategy().read_only:
        return False
    if all(
        suite.worker_command(RoundContext(tree, scratch, side, WORKER_START)) is None
        for side, tree in guard.trees.items()
    ):
        return False  # no worker: every round a fresh process
    for side in SIDES:  # both checked first, so that the second worker does not wait on a check
        take_turn(guard, workers, side, timeline)
    began = time.monotonic()
    for side in SIDES:
        lent = kept.lend(guard.trees[side]) if kept is not None else None
        if lent is not None:
            workers[side] = lent
            timeline.add("worker start", began, side, "kept warm from an earlier run", ended=began)
            continue
        # A worker that may be kept beyond this run writes its log where the caller keeps things:
        # this run's folder is removed when the run ends.
        folder = (
            kept.root if kept is not None and kept.root is not None and guard.trees[side] == keep else None
        )
        serving(workers, suite, guard, folder or scratch, side, progress, gate)
    if spares is not None:
        spares.in_worker = {
            side for side in SIDES if profiles_in_worker(suite, guard, scratch, side, workers.get(side), keep)
        }
        start_spares(p, suite, guard, scratch, progress, spares, gate)
    return True


def profiles_in_worker(
    suite: Suite, guard: Guard, scratch: Path, side: str, worker: Worker | None, keep: Path | None
) -> bool:
    """Whether ``side``'s profiled pass will run in its worker, with no profiler spare started for
    it: a worker started for this run alone (one kept across runs, or to be kept, is never
    profiled: it times rounds again) whose suite can profile in it. The warm worker's pass skips
    what a spare's pays (its first graph capture; two more processes starting beside the others),
    for the profiler's first session (a tenth of a second, where PyTorch's profiler does not
    import torch.compile's compiler: `verify_step_workload.compiler_left_unimported`)."""
    if worker is None or worker.kept or guard.trees[side] == keep:
        return False
    context = RoundContext(guard.trees[side], scratch, side, PROFILED_PASS)
    return suite.worker_profile_request(context) is not None


def wait_for_workers(
    p: Plan,
    suite: Suite,
    guard: Guard,
    progress: Progress,
    workers: dict[str, Worker | None],
    timeline: Timeline,
    spares: Spares | None = None,
) -> None:
    """Wait until every process `launch_workers` started is ready (a worker warmed up, a spare set
    up); one that is not is stopped, and what it was for runs in processes started at its turn."""
    for side in SIDES:
        for spare in spares.of(side) if spares is not None else []:
            why = spare.wait_ready(p.round_timeout(suite))
            if why is not None and spares is not None:
                spares.drop(side, spare)  # its round or pass runs in a process started at its turn
                progress.say(f"{suite.name}: a spare of {side} did not start ({why})")
            timeline.add(
                "worker start",
                spare.began,
                side,
                "failed" if why is not None else spare_detail(spare),
                _ready_seconds(spare),
                ended=spare.began + spare.ready_seconds if spare.ready_seconds is not None else None,
            )
        worker = workers.get(side)
        if worker is None or worker.kept:
            if spares is not None and spares.of(side):
                seal(guard, side, timeline)
            continue
        why = worker.wait_ready(p.round_timeout(suite))
        seal(guard, side, timeline)
        if why is not None:
            worker.stop()
            workers[side] = None  # as if it had died: the side's rounds run in fresh processes
            progress.say(
                f"{suite.name}: the worker of {side} did not start ({why}); its rounds run in fresh processes"
            )
            timeline.add("worker start", worker.began, side, "failed")
            continue
        ready = worker.ready_seconds
        timeline.add(
            "worker start",
            worker.began,
            side,
            "started, then built and captured once (the warm-up)" if worker.warms else "started",
            _ready_seconds(worker),
            ended=worker.began + ready if ready is not None else None,
        )
        progress.say(
            f"{suite.name}: the worker of {side} is ready"
            + (
                f" after {ready:.1f}s (started and warmed up beside the other side's)"
                if ready is not None
                else ""
            )
        )


def fresh_rounds(p: Plan) -> list[int]:
    """The rounds (counted from 0) that each side runs in a process of its own: the first and the
    one that completes the minimum, so that what only a new process shows (start-up, a new context
    and communicator) is in every run."""
    return sorted({0, max(p.rounds, 1) - 1})


@dataclass
class Spares:
    """Processes started ahead of their one use (`Worker.start` with ``spare``): per side, one for
    each fresh round, and, where the run profiles (``profiles``), one for the profiled pass unless
    the side's worker serves it (``in_worker``: `profiles_in_worker`)."""

    profiles: bool = False
    in_worker: set[str] = field(default_factory=set)
    rounds: dict[str, list[Worker]] = field(default_factory=lambda: {side: [] for side in SIDES})
    profilers: dict[str, Worker] = field(default_factory=dict)

    def of(self, side: str) -> list[Worker]:
        return [*self.rounds[side], *([self.profilers[side]] if side in self.profilers else [])]

    def all(self) -> list[Worker]:
        return [spare for side in SIDES for spare in self.of(side)]

    def drop(self, side: str, spare: Worker) -> None:
        """``spare`` did not start: it is stopped, and what it was for runs in a process of its turn."""
        spare.stop()
        if spare in self.rounds[side]:
            self.rounds[side].remove(spare)
        if self.profilers.get(side) is spare:
            del self.profilers[side]

    def for_round(self, side: str) -> Worker | None:
        """A round spare of ``side`` still alive that has served nothing; None where there is none
        (the round then runs in a process started now)."""
        return next((s for s in self.rounds[side] if s.alive and not s.served), None)

    def for_profile(self, side: str) -> Worker | None:
        """``side``'s profiler spare, alive and unused; else None."""
        spare = self.profilers.get(side)
        return spare if spare is not None and spare.alive and not spare.profiled else None


def spare_detail(spare: Worker) -> str:
    if spare.profiler:
        return "the profiled pass's process, started ahead (its profiler set up, no warm-up)"
    return "a fresh round's process, started ahead (no warm-up)"


def start_spares(
    p: Plan,
    suite: Suite,
    guard: Guard,
    scratch: Path,
    progress: Progress,
    spares: Spares,
    gate: Path | None = None,
) -> None:
    """A spare for each fresh round of each side, and one for each side's profiled pass where the
    run profiles and the side's worker does not serve it (`Spares.in_worker`), started at once; none
    where the suite has none. One that cannot start leaves its round or pass to a process started at
    its turn. ``gate``: where they wait before running the repository's code (`open_gate`)."""
    for side in SIDES:
        profiler = spares.profiles and side not in spares.in_worker
        uses = [False] * len(fresh_rounds(p)) + [True] * profiler
        for number, profiler in enumerate(uses):
            name = "profiler" if profiler else f"spare-{number + 1}"
            folder = scratch / "workers" / suite.name / f"{side}-{name}"
            folder.mkdir(parents=True, exist_ok=True)
            try:
                spare = Worker.start(
                    suite,
                    RoundContext(
                        guard.trees[side], folder, side, WORKER_START, guard.round_fence(side), gate=gate
                    ),
                    spare=True,
                    profiler=profiler,
                )
            except (OSError, scope.ScopeError) as error:
                progress.say(f"{suite.name}: a spare of {side} could not start ({error})")
                continue
            if spare is None:
                return  # the suite has none
            if profiler:
                spares.profilers[side] = spare
            else:
                spares.rounds[side].append(spare)


def _ready_seconds(worker: Worker) -> dict[str, float]:
    """What a worker's ready file says of its start (the suite's keys), where it says anything."""
    if worker.ready_file is None:
        return {}
    try:
        seconds = json.loads(worker.ready_file.read_text())["seconds"]
        return {str(k): float(v) for k, v in seconds.items() if isinstance(v, int | float)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def lost_worker(worker: Worker | None, error: str | None) -> None:
    """`WorkerLost` where ``worker`` is kept across runs and has died: the run ends, measuring
    nothing more, instead of going on in other processes than the ones it was kept for."""
    if worker is not None and worker.kept and not worker.alive:
        raise WorkerLost(
            f"the worker kept across runs died ({worker.ending()}): {error}; this run measures nothing"
        )


def measure(
    p: Plan,
    suite: Suite,
    guard: Guard,
    scratch: Path,
    results: ResultsFile,
    options: BenchOptions,
    progress: Progress,
    workers: dict[str, Worker | None],
    timeline: Timeline | None = None,
    spares: Spares | None = None,
) -> str | None:
    from . import adaptive  # imported aside by `run_suite` while the processes started

    timeline = timeline if timeline is not None else Timeline()
    done, pair = 0, 0
    while adaptive.should_continue(samples(results), done, p.rounds, p.max_rounds, watch_level=p.watch_level):
        planned = max(p.rounds, done + 1)  # per side: the minimum, or one more pair the rule asked for
        fresh = done in fresh_rounds(p)
        for position, side in enumerate(pair_order(pair)):
            began = progress.round_started(
                suite.name, "round", done + 1, planned, side, sha_of(p, side), 2 * (planned - done) - position
            )
            ran = take_turn(guard, workers, side, timeline)
            if fresh:
                worker = spares.for_round(side) if spares is not None else None
            else:
                worker = serving(workers, suite, guard, scratch, side, progress)
            counted = context(guard, scratch, suite, side, RoundId("counted", done))
            outcome = run_one(p, suite, counted, worker)
            process = "worker" if worker is not None and not worker.spare else "fresh"
            where = "fresh, started ahead" if worker is not None and worker.spare else process
            timeline.add("round", ran, side, where, suite.round_seconds(counted))
            seal(guard, side, timeline)
            lost_worker(worker, outcome.error)
            # What the file recorded: a round measured but refused (too many metrics, a unit that
            # does not convert) is reported failed, as it is recorded.
            recorded = results.add_round(
                side,
                done,
                outcome.ok,
                outcome.error,
                outcome.metrics,
                outcome.declarations,
                outcome.spread,
                outcome.seconds,
                process,
            )
            progress.round_finished(began, recorded.ok, recorded.error)
            if not recorded.ok and options.stop_on_failure:
                return f"round {done} on {side} failed: {recorded.error}"
        done, pair = done + 1, pair + 1
    return None


def take_turn(
    guard: Guard, workers: dict[str, Worker | None], side: str, timeline: Timeline | None = None
) -> float:
    """Before a round of ``side``: its tree and the engine's import path are as they were left
    (`TreeChanged` if not). Where the scope cannot make this side's tree read-only to the other
    side, the other side's worker, which would live through the round, is stopped first (it starts
    again when its side needs it). When the round may begin (`time.monotonic`)."""
    if not scope.strategy().read_only:
        for other in SIDES:
            worker = workers.get(other)
            if other != side and worker is not None:
                worker.stop()
                del workers[other]
    began = time.monotonic()
    guard.check(side)
    if timeline is not None:
        timeline.add("integrity", began, side, "checked before a round")
    return time.monotonic()


def seal(guard: Guard, side: str, timeline: Timeline) -> None:
    """After a round of ``side``: what its tree holds now is its own (`Guard.seal`)."""
    began = time.monotonic()
    guard.seal(side)
    timeline.add("integrity", began, side, "sealed after a round")


def run_one(p: Plan, suite: Suite, round_context: RoundContext, worker: Worker | None) -> RoundResult:
    """One round: served by ``worker`` if given, else in fresh processes."""
    if worker is None:
        return run_round(suite, round_context, p.round_timeout(suite))
    return worker.serve(round_context, p.round_timeout(suite))


def stop_workers(
    workers: dict[str, Worker | None],
    guard: Guard | None = None,
    kept: Kept | None = None,
    keep: Path | None = None,
    spares: list[Worker] | None = None,
) -> None:
    """Stop the run's workers and ``spares``, all told at once (`stop_all`), but for the worker of
    the side whose tree is ``keep``, which goes (alive, warm, never profiled) into ``kept`` for the
    caller's next run."""
    ending = list(spares or [])
    for side, worker in list(workers.items()):
        workers[side] = None
        if worker is None:
            continue
        tree = guard.trees[side] if guard is not None else None
        if kept is not None and tree is not None and tree == keep and worker.alive and not worker.profiled:
            kept.keep(tree, worker)
        elif kept is not None and tree is not None and worker.kept:
            kept.release(tree)
        else:
            ending.append(worker)
    stop_all(ending)


def leaving(
    workers: dict[str, Worker | None], guard: Guard, kept: Kept | None, keep: Path | None
) -> list[Worker]:
    """The workers that `stop_workers` will stop: all but the one of the side whose tree is ``keep``
    (which goes into ``kept`` where it is still fit to serve)."""
    return [
        worker
        for side, worker in workers.items()
        if worker is not None and not (kept is not None and guard.trees[side] == keep)
    ]


def serving(
    workers: dict[str, Worker | None],
    suite: Suite,
    guard: Guard,
    scratch: Path,
    side: str,
    progress: Progress,
    gate: Path | None = None,
) -> Worker | None:
    """The side's worker, started on first use; None where the suite has none, it could not start
    (which ``progress`` is told once) or it died. ``gate``: where the worker waits before it runs
    the repository's code (`open_gate`)."""
    if side not in workers:
        folder = scratch / "workers" / suite.name / side
        folder.mkdir(parents=True, exist_ok=True)
        fence = guard.round_fence(side)
        try:
            workers[side] = Worker.start(
                suite, RoundContext(guard.trees[side], folder, side, WORKER_START, fence, gate=gate)
            )
        except (OSError, scope.ScopeError) as error:
            workers[side] = None  # as if it had died: the side's rounds run in fresh processes
            progress.say(
                f"{suite.name}: the worker of {side} could not start ({error}); its rounds run in "
                f"fresh processes"
            )
    worker = workers[side]
    if worker is not None and not worker.alive:
        lost_worker(worker, "found dead before a round")
        workers[side] = worker = None  # it died: the side's later rounds run in fresh processes
    if worker is not None and worker.profiled:
        worker = None  # it times nothing after the profiled pass
    return worker


def profile(
    p: Plan,
    suite: Suite,
    guard: Guard,
    scratch: Path,
    results: ResultsFile,
    progress: Progress,
    workers: dict[str, Worker | None] | None = None,
    timeline: Timeline | None = None,
    spares: Spares | None = None,
) -> ProfileReads:
    """One un-timed profiled pass per side, after every timed round: its kernels explain the
    verdict and never enter it. A pass that fails leaves that side without a profile, saying why.
    It runs in the side's profiler spare where one was started and is alive (its profiler set up
    while nothing was timed: `profiles_in_worker` says where none is), else in the side's worker
    where it is alive and can profile (no process start of its own, warm; that worker times nothing
    afterwards), else in fresh processes. Each pass's trace is read on a thread of its own
    while the next pass runs (and the run's end goes on): `ProfileReads.collect` records them."""
    timeline = timeline if timeline is not None else Timeline()
    reads = ProfileReads(results, progress, timeline)
    for side in SIDES:
        worker = spares.for_profile(side) if spares is not None else None
        if worker is None:
            worker = (workers or {}).get(side)
        if worker is not None and not (worker.alive and not worker.profiled):
            worker = None
        ahead = worker is not None and worker.spare
        where = "in a process started ahead" if ahead else "in the worker" if worker else "in fresh processes"
        progress.say(f"{suite.name}: profiled pass of {side} ({sha_of(p, side)[:10]}), not timed, {where}")
        ran = take_turn(guard, workers if workers is not None else {}, side, timeline)
        pass_context = context(guard, scratch, suite, side, PROFILED_PASS)
        served = profiling.serve_pass(suite, pass_context, p.round_timeout(suite), worker)
        seal(guard, side, timeline)
        reads.start(side, ran, ahead, suite, pass_context, served, sha_of(p, side))
    return reads


class ProfileReads:
    """The profiled passes' traces being read, one thread each (`profile`): `collect` waits for
    them and records each side's profile (or why it has none), its phase and its progress line."""

    def __init__(self, results: ResultsFile, progress: Progress, timeline: Timeline):
        self.results, self.progress, self.timeline = results, progress, timeline
        self._pool = ThreadPoolExecutor(len(SIDES), thread_name_prefix="perfbot-trace")
        self._pending: list[tuple[Side, float, bool, Suite, RoundContext, Future]] = []

    def start(
        self,
        side: Side,
        ran: float,
        ahead: bool,
        suite: Suite,
        pass_context: RoundContext,
        served: profiling.ServedPass | profiling.ProfileOutcome,
        commit: str,
    ) -> None:
        if isinstance(served, profiling.ProfileOutcome):  # it failed: nothing to read
            read: Future = Future()
            read.set_result((served, time.monotonic()))
        else:
            read = self._pool.submit(_read_pass, suite, pass_context, served, commit)
        self._pending.append((side, ran, ahead, suite, pass_context, read))

    def collect(self) -> None:
        try:
            for side, ran, ahead, suite, pass_context, read in self._pending:
                outcome, ended = read.result()
                done = (
                    "in a process started ahead"
                    if ahead and outcome.where == "in the worker"
                    else outcome.where
                )
                self.timeline.add("profile", ran, side, done, suite.round_seconds(pass_context), ended=ended)
                ok = outcome.profile is not None
                self.progress.round_finished(ran, ok, outcome.error, counted=False, ended=ended)
                if outcome.profile is not None:
                    self.results.set_profile(side, outcome.profile)
                else:
                    self.results.profile_failed(side, outcome.error or "no profile")
                if outcome.step_map is not None and side == "base":
                    self.results.set_step_map(outcome.step_map)  # the map of the code a change is made to
        finally:
            self.close()

    def close(self) -> None:
        self._pending.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)


def _read_pass(
    suite: Suite, pass_context: RoundContext, served: profiling.ServedPass, commit: str
) -> tuple[profiling.ProfileOutcome, float]:
    return profiling.read_pass(suite, pass_context, served, commit), time.monotonic()


def samples(results: ResultsFile) -> dict[str, adaptive.MetricSamples]:
    """Each measured metric's round values per side (with their standard errors where recorded),
    its direction and whether it decides the verdict, for the adaptive rule."""
    from . import adaptive

    measured = results.snapshot()
    base, head = SIDES
    return {
        name: adaptive.MetricSamples(
            measured.values(base, name),
            measured.values(head, name),
            spec.better,
            measured.role(name) != "diagnostic",
            measured.spreads(base, name),
            measured.spreads(head, name),
        )
        for name, spec in measured.metrics.items()
    }


def context(guard: Guard, scratch: Path, suite: Suite, side: str, round_: RoundId) -> RoundContext:
    """A round's context, with a folder made for it just now: nothing an earlier round (of the other
    side, say) left where it would be found can pass for this round's output; and what it must not
    change (`Guard.fence`)."""
    parent = scratch / "rounds" / suite.name
    parent.mkdir(parents=True, exist_ok=True)
    out_dir = Path(tempfile.mkdtemp(prefix=f"{side}-{round_.label}-", dir=parent))
    return RoundContext(guard.trees[side], out_dir, side, round_, guard.round_fence(side))


def sha_of(p: Plan, side: str) -> str:
    return p.base_sha if side == "base" else p.head_sha


def append_summary(path: Path | None, results: ResultsFile) -> None:
    """The rounds' summary and where the run's seconds went, appended to the step summary."""
    if path is None:
        return
    spent = timeline_markdown(results.timeline) if results.timeline is not None else ""
    with path.open("a", encoding="utf-8") as stream:
        stream.write(rounds_summary.markdown(results.snapshot()) + "\n")
        if spent:
            stream.write("\n" + spent + "\n")
