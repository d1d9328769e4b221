"""The sandbox's runner plays GitHub Actions for the bot's dispatches: `perfbot bench run` and
`report` on the checkout, the artifact uploaded, the run completed and `workflow_run` sent; the
merges' events go back in the order they were dispatched, whatever order they finish in; a
measurement asked for ahead of its dispatch is not taken twice."""

from __future__ import annotations

import io
import json
import sys
import zipfile

import pytest
import requests

from bot.sandbox import payloads
from bot.sandbox.github import GitHubEmulator, wait_for
from bot.sandbox.runner import Runner
from tests.runner.test_action import engine_python

pytestmark = pytest.mark.slow
REPO = "sandbox/engine"
CONFIG = "bench:\n  rounds: 1\n  warmup: 0\n  suites:\n    quick:\n      kind: command\n      command: bash bench.sh\n"
BENCH = 'sleep "$(cat delay.txt)"; echo "PERFBOT_METRIC step_ms=$(cat speed.txt) unit=ms better=lower"\n'


@pytest.fixture
def world(git_builder, tmp_path):
    shas = {
        name: git_builder.commit(name, {"bench.sh": BENCH, "delay.txt": delay, "speed.txt": speed})
        for name, delay, speed in (
            ("a", "0\n", "10\n"),
            ("b", "3\n", "12\n"),
            ("c", "0\n", "10\n"),
            ("d", "0\n", "11\n"),
        )
    }
    standin = GitHubEmulator().start()
    state = standin.add_repo(REPO, "master")
    state.branches["master"] = shas["d"]
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
        engine_python=str(engine_python(tmp_path)),
        parallel=2,
    )
    yield standin, runner.start(), shas, sent
    runner.stop()
    standin.stop()


def dispatch(standin, base, head, cid, pr=""):
    inputs = {
        "pr": pr,
        "base-sha": base,
        "head-sha": head,
        "suites": "quick",
        "rounds": "",
        "max-rounds": "",
        "correlation-id": cid,
    }
    answer = requests.post(
        f"{standin.base_url}/repos/{REPO}/actions/workflows/perfbot-bench.yml/dispatches",
        json={"ref": "master", "inputs": inputs, "return_run_details": True},
        timeout=10,
    )
    return answer.json()["workflow_run_id"]


def completed(sent):
    return [p["workflow_run"]["id"] for e, p in sent if e == "workflow_run" and p["action"] == "completed"]


def test_merges_go_back_in_the_order_dispatched_with_their_artifacts(world):
    standin, runner, shas, sent = world
    slow = dispatch(standin, shas["a"], shas["b"], "pb-slow")  # 3 s of sleep in each of its head's rounds
    fast = dispatch(standin, shas["c"], shas["d"], "pb-fast")
    assert wait_for(lambda: len(completed(sent)) == 2, timeout=120), sent
    assert completed(sent) == [slow, fast]
    finished = {f["run_id"]: f["measured"].seconds for f in runner.finished}
    assert finished[fast] < finished[slow]  # measured at once; the fast one waited for its turn
    for run_id, cid, head in ((slow, "pb-slow", shas["b"]), (fast, "pb-fast", shas["d"])):
        assert (
            standin.runs[run_id]["status"] == "completed" and standin.runs[run_id]["conclusion"] == "success"
        )
        [artifact] = [a for a in standin.artifacts.values() if a["_run"] == run_id]
        assert artifact["name"] == f"perfbot-results-{cid}"
        files = zipfile.ZipFile(io.BytesIO(artifact["_zip"]))
        assert sorted(files.namelist()) == ["results.json", "summary.md"]
        results = json.loads(files.read("results.json"))
        assert results["head"]["sha"] == head and len(results["rounds"]) == 2  # one round per side
    assert "perfbot bench run --base" in standin.runs[slow]["_log"]
    # the action's report step: its reading of the folder (one round per side: no verdict)
    *_, reading, verdict, uploaded = standin.runs[slow]["_log"].splitlines()
    assert reading.startswith("perfbot bench report ") and verdict == "inconclusive"
    assert uploaded == "uploaded the artifact perfbot-results-pb-slow: results.json, summary.md"
    events = [(p["workflow_run"]["id"], p["action"]) for e, p in sent]
    assert events.index((slow, "in_progress")) < events.index((slow, "completed"))


def test_a_measurement_prepared_ahead_answers_its_dispatch_and_a_pull_requests_run_its_own(world):
    standin, runner, shas, sent = world
    prepared = runner.prepare(runner.merge_key(shas["c"], shas["d"], ("quick",)))
    measured = prepared.result(timeout=120)
    merge = dispatch(standin, shas["c"], shas["d"], "pb-merge")
    pull = dispatch(standin, shas["c"], shas["d"], "pb-pull", pr="3")
    assert wait_for(lambda: len(completed(sent)) == 2, timeout=120), sent
    by_run = {f["run_id"]: f["measured"] for f in runner.finished}
    assert by_run[merge] is measured  # not measured again
    assert by_run[pull] is not measured and by_run[pull].folder != measured.folder


def test_without_torch_every_run_ends_failed_and_says_why(git_builder, tmp_path):
    sha = git_builder.commit("a", {"bench.sh": BENCH, "delay.txt": "0\n", "speed.txt": "1\n"})
    standin = GitHubEmulator().start()
    standin.add_repo(REPO, "master").branches["master"] = sha
    standin.add_workflow(REPO)
    sent = []
    runner = Runner(
        standin,
        REPO,
        git_builder.root,
        tmp_path,
        tmp_path / "perfbot.yml",
        lambda e, p: sent.append((e, p)),
        lambda action, run: payloads.workflow_run(action, run, repo=REPO, installation_id=1),
        can_measure="the CPU suite needs torch",
    ).start()
    try:
        run_id = dispatch(standin, sha, sha, "pb-none")
        assert wait_for(lambda: completed(sent) == [run_id], timeout=30), sent
    finally:
        runner.stop()
        standin.stop()
    assert standin.runs[run_id]["conclusion"] == "failure"
    assert "the CPU suite needs torch" in standin.runs[run_id]["_log"]
    [artifact] = standin.artifacts.values()
    summary = zipfile.ZipFile(io.BytesIO(artifact["_zip"])).read("summary.md").decode()
    assert summary == "No benchmark ran: the CPU suite needs torch\n"
