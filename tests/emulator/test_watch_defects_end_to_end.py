"""The watch's defects of issue 34 (items 4-5), each on its own, end to end on the GitHub emulator:
pull requests merged into the default branch (recorded, and not measured: their risk is below
`on_merge`), `/bench bisect` asked on a pull request's thread, the bisect's report read back, and
what GitHub then shows (comments, replies, dispatches) and the store keeps (cases, budget)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.emulator import live
from tests.emulator.watch_streams import CONFIG, SUITE, Main, culprit_report
from tests.service import diffs

THREAD, ELSEWHERE = 2, 3  # the open pull requests the commands are said on


def started(emulator, database_url, tmp_path, app_key, config: str = CONFIG):
    state = live.add_repository(emulator, config, {"maintainer": "write", "other": "write"})
    running = live.start(
        emulator, database_url, f"sqlite:///{tmp_path / 'queue.db'}", app_key, periodic=False
    )
    main = Main.start(running, emulator, state)
    for number in (THREAD, ELSEWHERE):
        head = f"{number:x}".rjust(40, "f")
        emulator.add_pull(
            live.REPO, number, head, diffs.COLD, base_sha=main.head, base_ref=live.DEFAULT_BRANCH
        )
    return main


@pytest.fixture
def main(emulator, database_url, tmp_path, app_key):
    running = started(emulator, database_url, tmp_path, app_key)
    yield running
    running.bot.stop()


def merged(main: Main, count: int) -> list[tuple[int, list[str], str]]:
    """``count`` pull requests of one commit each merged into the default branch, recorded."""
    return [main.merge(diffs.MEDIUM) for _ in range(count)]


def test_a_culprit_github_does_not_place_in_good_bad_is_not_believed_and_nobody_is_named(main):
    """The report is written where the code under test ran: it named an older, innocent merge (and
    listed it among its commits), which got a public comment before."""
    (innocent, _, older), (_, _, good), (_, _, bad) = merged(main, 3)
    main.say(f"/bench bisect {good[:12]} {bad[:12]} {SUITE} --metric step_ms", THREAD)
    [bisect] = main.bisects()
    [case] = main.bot.runtime.store.watch.cases(None)
    main.report_back(bisect, culprit_report(good, bad, [older, bad], older, "step_ms"))
    ended = main.bot.runtime.store.watch.get(case.key)
    assert (ended.state, ended.culprit_sha) == ("failed", None), ended
    assert main.culprit_comments() == [] and main.emulator.issues == {}
    assert [c["body"][:24] for c in main.emulator.comments_on(live.REPO, innocent)] == [
        "<!-- perfbot:risk-review"
    ], "the innocent pull request has its review alone"


def test_a_culprit_two_bisects_confirm_is_named_once(main):
    """Two `/bench bisect` of ranges that hold one culprit: named per case before, so twice."""
    (_, _, first), (_, [inner], second), (number, [last], culprit) = merged(main, 3)
    ranges = {first: [inner, second, last, culprit], second: [last, culprit]}
    for good, commits in ranges.items():
        main.say(f"/bench bisect {good[:12]} {culprit[:12]} {SUITE} --metric step_ms", THREAD)
        bisect = main.bisects()[-1]
        main.report_back(bisect, culprit_report(good, culprit, commits, culprit, "step_ms"))
    assert len(main.bisects()) == 2
    assert [c.state for c in main.bot.runtime.store.watch.cases(None)] == ["confirmed", "confirmed"]
    [comment] = main.culprit_comments()
    assert comment in main.emulator.comments_on(live.REPO, number)


def test_a_culprit_inside_a_pull_request_merged_with_a_merge_commit_is_named_on_that_pull_request(main):
    """The bisect walks into the merged pull request's own commits: the culprit is one of them (not
    its head), which the old watch named on the commit, where nobody looks."""
    (_, _, good), (number, (inner, head), merge) = merged(main, 1)[0], main.merge(diffs.MEDIUM, commits=2)
    main.say(f"/bench bisect {good[:12]} {merge[:12]} {SUITE} --metric step_ms", THREAD)
    [bisect] = main.bisects()
    main.report_back(bisect, culprit_report(good, merge, [inner, head, merge], inner, "step_ms"))
    [case] = main.bot.runtime.store.watch.cases(None)
    assert (case.state, case.culprit_sha, case.culprit_number) == ("confirmed", inner, number)
    [comment] = main.culprit_comments()
    assert comment in main.emulator.comments_on(live.REPO, number) and main.emulator.commit_comments == []


def test_a_single_commit_range_is_named_not_bisected(main):
    """GOOD..BAD holds BAD alone (a squashed pull request): there is nothing to bisect, the commit
    and its pull request are the answer; a bisect spent GPU on it before."""
    (_, _, good), (number, _, bad) = merged(main, 1)[0], main.merge(diffs.MEDIUM, squash=True)
    assert main.state.parents[bad] == [good]
    main.say(f"/bench bisect {good[:12]} {bad[:12]} {SUITE} --metric step_ms", THREAD)
    assert main.bisects() == []
    reply = main.replies(THREAD)[-1]
    assert bad[:12] in reply and f"#{number}" in reply, reply


def test_a_merge_into_another_branch_is_no_merge_of_the_default_branch(main):
    """Merges into any branch were recorded as the default branch's, and measured as such."""
    (_, _, good), _ = merged(main, 1)[0], main.merge()  # a risky one: the default branch's is measured
    runs = len(main.emulator.dispatches)
    assert runs == 1
    _, _, elsewhere = main.merge(base_ref="release")
    assert len(main.emulator.dispatches) == runs, "a merge into another branch is not measured"
    main.say(f"/bench bisect {good[:12]} {elsewhere[:12]} {SUITE}", THREAD)
    assert main.bisects() == [] and "matches no commit" in main.replies(THREAD)[-1]


