"""The bot-runner contract, and who may start what."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.bench import contract, policy
from bot.core.commands import grammar
from bot.core.config.schema import load
from bot.core.pulls import PullInfo

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
HEAD, BASE = "a" * 40, "b" * 40
CONFIG = load(
    "bench:\n  suites:\n    quick: {kind: command, command: 'true'}\n"
    "  dispatch: {max_rounds: 20, cooldown: {user: 600, pr: 60}}\n"
).bench


def pushed(*shas: str, same_second: bool = False) -> policy.Seen:
    """``shas`` pushed one a minute (or all in one second) before the comment, oldest first."""
    times = [NOW - timedelta(minutes=1 if same_second else len(shas) - i) for i in range(len(shas))]
    return policy.Seen(pushes=tuple(policy.Push(sha, at) for sha, at in zip(shas, times, strict=True)))


def facts(**changes) -> policy.Facts:
    """The facts of a maintainer's command on an open pull request of the repository itself;
    ``pull={"fork": True}`` makes it come from a fork."""
    pull = dict(
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
    wanted = changes.pop("pull", {})
    if wanted.pop("fork", False):
        wanted["head_repo"] = "stranger/r"
    base = dict(
        pull=PullInfo(**{**pull, **wanted}),
        login="maintainer",
        permission="write",
        approved=False,
        seen=pushed(HEAD),
        active=None,
        user_last=None,
        pr_last=None,
        now=NOW,
    )
    return policy.Facts(**{**base, **changes})


def test_the_inputs_are_the_contracts_seven_strings():
    inputs = contract.inputs(7, BASE, HEAD, ("verify-step", "quick"), 5, None, "pb-1")
    assert inputs == {
        "pr": "7",
        "base-sha": BASE,
        "head-sha": HEAD,
        "suites": "verify-step quick",
        "rounds": "5",
        "max-rounds": "",
        "correlation-id": "pb-1",
    }
    assert contract.inputs(None, BASE, HEAD, ("s",), None, None, "c")["pr"] == ""


def test_the_bisect_inputs_are_the_bench_inputs_of_one_suite_without_a_pull_request_plus_mode_and_metric():
    inputs = contract.bisect_inputs(BASE, HEAD, "verify-step", "verify_ms", 3, 5, "pb-2")
    assert inputs == {
        "pr": "",
        "base-sha": BASE,
        "head-sha": HEAD,
        "suites": "verify-step",
        "rounds": "3",
        "max-rounds": "5",
        "correlation-id": "pb-2",
        "mode": "bisect",
        "metric": "verify_ms",
    }
    assert contract.bisect_inputs(BASE, HEAD, "s", "", None, None, "c")["metric"] == ""
    assert "mode" not in contract.inputs(None, BASE, HEAD, ("s",), None, None, "c")


@given(st.text(max_size=80), st.text(max_size=80))
def test_a_bisect_sends_only_one_valid_suite_and_a_valid_metric(suite, metric):
    valid = bool(contract.SUITE.fullmatch(suite)) and bool(contract.METRIC.fullmatch(metric))
    try:
        inputs = contract.bisect_inputs(BASE, HEAD, suite, metric, None, None, "c")
    except ValueError:
        assert not valid
    else:
        assert valid and inputs["suites"] == suite and " " not in suite and "\n" not in metric


@pytest.mark.parametrize("sha", ["main", "a" * 39, "A" * 40, "a" * 40 + "\n"])
def test_only_full_shas_are_sent(sha):
    with pytest.raises(ValueError):
        contract.inputs(1, sha, HEAD, ("s",), None, None, "c")


def test_the_correlation_id_follows_the_work_and_the_run_name_carries_it():
    key = contract.work_key("command", "o/r", "123")
    assert contract.correlation_id(key) == contract.correlation_id(key)
    assert contract.correlation_id(key) != contract.correlation_id(contract.work_key("command", "o/r", "124"))
    assert contract.CORRELATION_ID.fullmatch(contract.correlation_id(key))
    title = contract.RUN_NAME.format(correlation_id=contract.correlation_id(key))
    assert contract.correlation_in(title) == contract.correlation_id(key)
    assert contract.correlation_in("Update README.md") is None
    assert contract.correlation_in("fix: perfbot bench") is None


def test_default_suites_come_from_dispatch_then_the_config_then_verify_step():
    assert contract.default_suites(CONFIG) == ("quick",)
    assert contract.default_suites(load("").bench) == ("verify-step",)
    assert contract.default_suites(load("bench: {dispatch: {suites: [a, b]}}").bench) == ("a", "b")


def test_a_maintainer_benchmarks_with_the_defaults():
    assert policy.decide(grammar.Run(), facts(), CONFIG) == policy.Dispatch(("quick",), None, None)


@pytest.mark.parametrize("permission", ["read", "none", "triage"])
def test_without_write_permission_nothing_starts(permission):
    decision = policy.decide(grammar.Run(), facts(permission=permission), CONFIG)
    assert isinstance(decision, policy.Refuse) and "write access" in decision.reason


def test_help_is_for_everyone():
    assert policy.decide(grammar.Help(), facts(permission="none"), CONFIG) == policy.ShowHelp()


@pytest.mark.parametrize(
    "command",
    [
        grammar.Run(),
        grammar.Approve(),
        grammar.Cancel(),
        grammar.Ack("x"),
        grammar.Invalid("x"),
        grammar.Help(),
    ],
)
def test_the_answer_to_someone_without_write_access_needs_no_other_fact(command):
    assert policy.without_write(command) == policy.decide(command, facts(permission="read"), CONFIG)


def test_a_closed_pull_request_is_not_benchmarked():
    decision = policy.decide(grammar.Run(), facts(pull={"open": False}), CONFIG)
    assert isinstance(decision, policy.Refuse) and "closed" in decision.reason


def test_a_fork_needs_an_approval_of_its_current_head():
    refused = policy.decide(grammar.Run(), facts(pull={"fork": True}), CONFIG)
    assert (
        isinstance(refused, policy.Refuse) and "fork" in refused.reason and "/bench approve" in refused.hint
    )
    assert isinstance(
        policy.decide(grammar.Run(), facts(pull={"fork": True}, approved=True), CONFIG), policy.Dispatch
    )
    assert policy.decide(grammar.Approve(), facts(pull={"fork": True}), CONFIG) == policy.ApproveHead(HEAD)


def test_an_approval_binds_to_the_head_its_author_read():
    older = "c" * 40
    reviewed = policy.Seen(reviewed=older)
    assert policy.decide(grammar.Approve(), facts(seen=reviewed), CONFIG) == policy.ApproveHead(older, False)
    assert policy.decide(grammar.Approve(), facts(seen=pushed(older, HEAD)), CONFIG) == policy.ApproveHead(
        HEAD
    )
    for seen in (pushed(HEAD, older), policy.Seen()):  # the head came after the comment; nothing known
        refused = policy.decide(grammar.Approve(), facts(seen=seen), CONFIG)
        assert isinstance(refused, policy.Refuse) and f"/bench approve {HEAD}" in refused.hint
        assert not refused.hint.startswith("/bench"), "a reply's line must never read as a command"


def test_an_older_head_pushed_again_after_the_comment_is_not_the_one_read():
    """X, then R before the comment; X again after it (not among the pushes before): R was read."""
    unread, read = "c" * 40, HEAD
    refused = policy.decide(
        grammar.Approve(), facts(seen=pushed(unread, read), pull={"head_sha": unread}), CONFIG
    )
    assert isinstance(refused, policy.Refuse) and f"({read[:12]})" in refused.reason
    assert f"/bench approve {unread}" in refused.hint


def test_pushes_in_the_same_second_before_the_comment_do_not_say_which_was_read():
    refused = policy.decide(grammar.Approve(), facts(seen=pushed("c" * 40, HEAD, same_second=True)), CONFIG)
    assert isinstance(refused, policy.Refuse) and "same second" in refused.reason
    assert policy.decide(
        grammar.Approve(), facts(seen=pushed(HEAD, HEAD, same_second=True)), CONFIG
    ) == policy.ApproveHead(HEAD)


def test_a_named_sha_binds_in_full_and_a_prefix_picks_one_push_before_the_comment():
    ground = HEAD[:7] + "0" * 33
    approve = policy.decide
    assert approve(grammar.Approve(HEAD), facts(seen=policy.Seen()), CONFIG) == policy.ApproveHead(HEAD)
    assert approve(grammar.Approve(HEAD[:7]), facts(seen=pushed(HEAD)), CONFIG) == policy.ApproveHead(HEAD)
    later = approve(grammar.Approve(HEAD[:7]), facts(seen=pushed(ground), pull={"head_sha": HEAD}), CONFIG)
    assert later == policy.ApproveHead(ground, current=False), "the push the prefix named, not the head now"
    for seen, why in ((pushed(ground, HEAD), "is the start of 2 commits"), (pushed("c" * 40), "starts with")):
        refused = approve(grammar.Approve(HEAD[:7]), facts(seen=seen), CONFIG)
        assert isinstance(refused, policy.Refuse) and why in refused.reason
        assert f"/bench approve {HEAD}" in refused.hint
        assert grammar.find(f"{refused.reason}.\n\n{refused.hint}.") is None


HEX = st.text("0123456789abcdef", min_size=40, max_size=40)


@given(
    named=st.one_of(st.none(), st.text("0123456789abcdef", min_size=7, max_size=40)),
    pushes=st.lists(st.tuples(HEX, st.integers(0, 5)), max_size=6),
    head=HEX,
)
def test_an_approval_is_of_a_full_sha_the_comment_named_or_pushed_before_it(named, pushes, head):
    """Whatever the comment names and whatever was pushed before it: what is approved is the full
    SHA named, or one push before the comment (the one a prefix names, alone), never another head."""
    seen = policy.Seen(
        pushes=tuple(
            policy.Push(sha, NOW - timedelta(seconds=10 - s)) for sha, s in sorted(pushes, key=lambda p: p[1])
        )
    )
    decision = policy.decide(grammar.Approve(named), facts(seen=seen, pull={"head_sha": head}), CONFIG)
    if isinstance(decision, policy.Refuse):
        assert f"/bench approve {head}" in decision.hint
        return
    assert isinstance(decision, policy.ApproveHead) and contract.SHA.fullmatch(decision.head_sha)
    assert decision.current == (decision.head_sha == head)
    if named is not None and len(named) == 40:
        assert decision.head_sha == named
    elif named is not None:
        assert [p.head_sha for p in seen.pushes if p.head_sha.startswith(named)] != []
        assert {p.head_sha for p in seen.pushes if p.head_sha.startswith(named)} == {decision.head_sha}
    else:
        assert decision.head_sha == seen.pushes[-1].head_sha == head


@pytest.mark.parametrize("command", [grammar.Invalid("x"), grammar.Cancel(), grammar.Run(("nope",))])
def test_no_refusal_hint_reads_as_a_command(command):
    refused = policy.decide(command, facts(), CONFIG)
    assert isinstance(refused, policy.Refuse)
    assert grammar.find(f"{refused.reason}.\n\n{refused.hint}.") is None


def test_cooldowns_per_person_and_per_pull_request():
    recent = policy.decide(grammar.Run(), facts(user_last=NOW - timedelta(seconds=30)), CONFIG)
    assert isinstance(recent, policy.Refuse) and "10 min" in recent.hint
    assert isinstance(
        policy.decide(grammar.Run(), facts(pr_last=NOW - timedelta(seconds=59)), CONFIG), policy.Refuse
    )
    assert isinstance(
        policy.decide(grammar.Run(), facts(pr_last=NOW - timedelta(seconds=61)), CONFIG), policy.Dispatch
    )


def test_rounds_beyond_the_cap_are_refused_with_the_cap():
    decision = policy.decide(grammar.Run((), 100000), facts(), CONFIG)
    assert isinstance(decision, policy.Refuse) and "(20)" in decision.reason
    assert isinstance(policy.decide(grammar.Run((), 5, 3), facts(), CONFIG), policy.Refuse)
    assert policy.decide(grammar.Run((), 5, 20), facts(), CONFIG) == policy.Dispatch(("quick",), 5, 20)


def test_unknown_suites_are_named_with_the_known_ones():
    decision = policy.decide(grammar.Run(("nope",)), facts(), CONFIG)
    assert (
        isinstance(decision, policy.Refuse) and "'nope'" in decision.reason and "verify-step" in decision.hint
    )


def test_the_same_head_is_not_benchmarked_twice_at_once_but_a_new_head_supersedes():
    same = policy.decide(grammar.Run(), facts(active=policy.Active(HEAD, "https://run")), CONFIG)
    assert isinstance(same, policy.Refuse) and "already running" in same.reason
    assert isinstance(
        policy.decide(grammar.Run(), facts(active=policy.Active("c" * 40, None)), CONFIG), policy.Dispatch
    )


def test_cancel_needs_a_running_benchmark_and_ack_keeps_its_reason():
    assert isinstance(policy.decide(grammar.Cancel(), facts(), CONFIG), policy.Refuse)
    assert (
        policy.decide(grammar.Cancel(), facts(active=policy.Active(HEAD, None)), CONFIG) == policy.CancelRun()
    )
    assert policy.decide(grammar.Ack("known"), facts(), CONFIG) == policy.Acknowledge(HEAD, "known")


def test_an_invalid_command_from_a_maintainer_is_refused_with_its_problem():
    decision = policy.decide(grammar.Invalid("'x;' is not a suite name"), facts(), CONFIG)
    assert isinstance(decision, policy.Refuse) and decision.reason == "'x;' is not a suite name"
    assert "write access" in policy.decide(grammar.Invalid("x"), facts(permission="read"), CONFIG).reason


def test_automatic_runs_need_the_level_a_trusted_author_and_no_fork():
    high = load("").bench
    assert policy.auto("high", "write", False, high)
    assert not policy.auto("medium", "write", False, high)
    assert not policy.auto("high", "read", False, high)
    assert not policy.auto("high", "admin", True, high)
    assert policy.auto("medium", "admin", False, load("bench: {dispatch: {auto: medium}}").bench)
    assert not policy.auto("high", "admin", False, load("bench: {dispatch: {auto: never}}").bench)


def test_merges_and_schedules():
    assert policy.on_merge("high", load("").bench) and not policy.on_merge(None, load("").bench)
    daily = load("bench: {dispatch: {schedule: daily, schedule_hour: 3}}").bench
    assert policy.schedule_slot(daily, NOW) == "2026-12-01"
    assert policy.schedule_slot(daily, NOW.replace(hour=2)) is None
    weekly = load("bench: {dispatch: {schedule: weekly, schedule_hour: 3}}").bench
    assert policy.schedule_slot(weekly, NOW) == "2026-W49"  # a Tuesday: Monday's slot is still due
    assert policy.schedule_slot(load("").bench, NOW) is None


def test_the_built_in_suites_are_the_runners():
    from bot.runner.suites import BUILT_IN

    assert contract.BUILT_IN_SUITES == BUILT_IN


@pytest.mark.parametrize(
    ("compared", "says"),
    [
        (None, "GitHub cannot compare"),
        (policy.CommitRange("identical", 0, 0), "are the same commit"),
        (policy.CommitRange("behind", 0, 4), "the range is reversed"),
        (policy.CommitRange("diverged", 2, 3), "is not an ancestor of"),
        (
            policy.CommitRange("ahead", policy.MAX_BISECT_COMMITS + 1, 0),
            f"holds {policy.MAX_BISECT_COMMITS + 1} commits",
        ),
    ],
)
def test_a_range_github_does_not_place_good_before_bad_within_the_cap_is_refused(compared, says):
    refusal = policy.bisect_range(BASE, HEAD, compared)
    assert isinstance(refusal, policy.Refuse) and says in refusal.reason


@pytest.mark.parametrize("count", [1, policy.MAX_BISECT_COMMITS])
def test_a_range_good_before_bad_within_the_cap_is_bisected(count):
    assert policy.bisect_range(BASE, HEAD, policy.CommitRange("ahead", count, 0)) is None
