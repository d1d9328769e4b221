"""A worker's round is judged as a fresh one; a worker that has died leaks nothing."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from bot.core.config.schema import MetricDeclaration
from bot.runner import workers
from bot.runner.rounds import run_round
from bot.runner.suites.base import Command, Measurement, Output, RoundContext, RoundFailed, Suite

RESULT = "result.json"
# Writes what $PERFBOT_VALUES says (a JSON object of metrics) to the round's result file.
FRESH_PY = ("import json, os\n"
            f"open(os.path.join(os.environ['PERFBOT_OUT_DIR'], {RESULT!r}), 'w').write(os.environ['PERFBOT_VALUES'])\n")
# The same, for every request on standard input, until "stop".
SERVE_PY = ("import json, os, sys\n"
            "for line in sys.stdin:\n"
            "    if line.strip() == 'stop':\n        break\n"
            "    open(json.loads(line)['out'], 'w').write(os.environ['PERFBOT_VALUES'])\n")


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
    worker = workers.Worker.start(suite, RoundContext(tmp_path, folder, "head", -1))
    assert worker is not None
    return worker


def test_a_worker_s_round_with_metrics_is_measured(tmp_path):
    worker = started(JsonSuite({"t": 1.5}), tmp_path)
    try:
        result = worker.serve(RoundContext(tmp_path, tmp_path / "r1", "head", 1), timeout=30)
    finally:
        worker.stop()
    assert (result.ok, result.error, result.metrics) == (True, None, {"t": 1.5})


def test_a_worker_s_round_without_metrics_fails_as_a_fresh_round_does(tmp_path):
    suite = JsonSuite({})
    fresh = run_round(suite, RoundContext(tmp_path, tmp_path / "fresh", "head", 0), timeout=30)
    worker = started(suite, tmp_path)
    try:
        served = worker.serve(RoundContext(tmp_path, tmp_path / "served", "head", 1), timeout=30)
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
