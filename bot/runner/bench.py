"""`perfbot bench run` orchestration: worktrees, set-up, warm-ups, ABBA rounds, fingerprints, results.

The flow for each suite: take the machine's fingerprint, check out base and head as worktrees, run
the suite's set-up in each, run the warm-up rounds (not counted), then counted rounds in ABBA pairs
until `adaptive.should_continue` says stop, each round a fresh process under a timeout, and last,
where the suite profiles (`Suite.profiles`), one un-timed profiled pass per side (`profiling`). The
results file is rewritten after every round, so an interrupted run still leaves what it measured.

No side's processes may change what the other side runs (`integrity`): each gets the other's
worktree read-only where its scope can, and before each of a side's set-ups, rounds and passes its
tree and the engine's import path are checked against what they held after its last one. A change
ends the run: every round it measured is discarded, and the results file says why (``failed``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from bot.adapters.git_repo import GitRepo
from bot.core.config.schema import BenchConfig
from bot.core.judge.results import SIDES, Revision, problem
from bot.core.render import rounds as rounds_summary

from . import adaptive, fingerprint, integrity, profiling, scope
from .integrity import Guard, TreeChanged
from .options import MeasureOptions
from .progress import Progress
from .results import ResultsFile, out_path
from .rounds import RoundResult, child_env, describe_failure, run_command, run_round
from .schedule import pair_order, warmup_order
from .suites import Suite, make_suite
from .suites.base import PROFILED_PASS, WORKER_START, RoundContext, RoundId
from .workers import Worker
from .worktrees import Worktrees


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

    def round_timeout(self, suite: Suite) -> float:
        """``--timeout`` if given, else the suite's own, else the config's default."""
        return self.timeout if self.timeout_given else suite.timeout or self.timeout


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
    rounds = measure.rounds or config.rounds
    max_rounds = max(measure.max_rounds or config.max_rounds or rounds, rounds)
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
) -> list[SuiteOutcome]:
    """Benchmark every suite; the results files are written as rounds finish.

    ``base_tree`` / ``head_tree``: worktrees of ``options.base`` / ``options.head`` that the caller
    made and keeps (a bisection keeps GOOD's across runs, and checks each before and after its
    rounds); the sides it does not give are checked out here. ``planned``: `plan` of these
    ``options`` and ``config``, where the caller made it already (a bisection, for its suite).
    """
    p = planned if planned is not None else plan(options, config)
    contained = scope.strategy()
    fenced = "; the other side's worktree and perfbot's files are read-only to it" * contained.read_only
    progress.say(
        f"fingerprinting the machine (base {p.base_sha[:10]}, head {p.head_sha[:10]}); every "
        f"benchmark process runs in a scope of its own: {contained.name}{fenced}"
    )
    machine = fingerprint.machine(p.suites[0].python)
    check_torch(p.suites, machine)
    outcomes = []
    with Worktrees(p.repo) as scratch:
        trees = {
            "base": base_tree or scratch.add("base", p.base_sha),
            "head": head_tree or scratch.add("head", p.head_sha),
        }
        guard = new_guard(p, trees, scratch.root)
        progress.say(
            f"each side's worktree and the engine's import path ({len(guard.shared)} folders) are "
            f"checked before every round"
        )
        for suite in p.suites:
            outcome = run_suite(p, suite, guard, scratch.root, machine, options, progress)
            outcomes.append(outcome)
            if outcome.tampered or (options.stop_on_failure and outcome.failed_rounds):
                break
    return outcomes


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
    return Guard(trees, sorted(engine), fences=[path for path in own if not integrity.holds(path, kept)])


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
    machine: dict,
    options: BenchOptions,
    progress: Progress,
) -> SuiteOutcome:
    """One suite's set-up, warm-ups and rounds; ``scratch``: this run's folder for their outputs."""
    results = new_results(p, suite, machine, options)
    workers: dict[str, Worker | None] = {}
    gpus = bool(machine.get("gpus"))
    tampered = None
    try:
        stopped = (
            set_up(suite, guard, scratch, p.round_timeout(suite), progress)
            or warm_up(p, suite, guard, scratch, results, options, progress, workers)
            or measure(p, suite, guard, scratch, results, options, progress, workers)
        )
        stop_workers(workers)
        profiles = options.profile if options.profile is not None else suite.profiles(gpus)
        if not stopped and any(r.ok for r in results.rounds) and profiles:
            profile(p, suite, guard, scratch, results, progress)
        guard.check_shared()  # what the last round left in the engine, before this suite's verdict
    except TreeChanged as error:
        tampered = str(error)
        progress.say(f"{suite.name}: {tampered}")
    except KeyboardInterrupt:
        finish(results, "stopped", "interrupted before the rounds were done")
        raise
    finally:
        stop_workers(workers)
    if tampered:
        results.discard(tampered)
        finish(results, "failed", tampered)
    elif stopped:
        finish(results, "stopped", stopped)
    elif not any(r.ok for r in results.rounds):
        last = results.rounds[-1].error if results.rounds else None
        finish(
            results, "failed", "no round was measured successfully" + (f"; the last: {last}" if last else "")
        )
    else:
        finish(results, "complete")
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
    )


def new_results(p: Plan, suite: Suite, machine: dict, options: BenchOptions) -> ResultsFile:
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
            path, suite.name, name, base, head, suite.metrics, settings, ledger=options.written
        )
        results.write()
    except ValidationError as error:
        raise BenchError(f"{path}: this run cannot be recorded: {problem(error)}") from None
    return results


def finish(results: ResultsFile, status: str, error: str | None = None) -> None:
    results.finish(status, error, after=fingerprint.clocks())


def set_up(suite: Suite, guard: Guard, scratch: Path, timeout: float, progress: Progress) -> str | None:
    """Run the suite's set-up in each worktree; a failure stops the suite (every round would fail).
    A set-up may install into the engine: what its import path holds afterwards is the reference."""
    for side, tree in guard.trees.items():
        guard.check_tree(side)
        for command in suite.setup_commands(tree):
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
            if not output.ok:
                guard.seal(side)
                return f"set-up in {side} failed: {describe_failure(output, timeout)}"
        guard.seal(side)
    guard.seal_shared()
    return None


def warm_up(
    p: Plan,
    suite: Suite,
    guard: Guard,
    scratch: Path,
    results: ResultsFile,
    options: BenchOptions,
    progress: Progress,
    workers: dict[str, Worker | None],
) -> str | None:
    """The uncounted rounds; where the suite has a worker, the worker serves them, so that its
    start-up is paid by a round that was going to be thrown away."""
    order = warmup_order(p.warmup)
    for number, side in enumerate(order):
        began = progress.round_started(
            suite.name, "warm-up", number // 2 + 1, p.warmup, side, sha_of(p, side), len(order) - number
        )
        take_turn(guard, workers, side)
        worker = serving(workers, suite, guard, scratch, side, progress)
        warmup = context(guard, scratch, suite, side, RoundId("warmup", number + 1))
        outcome = run_one(p, suite, warmup, worker)
        guard.seal(side)
        progress.round_finished(began, outcome.ok, outcome.error)
        results.add_warmup(side, outcome.ok, outcome.error, outcome.seconds)
        if not outcome.ok and options.stop_on_failure:
            return f"warm-up round on {side} failed: {outcome.error}"
    return None


def measure(
    p: Plan,
    suite: Suite,
    guard: Guard,
    scratch: Path,
    results: ResultsFile,
    options: BenchOptions,
    progress: Progress,
    workers: dict[str, Worker | None],
) -> str | None:
    done, pair = 0, 0
    while adaptive.should_continue(samples(results), done, p.rounds, p.max_rounds):
        planned = max(p.rounds, done + 1)  # per side: the minimum, or one more pair the rule asked for
        # The first pair and the one that completes the minimum run in fresh processes, so that what
        # only a new process shows (start-up, a new context and communicator) is in every run.
        fresh = done == 0 or done + 1 == p.rounds
        for position, side in enumerate(pair_order(pair)):
            began = progress.round_started(
                suite.name, "round", done + 1, planned, side, sha_of(p, side), 2 * (planned - done) - position
            )
            take_turn(guard, workers, side)
            worker = None if fresh else serving(workers, suite, guard, scratch, side, progress)
            counted = context(guard, scratch, suite, side, RoundId("counted", done))
            outcome = run_one(p, suite, counted, worker)
            guard.seal(side)
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
                "worker" if worker is not None else "fresh",
            )
            progress.round_finished(began, recorded.ok, recorded.error)
            if not recorded.ok and options.stop_on_failure:
                return f"round {done} on {side} failed: {recorded.error}"
        done, pair = done + 1, pair + 1
    return None


def take_turn(guard: Guard, workers: dict[str, Worker | None], side: str) -> None:
    """Before a round of ``side``: its tree and the engine's import path are as they were left
    (`TreeChanged` if not). Where the scope cannot make this side's tree read-only to the other
    side, the other side's worker, which would live through the round, is stopped first (it starts
    again when its side needs it)."""
    if not scope.strategy().read_only:
        for other in SIDES:
            worker = workers.get(other)
            if other != side and worker is not None:
                worker.stop()
                del workers[other]
    guard.check(side)


def run_one(p: Plan, suite: Suite, round_context: RoundContext, worker: Worker | None) -> RoundResult:
    """One round: served by ``worker`` if given, else in fresh processes."""
    if worker is None:
        return run_round(suite, round_context, p.round_timeout(suite))
    return worker.serve(round_context, p.round_timeout(suite))


def stop_workers(workers: dict[str, Worker | None]) -> None:
    for side, worker in list(workers.items()):
        if worker is not None:
            worker.stop()
            workers[side] = None


def serving(
    workers: dict[str, Worker | None],
    suite: Suite,
    guard: Guard,
    scratch: Path,
    side: str,
    progress: Progress,
) -> Worker | None:
    """The side's worker, started on first use; None where the suite has none, it could not start
    (which ``progress`` is told once) or it died."""
    if side not in workers:
        folder = scratch / "workers" / suite.name / side
        folder.mkdir(parents=True, exist_ok=True)
        try:
            workers[side] = Worker.start(
                suite, RoundContext(guard.trees[side], folder, side, WORKER_START, guard.fence(side))
            )
        except (OSError, scope.ScopeError) as error:
            workers[side] = None  # as if it had died: the side's rounds run in fresh processes
            progress.say(
                f"{suite.name}: the worker of {side} could not start ({error}); its rounds run in "
                f"fresh processes"
            )
    worker = workers[side]
    if worker is not None and not worker.alive:
        workers[side] = worker = None  # it died: the side's later rounds run in fresh processes
    return worker


def profile(
    p: Plan, suite: Suite, guard: Guard, scratch: Path, results: ResultsFile, progress: Progress
) -> None:
    """One un-timed profiled pass per side, after every timed round: its kernels explain the
    verdict and never enter it. A pass that fails leaves that side without a profile, saying why."""
    for side in SIDES:
        progress.say(f"{suite.name}: profiled pass of {side} ({sha_of(p, side)[:10]}), not timed")
        began = time.monotonic()
        guard.check(side)
        outcome = profiling.profile_side(
            suite,
            context(guard, scratch, suite, side, PROFILED_PASS),
            p.round_timeout(suite),
            sha_of(p, side),
        )
        guard.seal(side)
        progress.round_finished(began, outcome.profile is not None, outcome.error, counted=False)
        if outcome.profile is not None:
            results.set_profile(side, outcome.profile)
        else:
            results.profile_failed(side, outcome.error or "no profile")
        if outcome.step_map is not None and side == "base":
            results.set_step_map(outcome.step_map)  # the map of the code a change is made to


def samples(results: ResultsFile) -> dict[str, adaptive.MetricSamples]:
    """Each measured metric's round values per side (with their standard errors where recorded),
    its direction and whether it decides the verdict, for the adaptive rule."""
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
    return RoundContext(guard.trees[side], out_dir, side, round_, guard.fence(side))


def sha_of(p: Plan, side: str) -> str:
    return p.base_sha if side == "base" else p.head_sha


def append_summary(path: Path | None, results: ResultsFile) -> None:
    if path is None:
        return
    with path.open("a", encoding="utf-8") as stream:
        stream.write(rounds_summary.markdown(results.snapshot()) + "\n")
