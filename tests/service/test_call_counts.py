"""Each delivery reads each fact from GitHub at most once and writes the sticky comment at most once:
the GitHub calls of every event flow, counted on the fake (tests/emulator/test_call_counts.py
counts the same flows' HTTP requests on the real adapter against the GitHub emulator)."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.service import diffs
from tests.service.test_bench import (
    NUMBER,
    REPO,
    comment,
    pull_request,
    send,
    upload_results,
    workflow_run,
)
from tests.service.test_bench import github as github  # noqa: F401 (fixtures)
from tests.service.test_bench import services as services  # noqa: F401

READS = (
    "pull",
    "pull_diff",
    "read_file",
    "permission",
    "artifacts",
    "download_artifact",
    "default_branch",
    "first_parent",
    "find_run",
)


def calls(github, since: int = 0) -> Counter:
    return Counter(name for name, _ in github.calls[since:])


def assert_each_fact_read_once(counted: Counter) -> None:
    assert all(counted[name] <= 1 for name in READS), counted
    assert counted["upsert_comment"] <= 1, counted


def test_a_review_reads_the_pull_request_the_config_and_the_diff_once_and_writes_once(services, github):
    github.diffs[(REPO, NUMBER)] = (
        diffs.MEDIUM
    )  # below the automatic runs' level: nobody's permission matters
    send(services, "pull_request", pull_request("opened"))
    counted = calls(github)
    assert_each_fact_read_once(counted)
    assert counted == Counter(
        pull=1, read_file=1, pull_diff=1, publish_check=1, sync_labels=1, upsert_comment=1
    )


def test_an_automatic_dispatch_adds_one_permission_one_dispatch_and_its_check(services, github):
    github.permissions[(REPO, "author")] = "write"
    send(services, "pull_request", pull_request("opened"))
    counted = calls(github)
    assert_each_fact_read_once(counted)
    assert counted == Counter(
        pull=1,
        read_file=1,
        pull_diff=1,
        permission=1,
        dispatch=1,
        publish_check=2,
        sync_labels=1,
        upsert_comment=1,
    )


def test_a_bench_on_a_reviewed_pull_request_never_reads_the_diff(services, github):
    send(services, "pull_request", pull_request("opened"))
    before = len(github.calls)
    send(services, "issue_comment", comment("/bench sglang-eagle3"))
    counted = calls(github, before)
    assert_each_fact_read_once(counted)
    assert counted == Counter(
        own_login=1, pull=1, read_file=1, permission=1, dispatch=1, publish_check=1, react=2, upsert_comment=1
    )


def test_a_completed_run_replaces_only_the_benchmark_section(services, github):
    send(services, "pull_request", pull_request("opened"))
    send(services, "issue_comment", comment("/bench sglang-eagle3"))
    run_id = github.dispatches[-1]["run_id"]
    upload_results(github, run_id)
    review_part = github.comments[(REPO, NUMBER)][0].split("### ⏱️ Benchmarks")[0]
    before = len(github.calls)
    send(services, "workflow_run", workflow_run(github, run_id))
    counted = calls(github, before)
    assert_each_fact_read_once(counted)
    assert counted == Counter(
        read_file=1, artifacts=1, download_artifact=1, publish_check=1, upsert_comment=1
    )
    body = github.comments[(REPO, NUMBER)][0]
    assert body.startswith(review_part) and "Benchmark verdict" in body, (
        "the stored review, not a new scoring"
    )


def test_a_merge_of_a_reviewed_head_reads_only_the_config_its_benchmark_decision_needs(services, github):
    github.diffs[(REPO, NUMBER)] = diffs.MEDIUM
    send(services, "pull_request", pull_request("opened"))
    before = len(github.calls)
    send(
        services,
        "pull_request",
        pull_request(
            "closed", merged=True, merge_commit_sha="d" * 40, state="closed", merged_at="2026-12-01T10:00:00Z"
        ),
    )
    assert calls(github, before) == Counter(read_file=1), (
        "the review's reasons are stored: no diff, no scoring"
    )
    [merge] = services.store.dashboard.merges()
    assert merge.level == "medium" and merge.reasons


def test_a_risky_merge_reads_the_config_and_the_parent_once(services, github):
    send(services, "pull_request", pull_request("opened"))
    github.parents[(REPO, "d" * 40)] = "0" * 40
    before = len(github.calls)
    send(
        services,
        "pull_request",
        pull_request(
            "closed", merged=True, merge_commit_sha="d" * 40, state="closed", merged_at="2026-12-01T10:00:00Z"
        ),
    )
    counted = calls(github, before)
    assert_each_fact_read_once(counted)
    assert counted == Counter(read_file=1, first_parent=1, dispatch=1, publish_check=1)


@pytest.mark.parametrize("event", ["opened", "synchronize"])
def test_a_redelivered_push_writes_nothing_new(services, github, event):
    send(services, "pull_request", pull_request(event))
    before = len(github.calls)
    send(services, "pull_request", pull_request(event))
    counted = calls(github, before)
    assert counted["publish_check"] == counted["sync_labels"] == 0, "the stored review says the same"
    assert counted["upsert_comment"] == 1 and counted["dispatch"] == 0


def test_a_dispatch_records_its_request_then_updates_it_three_times(services, github, monkeypatch):
    """Recorded (requested), then dispatching before GitHub hears of it (a retry must know it may have
    been sent), then running with its run before its check run is published (a check run GitHub refuses
    must not leave it dispatching), then its new check run's id: no write more. A stop of a request
    whose check run is known writes once."""
    updates: list[str] = []
    update = services.store.benchmarks.update
    monkeypatch.setattr(
        services.store.benchmarks, "update", lambda request: (updates.append(request.status), update(request))
    )
    send(services, "pull_request", pull_request("opened"))
    send(services, "issue_comment", comment("/bench sglang-eagle3"))
    assert updates == ["dispatching", "running", "running"]
    [request] = services.store.benchmarks.for_pull(REPO, NUMBER)
    assert request.run_id is not None and request.check_run_id is not None
    send(services, "issue_comment", comment("/bench cancel", comment_id=502))
    assert updates[3:] == ["cancelled"]


def test_a_bench_by_someone_without_write_access_reads_only_the_permission(services, github):
    """A stranger's comments cost perfbot one read each: the permission, asked first. The first one
    on a pull request is answered (a reaction and one reply); the next ones are not answered again."""
    github.permissions[(REPO, "visitor")] = "read"
    send(services, "issue_comment", comment("/bench", login="visitor", comment_id=1))
    assert calls(github) == Counter(own_login=1, permission=1, react=1, reply=1)
    for comment_id, body in ((2, "/bench"), (3, "/bench approve"), (4, "/bench cancel"), (5, "/bench help")):
        before = len(github.calls)
        send(services, "issue_comment", comment(body, login="visitor", comment_id=comment_id))
        assert calls(github, before) == Counter(own_login=1, permission=1), body
