"""Regressions on the default branch end to end, all real but GitHub: merge runs, a regression on
the default branch, one case, one bisect dispatch, the bisect's artifact back, the culprit named on
its pull request and shown on the dashboard; and the not-reproduced path. Signed deliveries ->
intake -> queue -> handlers -> PyGithub -> the GitHub emulator (every request validated against
GitHub's REST description), with the requests of each step counted."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter

import pytest

from bot.core.bench import contract
from tests.core.bench import test_bisect_artifact as reports
from tests.core.bench.zips import archive
from tests.core.judge.results_data import EAGLE3, document
from tests.emulator import live
from tests.emulator.bench_support import NUMBER, finish
from tests.emulator.test_bench_end_to_end import CONFIG
from tests.service import diffs
from tests.support import github_data

GOOD, FIRST, CULPRIT, MERGE = reports.GOOD, reports.FIRST, reports.SECOND, reports.BAD
SUITE = "sglang-eagle3"


@pytest.fixture
def bot(emulator, database_url, tmp_path, app_key):
    """A high-risk pull request whose head is the culprit, merged as MERGE on top of GOOD."""
    state = live.add_repository(emulator, CONFIG + "  watch:\n    issue: true\n", {"maintainer": "write"})
    emulator.add_pull(live.REPO, NUMBER, CULPRIT, diffs.HIGH, base_sha=GOOD, base_ref=live.DEFAULT_BRANCH)
    # the pull request's commits FIRST and CULPRIT, merged with a merge commit on top of GOOD
    state.parents.update({MERGE: [GOOD, CULPRIT], CULPRIT: [FIRST], FIRST: [GOOD], GOOD: []})
    running = live.start(emulator, database_url, f"sqlite:///{tmp_path / 'queue.db'}", app_key)
    yield running
    running.stop()


def requests_since(emulator, since: int) -> Counter:
    return Counter(
        r.method + " " + re.sub(r"/\d+", "/N", r.path)
        for r in emulator.requests[since:]
        if r.path.startswith("/repos/")
    )


def merged_with_a_regression(bot, emulator, head: str = CULPRIT) -> dict:
    """The pull request opened, merged, its merge run finished with a regression; the bisect's dispatch."""
    emulator.repos[live.REPO].pulls[NUMBER].head_sha = head
    for action in ("opened", "closed"):
        payload = github_data.pull_request(
            action, head_sha=head, number=NUMBER, repo=live.REPO, installation_id=1
        )
        if action == "closed":
            payload["pull_request"]["merge_commit_sha"] = MERGE
        assert bot.deliver("pull_request", payload).status_code == 202
        bot.wait_idle()
    [merge_run] = emulator.dispatches
    assert (merge_run["inputs"]["base-sha"], merge_run["inputs"]["head-sha"]) == (GOOD, MERGE)
    doc = document(EAGLE3)
    doc["base"]["sha"], doc["head"]["sha"] = GOOD, MERGE
    artifact = (
        contract.artifact_name(merge_run["inputs"]["correlation-id"]),
        archive({"results.json": json.dumps(doc)}),
    )
    before = len(emulator.requests)
    assert finish(bot, emulator, merge_run["run_id"], artifact=artifact).status_code == 202
    bot.wait_idle()
    # the merge run's own requests; the look reads the store alone; the dispatch job reads the
    # config as it stands when the GPU is spent (bisecting may have been switched off meanwhile)
    assert requests_since(emulator, before) == Counter(
        {
            f"GET /repos/{live.REPO}/contents/.github/perfbot.yml": 2,
            f"GET /repos/{live.REPO}/actions/runs/N/artifacts": 1,
            f"GET /repos/{live.REPO}/actions/artifacts/N/zip": 1,
            f"PATCH /repos/{live.REPO}/check-runs/N": 1,
            f"POST /repos/{live.REPO}/actions/workflows/perfbot-bench.yml/dispatches": 1,
        }
    )
    [merge_run_again, bisect] = emulator.dispatches
    return bisect


