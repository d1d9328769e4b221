"""A `pull_request` delivery gathers, decides, then applies, as a `/bench` does: a push reads every
fact before its first GitHub write, so that nothing is published before all that its decisions
depend on was read; a close records the merge and cancels the runs first, and only then reads the
merge commit's parent for its run (tests/service/test_call_counts.py counts the same calls)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.service import failures
from tests.service import diffs
from tests.service.test_bench import NEW_HEAD, NUMBER, REPO, pull_request, send
from tests.service.test_bench import github as github  # noqa: F401 (fixtures)
from tests.service.test_bench import services as services  # noqa: F401
from tests.service.test_call_counts import READS

MERGE = "d" * 40
MERGED = dict(merged=True, merge_commit_sha=MERGE, state="closed", merged_at="2026-12-01T10:00:00Z")


def reads_after_the_first_write(github, since: int) -> list[str]:
    names = [name for name, _ in github.calls[since:]]
    first_write = next((i for i, name in enumerate(names) if name not in READS), len(names))
    return [name for name in names[first_write:] if name in READS]


def opened_with_a_run(services, github) -> None:
    """Reviewed, and a benchmark started by itself: the author of the high-risk push is trusted."""
    github.permissions[(REPO, "author")] = "write"
    send(services, "pull_request", pull_request("opened"))
    assert github.dispatches


def pushed_over_a_run(services, github) -> None:
    opened_with_a_run(services, github)
    github.heads[(REPO, NUMBER)] = NEW_HEAD
    github.pulls[(REPO, NUMBER)] = replace(github.pulls[(REPO, NUMBER)], head_sha=NEW_HEAD)


def trusted(services, github) -> None:
    github.permissions[(REPO, "author")] = "write"


@pytest.mark.parametrize(
    "arrange,delivery,reads",
    [
        # the author's permission is read before the check run and label are published
        (trusted, pull_request("opened"), {"pull", "read_file", "pull_diff", "permission"}),
        # a push over a running benchmark: the run is superseded after everything was read
        (
            pushed_over_a_run,
            pull_request("synchronize", sha=NEW_HEAD, minute=5),
            {"pull", "read_file", "pull_diff", "permission"},
        ),
        # a merge never reviewed: scored from its diff, nothing published
        (None, pull_request("closed", **MERGED), {"read_file", "pull_diff"}),
        # a close without a merge over a running benchmark
        (opened_with_a_run, pull_request("closed", state="closed"), {"read_file"}),
    ],
)
def test_every_read_comes_before_the_first_write(services, github, arrange, delivery, reads):
    if arrange is not None:
        arrange(services, github)
    since = len(github.calls)
    send(services, "pull_request", delivery)
    assert reads_after_the_first_write(github, since) == []
    assert {name for name, _ in github.calls[since:] if name in READS} == reads


def test_a_merge_is_recorded_and_its_runs_cancelled_before_the_merge_commit_is_read(services, github):
    opened_with_a_run(services, github)
    github.parents[(REPO, MERGE)] = "0" * 40
    since = len(github.calls)
    send(services, "pull_request", pull_request("closed", **MERGED))
    assert [name for name, _ in github.calls[since:]] == [
        "read_file",
        "cancel_run",
        "publish_check",
        "first_parent",
        "dispatch",
        "publish_check",
    ]


def test_a_merge_commit_github_does_not_find_costs_neither_the_record_nor_the_cancels(
    services, github, monkeypatch
):
    opened_with_a_run(services, github)

    def missing(repo, sha):
        raise failures.Permanent("422 No commit found for SHA")

    monkeypatch.setattr(github, "first_parent", missing)
    with pytest.raises(failures.Permanent):
        send(services, "pull_request", pull_request("closed", **MERGED))
    [merge] = services.store.dashboard.merges()
    assert merge.level == "high"
    assert [r.status for r in services.store.benchmarks.for_pull(REPO, NUMBER)] == ["cancelled"]


def test_a_push_with_no_head_to_review_and_no_run_to_stop_reads_only_the_pull_request(services, github):
    github.diffs[(REPO, NUMBER)] = diffs.MEDIUM
    github.pulls[(REPO, NUMBER)] = replace(github.pulls[(REPO, NUMBER)], draft=True)
    send(services, "pull_request", pull_request("synchronize", draft=True))
    assert [name for name, _ in github.calls] == ["pull"]
