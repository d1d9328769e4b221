"""What a push and a close do to a pull request's benchmarks, decided from gathered facts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.bench import contract
from bot.core.bench import pull_request as decide
from bot.core.config.schema import load
from bot.core.pulls import PullInfo

HEAD, OLD, BASE, MERGE = "a" * 40, "e" * 40, "b" * 40, "d" * 40
AUTO_HIGH = load("bench:\n  dispatch: {auto: high, on_merge: medium}\n").bench
NEVER = load("bench:\n  dispatch: {auto: never, on_merge: never}\n").bench


def pull(**changes) -> PullInfo:
    fields = dict(
        repo="o/r",
        number=7,
        open=True,
        draft=False,
        head_sha=HEAD,
        base_sha=BASE,
        head_repo="o/r",
        author="author",
        html_url="https://github.com/o/r/pull/7",
    )
    return PullInfo(**{**fields, **changes})


def run(correlation_id: str, head_sha: str, status: str = contract.RUNNING) -> decide.Run:
    return decide.Run(correlation_id, head_sha, status)


RUNS = (run("pb-old", OLD), run("pb-done", OLD, contract.COMPLETED), run("pb-head", HEAD, contract.REQUESTED))


@pytest.mark.parametrize("new_head,stopped", [(True, ("pb-old",)), (False, ())])
def test_a_new_head_supersedes_the_active_runs_of_other_heads_only(new_head, stopped):
    assert decide.superseded(new_head, HEAD, RUNS) == stopped
    plan = decide.on_push(decide.Push(new_head=new_head, pull=pull(), level="low", runs=RUNS), AUTO_HIGH)
    assert plan == decide.PushRuns(stopped, None)


def test_the_author_is_asked_only_when_everything_else_would_start_a_run():
    assert decide.asks_author(True, "high", pull(), AUTO_HIGH)
    assert not decide.asks_author(False, "high", pull(), AUTO_HIGH), "a base change brings no new head"
    assert not decide.asks_author(True, None, pull(), AUTO_HIGH), "no review, no risk"
    assert not decide.asks_author(True, "medium", pull(), AUTO_HIGH)
    assert not decide.asks_author(True, "high", pull(head_repo="stranger/r"), AUTO_HIGH), "a fork"
    assert not decide.asks_author(True, "high", pull(draft=True), AUTO_HIGH)
    assert not decide.asks_author(True, "high", pull(), NEVER)


@pytest.mark.parametrize(
    "permission,started", [("write", True), ("admin", True), ("read", False), (None, False)]
)
def test_an_automatic_run_of_the_head_needs_a_trusted_author(permission, started):
    plan = decide.on_push(
        decide.Push(new_head=True, pull=pull(), level="high", runs=(), author_permission=permission),
        AUTO_HIGH,
    )
    expected = decide.Start(
        key=contract.work_key("auto", "o/r", f"7:{HEAD}"),
        number=7,
        base_sha=BASE,
        head_sha=HEAD,
        suites=contract.default_suites(AUTO_HIGH),
        trigger="auto",
    )
    assert plan.start == (expected if started else None)


def close(**changes) -> decide.Close:
    fields = dict(repo="o/r", number=7, merged=True, merge_sha=MERGE, level="high", runs=())
    return decide.Close(**{**fields, **changes})


def test_a_close_acts_on_a_merge_or_on_active_runs_only():
    assert decide.close_acts(close())
    assert decide.close_acts(close(merged=False, runs=(run("pb-old", OLD),)))
    assert not decide.close_acts(close(merged=False, runs=(run("pb-done", OLD, contract.COMPLETED),)))


@pytest.mark.parametrize(
    "changes,needed",
    [
        ({}, True),
        ({"level": None}, False),  # a merge of an unreviewed head never starts a run
        ({"level": "none"}, False),
        ({"level": None, "merged": False, "runs": (run("pb-old", OLD),)}, True),  # runs to stop
    ],
)
def test_the_config_is_read_for_the_benchmarks_only_when_a_run_is_stopped_or_could_start(changes, needed):
    assert decide.close_needs_config(close(**changes)) is needed


@pytest.mark.parametrize(
    "changes,wanted",
    [
        ({}, True),
        ({"level": "low"}, False),
        ({"merged": False}, False),
        ({"merge_sha": None}, False),
        ({"merge_sha": "d" * 39}, False),
        ({"level": None}, False),
    ],
)
def test_only_a_risky_merge_commit_is_benchmarked(changes, wanted):
    assert decide.on_close(close(**changes), AUTO_HIGH).benchmark_merge is wanted


def test_a_close_cancels_the_active_runs_and_benchmarks_a_merge_against_its_parent():
    assert decide.on_close(close(runs=RUNS), AUTO_HIGH) == decide.CloseRuns(("pb-old", "pb-head"), True)
    assert decide.merge_run(close(), BASE, AUTO_HIGH) == decide.Start(
        key=contract.work_key("merge", "o/r", MERGE),
        number=None,
        base_sha=BASE,
        head_sha=MERGE,
        suites=contract.default_suites(AUTO_HIGH),
        trigger="merge",
        requested_by="#7",
    )
    assert decide.merge_run(close(), None, AUTO_HIGH) is None, "a root commit has nothing to compare with"
    assert decide.on_close(close(), NEVER) == decide.CloseRuns((), False)


@given(
    st.lists(
        st.tuples(
            st.sampled_from([HEAD, OLD]),
            st.sampled_from(
                [
                    contract.REQUESTED,
                    contract.DISPATCHING,
                    contract.RUNNING,
                    contract.COMPLETED,
                    contract.CANCELLED,
                ]
            ),
        ),
        max_size=6,
    ),
    st.booleans(),
)
def test_nothing_finished_and_nothing_of_the_head_is_ever_stopped_by_a_push(runs, new_head):
    found = tuple(run(f"pb-{i}", head, status) for i, (head, status) in enumerate(runs))
    stopped = set(decide.superseded(new_head, HEAD, found))
    assert all(
        r.status in contract.ACTIVE and r.head_sha != HEAD for r in found if r.correlation_id in stopped
    )
