"""A worker's round is judged as a fresh one; a worker that cannot start or has died leaves its
side to fresh processes, and leaks nothing."""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import pytest

from bot.core.config.schema import BenchConfig, MetricDeclaration
from bot.core.config.suite_kinds.command import CommandSuite
from bot.runner import bench, fingerprint, scope, workers
from bot.runner.options import MeasureOptions
from bot.runner.progress import Progress
from bot.runner.rounds import run_round
from bot.runner.scope import ScopeError
from bot.runner.suites.base import (
    WORKER_START,
    Command,
    Measurement,
    Output,
    RoundContext,
    RoundFailed,
    RoundId,
    Suite,
)
from bot.runner.suites.command import CommandBench

from .processes import SCOPES

RESULT = "result.json"
# Writes what $PERFBOT_VALUES says (a JSON object of metrics) to the round's result file.
FRESH_PY = (
    "import json, os\n"
    f"open(os.path.join(os.environ['PERFBOT_OUT_DIR'], {RESULT!r}), 'w').write(os.environ['PERFBOT_VALUES'])\n"
)
# The same, for every request on standard input, until "stop". The runner takes the file's appearance
# for the round's end, so the file appears whole (written aside, then renamed into place), as the
# built-in workers write theirs; written in place, the runner could read it empty (1 run in 10 did).
SERVE_PY = (
    "import json, os, sys\n"
    "for line in sys.stdin:\n"
    "    if line.strip() == 'stop':\n        break\n"
    "    out = json.loads(line)['out']\n"
    "    with open(out + '.partial', 'w') as partial:\n"
    "        partial.write(os.environ['PERFBOT_VALUES'])\n"
    "    os.replace(out + '.partial', out)\n"
)


class JsonSuite(Suite):
    """A suite whose metrics are the JSON object its process writes, whatever it holds (none, say)."""

    name = "json"

    def __init__(self, values: dict[str, float], serve: str = SERVE_PY):
        self.env = {"PERFBOT_VALUES": json.dumps(values)}
        self.serve = serve

    @property
    def metrics(self) -> dict[str, MetricDeclaration]:
        return {"t": MetricDeclaration(unit="ms", better="lower")}

    def round_commands(self, context: RoundContext) -> list[Command]:
        return [Command("fresh", (sys.executable, "-c", FRESH_PY), self.env)]

    def parse(self, context: RoundContext, outputs: list[Output]) -> Measurement:
        try:
            return Measurement(json.loads((context.out_dir / RESULT).read_text()))
        except (OSError, ValueError) as error:
            raise RoundFailed(f"{RESULT}: {error}") from None

    def worker_command(self, context: RoundContext) -> Command | None:
        return Command("serve", (sys.executable, "-c", self.serve), self.env)

    def worker_request(self, context: RoundContext) -> tuple[dict, Path]:
        out = context.out_dir / RESULT
        return {"out": str(out)}, out


def started(suite: Suite, tmp_path: Path) -> workers.Worker:
    folder = tmp_path / "worker"
    folder.mkdir()
    worker = workers.Worker.start(suite, RoundContext(tmp_path, folder, "head", WORKER_START))
    assert worker is not None
    return worker


def test_a_worker_s_round_with_metrics_is_measured(tmp_path):
    worker = started(JsonSuite({"t": 1.5}), tmp_path)
    try:
        result = worker.serve(
            RoundContext(tmp_path, tmp_path / "r1", "head", RoundId("counted", 1)), timeout=30
        )
    finally:
        worker.stop()
    assert (result.ok, result.error, result.metrics) == (True, None, {"t": 1.5})