def test_a_bisect_that_fails_gives_its_reserve_back_to_the_days_budget(
    emulator, database_url, tmp_path, app_key
):
    """Budget for one bisect's reserve: the first fails without a report (its run failed before
    writing one), and the second, asked for after, is dispatched the same day; the failed one's
    40 minutes were held for good before."""
    # a bisect is counted as 40 minutes before it runs: 45 hold one reserve, not two
    config = CONFIG.replace("budget: unlimited", "budget: 45")
    main = started(emulator, database_url, tmp_path, app_key, config)
    try:
        (_, _, first), (_, _, second), (_, _, third) = merged(main, 3)
        main.say(f"/bench bisect {first[:12]} {second[:12]} {SUITE} --metric step_ms", THREAD)
        [failing] = main.bisects()
        main.complete_without_results(failing, "failure")
        [case] = main.bot.runtime.store.watch.cases(None)
        assert case.state == "failed"
        today = datetime.now(UTC).date().isoformat()
        assert main.bot.runtime.store.watch.spending(live.REPO, today).spent < 40.0
        main.say(f"/bench bisect {second[:12]} {third[:12]} {SUITE} --metric step_ms", THREAD)
        assert len(main.bisects()) == 2, main.replies(THREAD)[-1]
    finally:
        main.bot.stop()


@pytest.mark.parametrize("bound", ["user", "pr"])
def test_bench_bisect_keeps_the_cooldowns_of_bench(emulator, database_url, tmp_path, app_key, bound):
    """One maintainer spent 235 of 240 minutes in seconds: `/bench bisect` ignored the cooldowns. A
    bisect counts as a `/bench` of who asked (``user``) and on the pull request it was asked on
    (``pr``)."""
    seconds = {"user": 600, "pr": 0} if bound == "user" else {"user": 0, "pr": 600}
    config = CONFIG.replace(
        "cooldown: {user: 0, pr: 0}", f"cooldown: {{user: {seconds['user']}, pr: {seconds['pr']}}}"
    )
    main = started(emulator, database_url, tmp_path, app_key, config)
    try:
        (_, _, first), (_, _, second), (_, _, third), (_, _, fourth) = merged(main, 4)
        main.say(f"/bench bisect {first[:12]} {second[:12]} {SUITE}", THREAD)
        main.say(f"/bench bisect {second[:12]} {third[:12]} {SUITE}", THREAD)
        assert len(main.bisects()) == 1
        assert "try again in" in main.replies(THREAD)[-1], main.replies(THREAD)[-1]
        main.say(f"/bench bisect {second[:12]} {third[:12]} {SUITE}", THREAD, login="other")
        if bound == "user":
            assert len(main.bisects()) == 2, "another maintainer is not held by the first one's cooldown"
        else:
            assert len(main.bisects()) == 1 and "try again in" in main.replies(THREAD)[-1]
            main.say(f"/bench bisect {third[:12]} {fourth[:12]} {SUITE}", ELSEWHERE, login="other")
            assert len(main.bisects()) == 2, "another pull request is not held by this one's cooldown"
    finally:
        main.bot.stop()