def written_since(emulator, since: int) -> list[str]:
    """What the bot changed on GitHub after request ``since``. A new installation token is no
    change: each worker thread asks for its own the first time it runs a job."""
    return [f"{r.method} {r.path}" for r in emulator.writes(since)]


def fresh_clients(bot) -> None:
    """Every worker thread builds a new client (and so asks for a new token) at its next job, as a
    thread that has not yet run one does."""
    bot.runtime.services.github._local = threading.local()


def bisect_files(report: dict) -> dict[str, bytes]:
    files = {
        "bisect.json": json.dumps(report).encode(),
        "reference.results.json": reports.results(GOOD, MERGE, SUITE),
    }
    if report["culprit"] is not None:
        files["confirm.results.json"] = reports.results(FIRST, CULPRIT, SUITE)
    return files


def test_a_regression_merged_is_bisected_once_and_its_culprit_named_on_its_pull_request(
    bot, emulator, monkeypatch
):
    bisect = merged_with_a_regression(bot, emulator)
    inputs = bisect["inputs"]
    [case] = bot.runtime.store.watch.cases(None)
    assert (case.state, case.source, case.good_sha, case.bad_sha, case.number) == (
        "bisecting",
        "merge",
        GOOD,
        MERGE,
        NUMBER,
    )
    assert (inputs["mode"], inputs["pr"], inputs["base-sha"], inputs["head-sha"], inputs["suites"]) == (
        "bisect",
        "",
        GOOD,
        MERGE,
        SUITE,
    )
    assert inputs["metric"] == case.metric and inputs["correlation-id"] == case.correlation_id
    run = emulator.runs[bisect["run_id"]]
    assert run["display_title"] == f"perfbot bench {case.correlation_id}"

    monkeypatch.setattr(reports, "SUITE", SUITE)
    report = reports.culprit_report()
    report["bad"] = MERGE
    before = len(emulator.requests)
    artifact = (contract.artifact_name(case.correlation_id), archive(bisect_files(report)))
    assert finish(bot, emulator, bisect["run_id"], artifact=artifact).status_code == 202
    bot.wait_idle()
    ended = bot.runtime.store.watch.get(case.key)
    assert (ended.state, ended.culprit_sha, ended.culprit_number) == ("confirmed", CULPRIT, NUMBER)
    [comment] = [
        c["body"]
        for c in emulator.comments_on(live.REPO, NUMBER)
        if c["body"].startswith(f"<!-- perfbot:regression:{case.key} -->")
    ]
    assert CULPRIT[:12] in comment and run["html_url"] in comment and "+25" in comment, comment
    # the run's job and the announcing job each read the config (whether an issue is wanted)
    assert requests_since(emulator, before) == Counter(
        {
            f"GET /repos/{live.REPO}/contents/.github/perfbot.yml": 2,
            f"GET /repos/{live.REPO}/actions/runs/N/artifacts": 1,
            f"GET /repos/{live.REPO}/actions/artifacts/N/zip": 1,
            # the culprit placed in GOOD..BAD by GitHub's history, not by the report's own list
            f"GET /repos/{live.REPO}/compare/{GOOD}...{CULPRIT}": 1,
            f"GET /repos/{live.REPO}/compare/{CULPRIT}...{MERGE}": 1,
            f"GET /repos/{live.REPO}/issues/N/comments": 1,
            f"POST /repos/{live.REPO}/issues/N/comments": 1,
            f"GET /repos/{live.REPO}/issues": 1,  # not opened already by an attempt that died
            f"POST /repos/{live.REPO}/issues": 1,
        }
    )
    [issue] = emulator.issues.values()
    assert CULPRIT[:12] in issue["title"] and comment in issue["body"]
    assert bot.runtime.store.watch.get(case.key).issue_number == issue["number"]

    before = len(emulator.requests)  # the same completed run delivered again: nothing more
    assert finish(bot, emulator, bisect["run_id"]).status_code == 202
    bot.wait_idle()
    assert len(emulator.dispatches) == 2 and len(bot.runtime.store.watch.cases(None)) == 1
    assert written_since(emulator, before) == []

    page = bot.client.get(f"/regressions/{case.key}").get_data(as_text=True)
    assert "culprit confirmed" in page and CULPRIT in page
    listing = bot.client.get(f"/api/v1/regressions?sha={MERGE}").get_json()
    assert [c["state"] for c in listing["cases"]] == ["confirmed"]


