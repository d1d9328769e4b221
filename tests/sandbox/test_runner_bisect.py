"""The sandbox's runner honours bisect mode as the action does: a dispatch with ``mode: bisect``
runs `perfbot bisect GOOD BAD` on its one suite and uploads the bisection's artifact (bisect.json,
the reference's and the confirmation's results files, summary.md), which the App reads back."""

from __future__ import annotations

import io
import json
import sys
import zipfile

import pytest
import requests

from bot.core.bench import bisect_artifact
from bot.sandbox import payloads
from bot.sandbox.github import GitHubEmulator, wait_for
from bot.sandbox.runner import Runner
from tests.cli.test_bisect import CONFIG, PLAIN_PYTHON, history

pytestmark = pytest.mark.slow
REPO = "sandbox/engine"


def test_a_bisect_dispatch_runs_perfbot_bisect_and_uploads_its_artifact(git_builder, tmp_path):
    good, shas = history(git_builder, culprit=2, count=4)
    bad = shas[-1]
    standin = GitHubEmulator().start()
    state = standin.add_repo(REPO, "master")
    state.branches["master"] = bad
    standin.add_workflow(REPO)
    config = tmp_path / "perfbot.yml"
    config.write_text(CONFIG)
    folder = tmp_path / "runs"
    folder.mkdir()
    sent = []
    runner = Runner(
        standin,
        REPO,
        git_builder.root,
        folder,
        config,
        lambda e, p: sent.append((e, p)),
        lambda action, run: payloads.workflow_run(action, run, repo=REPO, installation_id=1),
        python=sys.executable,
        engine_python=PLAIN_PYTHON,
    ).start()
    try:
        inputs = {
            "mode": "bisect",
            "pr": "",
            "base-sha": good,
            "head-sha": bad,
            "suites": "spin",
            "metric": "",
            "rounds": "5",
            "max-rounds": "",
            "correlation-id": "pb-bisect",
        }
        answer = requests.post(
            f"{standin.base_url}/repos/{REPO}/actions/workflows/perfbot-bench.yml/dispatches",
            json={"ref": "master", "inputs": inputs, "return_run_details": True},
            timeout=10,
        )
        run_id = answer.json()["workflow_run_id"]
        assert wait_for(
            lambda: any(e == "workflow_run" and p["action"] == "completed" for e, p in sent), timeout=300
        ), sent
    finally:
        runner.stop()
        standin.stop()
    run = standin.runs[run_id]
    assert run["conclusion"] == "success", run["_log"]
    assert f"perfbot bisect {good[:12]} {bad[:12]} --suite spin" in run["_log"]
    # the action's report step reads the bisection back, about what was dispatched
    assert f"--good {good} --bad {bad} --suite spin\nconfirmed\n" in run["_log"]
    [artifact] = standin.artifacts.values()
    assert artifact["name"] == "perfbot-results-pb-bisect"
    archive = zipfile.ZipFile(io.BytesIO(artifact["_zip"]))
    assert sorted(archive.namelist()) == [
        "bisect.json",
        "confirm.results.json",
        "reference.results.json",
        "summary.md",
    ]
    report = json.loads(archive.read("bisect.json"))
    assert (report["status"], report["culprit"]["sha"]) == ("confirmed", shas[2])
    # What the App reads back from it: the culprit, for the GOOD, BAD and suite it dispatched.
    files = {name: archive.read(name) for name in archive.namelist()}
    culprit, problems = bisect_artifact.read(files, good=good, bad=bad, suite="spin")
    assert problems == [] and culprit is not None