@pytest.mark.parametrize("which", ["reversed", "written two ways", "unrelated", "too long"])
def test_bench_bisect_refuses_a_range_github_does_not_place_with_a_clear_reply(main, which):
    (_, _, first), (_, _, second), (_, _, third) = merged(main, 3)
    for _ in range(130):  # pushed straight to the default branch
        main.commit("e")
    _, _, far = main.merge(diffs.MEDIUM)
    before = main.head  # a pull request merged into another history (a root of its own), recorded
    main.head = main.sha("e")
    main.state.parents[main.head] = []
    _, _, stranger = main.merge(diffs.MEDIUM)
    main.head = main.state.branches[live.DEFAULT_BRANCH] = before
    good, bad, says = {
        "reversed": (third, first, "reversed"),
        "written two ways": (second[:8], second[:12], "one commit"),
        "unrelated": (first, stranger, "unrelated"),
        "too long": (third, far, "132 commits, more than the 128"),
    }[which]
    main.say(f"/bench bisect {good[:12]} {bad[:12]} {SUITE}", THREAD)
    assert main.bisects() == [] and main.bot.runtime.store.watch.cases(None) == []
    assert says in main.replies(THREAD)[-1], main.replies(THREAD)[-1]


def test_the_culprit_comment_and_issue_give_the_interval_as_a_change(
    emulator, database_url, tmp_path, app_key
):
    """The confirmation's ratio interval (1.07, 1.09) was printed as a change: "+8.0% (95%
    interval +107.0% to +109.0%)"."""
    main = started(emulator, database_url, tmp_path, app_key, CONFIG + "  watch:\n    issue: true\n")
    try:
        (_, _, good), (number, [inner], culprit) = merged(main, 2)
        main.say(f"/bench bisect {good[:12]} {culprit[:12]} {SUITE} --metric step_ms", THREAD)
        [bisect] = main.bisects()
        main.report_back(bisect, culprit_report(good, culprit, [inner, culprit], culprit, "step_ms"))
        [comment] = main.culprit_comments()
        assert "+7.0% to +9.0%" in comment["body"] and "+107" not in comment["body"], comment["body"]
        [issue] = main.emulator.issues.values()
        assert "+7.0% to +9.0%" in issue["body"] and "+107" not in issue["body"]
        assert comment in main.emulator.comments_on(live.REPO, number)
    finally:
        main.bot.stop()


def test_the_sweep_serves_the_oldest_waiting_case_first_with_the_budget_a_bisect_gave_back(
    emulator, database_url, tmp_path, app_key
):
    """Budget for one bisect's reserve and a half: two more wait for it. The first bisect reports
    after a few runs, which frees most of its reserve: the hourly sweep, that same day, dispatches
    the older of the two waiting cases. The sweep served the newest first, and never reused budget
    freed the same day."""
    config = CONFIG.replace("budget: unlimited", "budget: 60").replace("schedule: daily", "schedule: never")
    main = started(emulator, database_url, tmp_path, app_key, config)
    try:
        merges = merged(main, 4)
        (_, _, a), (_, [pushed], b), (_, _, c), (_, _, d) = merges
        for good, bad in ((a, b), (b, c), (c, d)):
            main.say(f"/bench bisect {good[:12]} {bad[:12]} {SUITE} --metric step_ms", THREAD)
        [first] = main.bisects()
        opened = sorted(main.bot.runtime.store.watch.cases(None), key=lambda case: case.detected_at)
        assert [case.state for case in opened] == ["bisecting", "out_of_budget", "out_of_budget"]
        main.report_back(first, culprit_report(a, b, [pushed, b], b, "step_ms"))
        main.hourly(datetime.now(UTC))
        states = [main.bot.runtime.store.watch.get(case.key).state for case in opened]
        assert states == ["confirmed", "bisecting", "out_of_budget"], states
        assert [d["inputs"]["base-sha"] for d in main.bisects()] == [a, b]
    finally:
        main.bot.stop()


def test_the_dashboard_shows_the_days_budget_beside_what_it_spent(emulator, database_url, tmp_path, app_key):
    """The regressions page showed the minutes spent today, never the budget they are spent of."""
    main = started(
        emulator, database_url, tmp_path, app_key, CONFIG.replace("budget: unlimited", "budget: 45")
    )
    try:
        (_, _, good), (_, _, bad) = merged(main, 2)
        main.say(f"/bench bisect {good[:12]} {bad[:12]} {SUITE} --metric step_ms", THREAD)
        assert len(main.bisects()) == 1
        page = main.bot.client.get("/regressions").get_data(as_text=True)
        assert 'data-label="Daily budget">45<' in page, page
    finally:
        main.bot.stop()
