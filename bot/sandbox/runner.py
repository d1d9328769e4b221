"""The sandbox's self-hosted runner: what GitHub Actions and perfbot's action do for a benchmark
that the bot dispatched, done on this machine. For each workflow dispatch the stand-in receives,
it runs `perfbot bench run` (base against head, on the CPU, with the dispatched suites and rounds)
on the sample's checkout and `perfbot bench report`, uploads the results folder as the run's
artifact (``perfbot-results-<correlation id>``), completes the run, and sends GitHub's
`workflow_run` webhook; the run's log is what its page on the stand-in shows. A dispatch in bisect
mode (``mode: bisect``, as the watch sends) runs `perfbot bisect` instead and uploads its artifact
files, as the action does. The action's `perfbot bench report` step runs in this process (the
same functions, without an interpreter of its own per run).

A pull request's run (a `/bench`) is started before the merges waiting. Merge runs (no ``pr``
input) measure one round per side unless the dispatch asks for more, without the kernel profile:
they make the dashboard's history. The sandbox may ask for a merge's measurement before its
dispatch arrives (`prepare`), so that several are measured at once on a machine with the cores
for it; a dispatch for exactly that base, head, suites and rounds then gets that measurement.
Their `workflow_run` events are sent in the order of the dispatches, as the history is ordered by
when results arrive.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import children
from .github import GitHubEmulator

STOP_GRACE_S = 15  # between SIGTERM and SIGKILL for a benchmark that is being stopped
VERDICT_ROUNDS = 3  # the fewest rounds per side the statistics decide with (the config's bench.rounds)
# A benchmark of the sandbox goes on to this many rounds per side while more would decide (its
# config's bench.max_rounds, which the merges also give explicitly).
MERGE_MAX_ROUNDS = 6


@dataclass(frozen=True, order=True)
class Key:
    """What a measurement measured: the same key, the same results file (but for the numbers)."""

    base: str
    head: str
    suites: tuple[str, ...]
    rounds: str
    max_rounds: str
    profile: bool
    mode: str = "bench"  # or "bisect": GOOD is base, BAD head, and one suite (the action's inputs)
    metric: str = ""  # bisect mode: the metric to bisect on ("": the suite's headline metric)


@dataclass
class Measured:
    code: int  # the exit status of `perfbot bench run`
    folder: Path  # what the action would upload
    log: str
    seconds: float


@dataclass(order=True)
class _Job:
    priority: int
    order: int
    key: Key = field(compare=False)
    future: Future = field(compare=False)


class Runner:
    """Start with `start()`; `stop()` ends the benchmark running and every thread."""

    def __init__(
        self,
        standin: GitHubEmulator,
        repo: str,
        checkout: Path,
        folder: Path,
        config: Path,
        send: Callable[[str, dict[str, Any]], object],
        workflow_run: Callable[..., dict[str, Any]],
        python: str = sys.executable,
        engine_python: str | None = None,
        parallel: int = 1,
        merge_rounds: int = 1,
        can_measure: str | None = None,
        env: dict[str, str] | None = None,
    ):
        self.standin, self.repo, self.checkout = standin, repo, checkout
        self.folder, self.config = folder, config
        self.send, self.workflow_run = send, workflow_run
        self.python, self.engine_python = python, engine_python or python  # perfbot's, and the engine's
        self.parallel, self.merge_rounds = parallel, merge_rounds
        self.env = dict(os.environ if env is None else env)
        self.cannot_measure = can_measure  # why no benchmark can run here (None: they can)
        self.finished: list[dict[str, Any]] = []  # runs completed, in order: run, key, measured, pull
        self._measured: dict[Key, Future] = {}
        self._jobs: queue.PriorityQueue[_Job] = queue.PriorityQueue()
        self._order = itertools.count()
        self._seen = 0  # dispatches taken
        self._stopping = threading.Event()
        self._processes: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._merge_turn = threading.Condition()
        self._merges_seen = self._merges_sent = 0  # merge dispatches taken, and sent back

    # lifecycle

    def start(self) -> Runner:
        workers = [
            threading.Thread(target=self._work, name=f"sandbox-runner-{i}", daemon=True)
            for i in range(self.parallel)
        ]
        watcher = threading.Thread(target=self._watch, name="sandbox-dispatches", daemon=True)
        self._threads = [watcher, *workers]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            running = list(self._processes)
        for process in running:
            _end(process)
        with self._merge_turn:
            self._merge_turn.notify_all()
        for thread in self._threads:
            thread.join(timeout=STOP_GRACE_S + 5)

    # measurements

    def merge_key(self, base: str, head: str, suites: tuple[str, ...]) -> Key:
        """A merge's benchmark: ``merge_rounds`` per side, and where those can reach a verdict,
        more (up to `MERGE_MAX_ROUNDS`) while the statistics say more would decide, as a
        maintainer's ``/bench --max-rounds`` does: three rounds of a +250% change whose slow
        path scatters by half were left inconclusive on a quiet machine, and no case opened."""
        adaptive = VERDICT_ROUNDS <= self.merge_rounds < MERGE_MAX_ROUNDS
        # Explicit either way: the quick mode's rounds must not grow to the config's max_rounds.
        most = MERGE_MAX_ROUNDS if adaptive else self.merge_rounds
        return Key(base, head, suites, str(self.merge_rounds), str(most), False)

    def prepare(self, key: Key) -> Future:
        """Measure ``key`` now (if not already), ahead of its dispatch; merges wait behind pull requests."""
        return self._submit(key, priority=1)

    def _submit(self, key: Key, priority: int) -> Future:
        with self._lock:
            found = self._measured.get(key)
            if found is None:
                found = self._measured[key] = Future()
                self._jobs.put(_Job(priority, next(self._order), key, found))
            return found

    def _work(self) -> None:
        while not self._stopping.is_set():
            try:
                job = self._jobs.get(timeout=0.2)
            except queue.Empty:
                continue
            if self._stopping.is_set():
                job.future.cancel()
                return
            try:
                job.future.set_result(self._measure(job.key))
            except BaseException as error:  # the dispatch's thread reports it
                job.future.set_exception(error)

    def _measure(self, key: Key) -> Measured:
        started = time.monotonic()
        out = Path(tempfile.mkdtemp(prefix="run-", dir=self.folder))
        if self.cannot_measure is not None:
            (out / "summary.md").write_text(f"No benchmark ran: {self.cannot_measure}\n")
            return Measured(1, out, f"perfbot: {self.cannot_measure}\n", 0.0)
        if key.mode == "bisect":
            return self._bisect(key, out, started)
        if key.mode != "bench":  # as the action refuses it
            (out / "summary.md").write_text(
                f"No benchmark ran: mode must be bench or bisect, not {key.mode!r}\n"
            )
            return Measured(2, out, "perfbot: mode must be bench or bisect\n", 0.0)
        command = [
            self.python,
            "-m",
            "bot",
            "bench",
            "run",
            "--repo",
            str(self.checkout),
            "--base",
            key.base,
            "--head",
            key.head,
            "--repo-name",
            self.repo,
            "--config",
            str(self.config),
            "--python",
            self.engine_python,
            "--out",
            str(out / "results.json"),
            *(["--rounds", key.rounds] if key.rounds else []),
            *(["--max-rounds", key.max_rounds] if key.max_rounds else []),
            *([] if key.profile else ["--no-profile"]),
        ]
        for suite in key.suites:
            command += ["--suite", suite]
        code, log = self._run(command)
        if not self._stopping.is_set():
            log += _report(out, out / "summary.md")
        return Measured(code, out, log, time.monotonic() - started)

    def _bisect(self, key: Key, out: Path, started: float) -> Measured:
        """What the action does in bisect mode: `perfbot bisect GOOD BAD` on the one suite, its runs
        in a folder of their own and only its artifact files (bisect.json, the reference's and the
        confirmation's results files, summary.md as perfbot wrote it) in ``out``, which is uploaded;
        then `perfbot bench report` reads them back as the App does, for the run's log."""
        runs = Path(tempfile.mkdtemp(prefix="bisect-runs-", dir=self.folder))
        suite = key.suites[0] if key.suites else "verify-step"
        command = [
            self.python,
            "-m",
            "bot",
            "bisect",
            key.base,
            key.head,
            "--repo",
            str(self.checkout),
            "--suite",
            suite,
            "--out",
            str(runs),
            "--format",
            "json",
            "--config",
            str(self.config),
            "--python",
            self.engine_python,
            "--profile" if key.profile else "--no-profile",
            *(["--metric", key.metric] if key.metric else []),
            *(["--rounds", key.rounds] if key.rounds else []),
            *(["--max-rounds", key.max_rounds] if key.max_rounds else []),
        ]
        code, log = self._run(command, {"PERFBOT_BISECT_ARTIFACT": str(out)})
        if not self._stopping.is_set():
            # not in ``out``: the uploaded summary.md stays perfbot's
            log += _report(out, runs / "report.md", good=key.base, bad=key.head, suite=suite)
        return Measured(code, out, log, time.monotonic() - started)

    def _run(self, command: list[str], settings: dict[str, str] | None = None) -> tuple[int, str]:
        """Run ``command`` in a session of its own (a Ctrl-C of the terminal is the sandbox's to
        handle), outside the checkout, as the action does, with perfbot's ``settings`` in its
        environment; its exit status and output."""
        if self._stopping.is_set():
            return 1, "stopped\n"
        env = {k: v for k, v in self.env.items() if not k.startswith(("PERFBOT_", "GITHUB_"))}
        env.update(settings or {})
        env["PYTHONSAFEPATH"] = "1"
        process = subprocess.Popen(
            command,
            cwd=self.folder,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            preexec_fn=children.dying_with_this_process(),  # this thread lives as long as the runner
        )
        with self._lock:
            self._processes.add(process)
        try:
            output, _ = process.communicate()
        finally:
            with self._lock:
                self._processes.discard(process)
        return process.returncode, output

    # dispatches

    def _watch(self) -> None:
        while not self._stopping.wait(0.1):
            with self.standin.lock:
                new = self.standin.dispatches[self._seen :]
                self._seen += len(new)
            for dispatched in new:
                turn = None
                inputs = dispatched["inputs"]
                if not inputs.get("pr") and (inputs.get("mode") or "bench") == "bench":
                    # a merge's: sent back in the order dispatched (a bisect's goes back when done)
                    turn, self._merges_seen = self._merges_seen, self._merges_seen + 1
                threading.Thread(
                    target=self._serve,
                    args=(dispatched, turn),
                    daemon=True,
                    name=f"sandbox-run-{dispatched['run_id']}",
                ).start()

    def _serve(self, dispatched: dict[str, Any], turn: int | None) -> None:
        inputs, run_id = dispatched["inputs"], dispatched["run_id"]
        suites = tuple(inputs.get("suites", "").replace(",", " ").split())
        mode = inputs.get("mode") or "bench"
        if mode == "bench" and turn is not None and not inputs.get("rounds"):
            key = self.merge_key(inputs["base-sha"], inputs["head-sha"], suites)
        else:
            key = Key(
                inputs["base-sha"],
                inputs["head-sha"],
                suites,
                inputs.get("rounds", ""),
                inputs.get("max-rounds", ""),
                True,
                mode,
                inputs.get("metric", ""),
            )
        rounds = f" --rounds {key.rounds}" if key.rounds else ""
        if mode == "bisect":
            said = f"perfbot bisect {key.base[:12]} {key.head[:12]} --suite {suites[0] if suites else ''}"
        else:
            said = (
                f"perfbot bench run --base {key.base[:12]} --head {key.head[:12]} "
                f"--suite {' --suite '.join(suites)}"
            )
        self._log(run_id, f"{said}{rounds}\n")
        self._set(run_id, status="in_progress")
        self._event(run_id, "in_progress")
        try:
            measured = self._submit(key, priority=0 if turn is None else 1).result()
        except BaseException as error:  # cancelled at the stop, or the measurement broke
            measured = Measured(1, Path(tempfile.mkdtemp(prefix="run-", dir=self.folder)), f"{error}\n", 0.0)
        try:
            if turn is not None:
                with self._merge_turn:
                    self._merge_turn.wait_for(lambda: self._stopping.is_set() or self._merges_sent == turn)
            if self._stopping.is_set():
                return
            self._log(run_id, measured.log)
            self._finish(dispatched, measured)
            self.finished.append(
                {
                    "run_id": run_id,
                    "key": key,
                    "measured": measured,
                    "merge": turn is not None,
                    "pull": str(inputs.get("pr") or ""),  # a pull request's run (a /bench), or ""
                }
            )
        finally:
            if turn is not None:
                with self._merge_turn:
                    self._merges_sent += 1
                    self._merge_turn.notify_all()

    def _finish(self, dispatched: dict[str, Any], measured: Measured) -> None:
        """The action's upload, the run's completion, and GitHub's `workflow_run` webhook."""
        run_id = dispatched["run_id"]
        name = f"perfbot-results-{dispatched['inputs'].get('correlation-id', '')}"
        files = sorted(p for p in measured.folder.iterdir() if p.is_file() and p.suffix in (".json", ".md"))
        if files:
            self.standin.upload_artifact(self.repo, run_id, name, _zip(files))
            self._log(run_id, f"uploaded the artifact {name}: {', '.join(p.name for p in files)}\n")
        with self.standin.lock:
            self.standin.complete_run(run_id, "success" if measured.code == 0 and files else "failure")
        self._event(run_id, "completed")

    def _event(self, run_id: int, action: str) -> None:
        with self.standin.lock:
            run = self.standin.runs[run_id]
            public = {k: v for k, v in run.items() if not k.startswith("_")}
        self.send("workflow_run", self.workflow_run(action, public))

    def _set(self, run_id: int, **values: Any) -> None:
        with self.standin.lock:
            self.standin.runs[run_id].update(values)

    def _log(self, run_id: int, text: str) -> None:
        with self.standin.lock:
            run = self.standin.runs[run_id]
            run["_log"] = run.get("_log", "") + text


def _report(
    folder: Path, markdown: Path, *, good: str | None = None, bad: str | None = None, suite: str | None = None
) -> str:
    """What `perfbot bench report FOLDER --markdown FILE` (with ``--good``/``--bad``/``--suite`` for
    a bisection) prints and writes, done in this process with the functions it calls: the action's
    step, without a second interpreter (and its statistics imports) per run on a small machine."""
    from bot.runner import bisect_artifact
    from bot.runner import report as results_report

    said = ["perfbot bench report", str(folder), "--markdown", str(markdown)]
    try:
        if good is not None:
            said += ["--good", good, "--bad", bad or "", "--suite", suite or ""]
            verdict, text = bisect_artifact.read_folder(folder, good=good, bad=bad, suite=suite)
        else:
            found = results_report.report(folder)
            verdict, text = found.verdict, found.markdown
        markdown.write_text(text, encoding="utf-8")
    except Exception as error:  # as the command would exit: said in the run's log
        return f"{' '.join(said)}\nperfbot: {type(error).__name__}: {error}\n"
    return f"{' '.join(said)}\n{verdict}\n"


def _zip(files: list[Path]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(path, path.name)
    return out.getvalue()


def _end(process: subprocess.Popen) -> None:
    """SIGTERM to the benchmark (it stops its rounds and removes its worktrees), SIGKILL to its
    session after the grace."""
    try:
        process.terminate()
        process.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