def test_a_worker_s_round_without_metrics_fails_as_a_fresh_round_does(tmp_path):
    suite = JsonSuite({})
    fresh = run_round(
        suite, RoundContext(tmp_path, tmp_path / "fresh", "head", RoundId("counted", 0)), timeout=30
    )
    worker = started(suite, tmp_path)
    try:
        served = worker.serve(
            RoundContext(tmp_path, tmp_path / "served", "head", RoundId("counted", 1)), timeout=30
        )
    finally:
        worker.stop()
    assert (fresh.ok, fresh.error) == (False, "the suite reported no metrics")
    assert (served.ok, served.error, served.metrics) == (fresh.ok, fresh.error, {})


def test_stopping_a_worker_that_has_died_closes_its_input(tmp_path):
    worker = started(JsonSuite({"t": 1.0}, serve="raise SystemExit(3)"), tmp_path)
    deadline = time.monotonic() + 30
    while worker.alive and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not worker.alive
    worker.stop()
    assert worker.process.stdin is not None and worker.process.stdin.closed


@pytest.mark.parametrize("strategy", SCOPES)
@pytest.mark.parametrize(
    "dies, ended",
    [
        ("raise SystemExit(3)", "exit status 3"),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "killed by signal SIGKILL"),
    ],
    ids=["exit", "signal"],
)
def test_a_worker_that_dies_in_a_round_is_reported_with_its_own_end(
    tmp_path, monkeypatch, strategy, dies, ended
):
    # Under a PID namespace the process perfbot waits for is unshare's, whose status says only that
    # the namespace's init ended well: the worker's own end is what the init reported.
    monkeypatch.setenv(scope.STRATEGY_VARIABLE, strategy)
    worker = started(JsonSuite({"t": 1.0}, serve=f"import sys\nsys.stdin.readline()\n{dies}\n"), tmp_path)
    try:
        result = worker.serve(
            RoundContext(tmp_path, tmp_path / "r1", "head", RoundId("counted", 1)), timeout=30
        )
    finally:
        worker.stop()
    assert not result.ok
    assert f"the worker ended ({ended})" in (result.error or ""), result.error


@pytest.fixture
def no_torch_probe(monkeypatch):
    monkeypatch.setattr(fingerprint, "python_stack", lambda python: {"torch": "(not probed in these tests)"})


def no_such_interpreter(monkeypatch):
    monkeypatch.setattr(
        CommandBench,
        "worker_command",
        lambda self, context: Command("serve", ("/nonexistent/perfbot-python", "serve.py")),
    )


def no_scope(monkeypatch):
    monkeypatch.setattr(CommandBench, "worker_command", lambda self, context: Command("serve", ("true",)))

    def refused():
        raise ScopeError("PERFBOT_ROUND_SCOPE=pid-namespace: this machine refuses PID namespaces")

    monkeypatch.setattr(workers, "strategy", refused)


@pytest.mark.parametrize("break_worker", [no_such_interpreter, no_scope])
def test_a_worker_that_cannot_start_leaves_its_side_to_fresh_processes(
    bench_repo, tmp_path, monkeypatch, no_torch_probe, break_worker
):
    break_worker(monkeypatch)
    repo, base, head = bench_repo
    config = BenchConfig(suites={"quick": CommandSuite(kind="command", command="bash bench.sh")})
    opts = bench.BenchOptions(
        base=base,
        head=head,
        suites=["quick"],
        out=tmp_path / "results.json",
        measure=MeasureOptions(repo=repo, rounds=3, warmup=1),
    )
    stream = io.StringIO()
    (outcome,) = bench.run(opts, config, Progress(stream))
    data = json.loads(outcome.path.read_text())
    assert outcome.status == "complete", [r["error"] for r in data["rounds"]]
    assert all(w["ok"] for w in data["warmups"]) and len(data["warmups"]) == 2
    assert [r["process"] for r in data["rounds"]] == ["fresh"] * 6
    said = stream.getvalue()
    for side in ("base", "head"):
        assert f"quick: the worker of {side} could not start" in said, said
    assert said.count("could not start") == 2, said  # once per side, not once per round
    assert "rounds run in fresh processes" in said