def test_a_regression_not_reproduced_names_no_commit_and_shows_both_environments(bot, emulator, monkeypatch):
    bisect = merged_with_a_regression(bot, emulator)
    [case] = bot.runtime.store.watch.cases(None)
    monkeypatch.setattr(reports, "SUITE", SUITE)
    report = reports.not_reproduced_report()
    report["good"], report["bad"] = GOOD, MERGE
    fresh_clients(bot)
    before = len(emulator.requests)
    artifact = (contract.artifact_name(case.correlation_id), archive(bisect_files(report)))
    assert finish(bot, emulator, bisect["run_id"], "failure", artifact=artifact).status_code == 202
    bot.wait_idle()
    assert bot.runtime.store.watch.get(case.key).state == "not_reproduced"
    assert written_since(emulator, before) == [], "nobody is named"
    page = bot.client.get(f"/regressions/{case.key}").get_data(as_text=True)
    assert "Not reproduced in today" in page and 'id="fingerprints"' in page


def test_a_culprit_no_recorded_pull_request_merged_is_named_on_its_commit(bot, emulator, monkeypatch):
    bisect = merged_with_a_regression(bot, emulator, head=FIRST)  # the pull request's head is not the culprit
    [case] = bot.runtime.store.watch.cases(None)
    monkeypatch.setattr(reports, "SUITE", SUITE)
    report = reports.culprit_report()
    report["bad"] = MERGE
    artifact = (contract.artifact_name(case.correlation_id), archive(bisect_files(report)))
    assert finish(bot, emulator, bisect["run_id"], artifact=artifact).status_code == 202
    bot.wait_idle()
    [comment] = emulator.commit_comments
    assert comment["commit_id"] == CULPRIT and comment["body"].startswith(
        f"<!-- perfbot:regression:{case.key} -->"
    )
    assert bot.runtime.store.watch.get(case.key).comment_url == comment["html_url"]


@pytest.mark.parametrize(
    "head,dies_storing",
    [
        (CULPRIT, "issue_number"),  # named on its pull request, then the issue
        (FIRST, "comment_url"),  # no recorded pull request: named on its commit
    ],
)
def test_a_worker_that_dies_after_naming_the_culprit_names_it_once_when_the_delivery_runs_again(
    bot, emulator, monkeypatch, head, dies_storing
):
    """GitHub took the comment (or the issue) but the worker died before storing where it is: the
    delivery's next attempt (a retry, or another worker's after kill -9) finds it and stores it,
    and names the culprit no second time."""
    bisect = merged_with_a_regression(bot, emulator, head=head)
    [case] = bot.runtime.store.watch.cases(None)
    monkeypatch.setattr(reports, "SUITE", SUITE)
    report = reports.culprit_report()
    report["bad"] = MERGE
    watch_store = bot.runtime.store.watch
    note, died = watch_store.note, []

    def dies_once(key, **changes):
        if dies_storing in changes and not died:
            died.append(changes)
            raise RuntimeError("the worker died here")
        return note(key, **changes)

    monkeypatch.setattr(watch_store, "note", dies_once)
    artifact = (contract.artifact_name(case.correlation_id), archive(bisect_files(report)))
    assert finish(bot, emulator, bisect["run_id"], artifact=artifact).status_code == 202
    bot.wait_idle()
    assert died, "the fault was not reached"
    ended = watch_store.get(case.key)
    marked = f"<!-- perfbot:regression:{case.key} -->"
    named = [c for c in emulator.comments_on(live.REPO, NUMBER) if c["body"].startswith(marked)]
    named += [c for c in emulator.commit_comments if c["body"].startswith(marked)]
    assert len(named) == 1 and ended.comment_url is not None, named
    assert named[0]["html_url"] in ended.comment_url or ended.comment_url.endswith(f"-{named[0]['id']}")
    [issue] = emulator.issues.values()
    assert ended.issue_number == issue["number"]
