"""The watch's store on SQLite and PostgreSQL: one case per change however many open it, state
moves that only one racer wins, a clean supersede, and a GPU budget charged once per work and
never past its limit by racing charges."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from bot.core.watch import budget
from bot.core.watch import cases as states
from bot.core.watch.cases import Span
from bot.service.records import BenchRequest, BenchResult, MetricPoint, RegressionCase

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def case(good: str = "a", bad: str = "b", **more) -> RegressionCase:
    span = Span("o/r", "verify-step", "verify_ms", good * 40, bad * 40)
    values = dict(
        key=span.key(),
        repo=span.repo,
        suite=span.suite,
        metric=span.metric,
        good_sha=span.good,
        bad_sha=span.bad,
        source="changepoint",
        state=states.DETECTED,
        installation_id=7,
        detected_at=NOW,
    )
    return RegressionCase(**{**values, **more})


def together(count: int, work) -> list:
    """``work()`` in ``count`` threads started at once; what each returned."""
    results: list = [None] * count
    barrier = threading.Barrier(count)

    def run(index: int) -> None:
        barrier.wait()
        results[index] = work()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_a_change_opens_one_case_however_many_open_it_at_once(store):
    opened = together(4, lambda: store.watch.open(case(change=0.1)))
    assert sorted(new for _, new in opened) == [False, False, False, True]
    assert {stored.key for stored, _ in opened} == {case().key}
    assert store.watch.get(case().key).change == 0.1
    assert store.watch.open(case(state=states.BISECTING))[0].state == states.DETECTED  # the first stays


def test_a_move_happens_once_and_only_from_its_sources(store):
    store.watch.open(case())
    wins = together(
        3,
        lambda: store.watch.move(
            case().key,
            states.BISECTING,
            states.sources_of(states.BISECTING),
            NOW,
            correlation_id="pb-1",
            gpu_minutes=40.0,
        ),
    )
    assert sum(w is not None for w in wins) == 1
    moved = store.watch.get(case().key)
    assert (moved.state, moved.correlation_id, moved.gpu_minutes) == ("bisecting", "pb-1", 40.0)
    assert store.watch.by_correlation("pb-1").key == case().key
    assert (
        store.watch.move(case().key, states.OUT_OF_BUDGET, states.sources_of(states.OUT_OF_BUDGET), NOW)
        is None
    )
    ended = store.watch.move(
        case().key,
        states.CONFIRMED,
        states.sources_of(states.CONFIRMED),
        NOW,
        culprit_sha="c" * 40,
        culprit_number=12,
    )
    assert (ended.state, ended.culprit_number, ended.finished_at) == ("confirmed", 12, NOW)
    with pytest.raises(ValueError):
        store.watch.move(case().key, states.CANCELLED, (states.CONFIRMED,), NOW, state="detected")


def test_a_moved_change_supersedes_an_open_case_only(store):
    old, _ = store.watch.open(case("a", "b"))
    new, moved = store.watch.supersede(old.key, case("a", "c"))
    assert moved and store.watch.get(old.key).state == "superseded"
    assert store.watch.get(old.key).superseded_by == new.key and new.state == "detected"
    assert store.watch.supersede(old.key, case("a", "c")) == (new, False)  # again: nothing more
    ended, _ = store.watch.open(case("d", "e", state=states.CONFIRMED))
    assert store.watch.supersede(ended.key, case("d", "f"))[1] is False
    assert store.watch.get(ended.key).state == "confirmed"
    # a bisect whose range no longer holds the change is superseded by a wider one
    bisecting, _ = store.watch.open(case("g", "h", state=states.BISECTING))
    wider, moved = store.watch.supersede(bisecting.key, case("f", "h"))
    assert moved and store.watch.get(bisecting.key).superseded_by == wider.key
    assert [c.key for c in store.watch.of_series("o/r", "verify-step", "verify_ms", states.OPEN)] == [
        new.key,
        case("d", "f").key,
        wider.key,
    ]
    assert [c.key for c in store.watch.cases(frozenset({"o/r"}), limit=2)] == [wider.key, bisecting.key]
    assert store.watch.cases(frozenset({"other/repo"})) == []


def test_the_budget_is_charged_once_per_work_and_racing_charges_never_pass_it(store):
    def charge(key: str, minutes: float = 50.0) -> bool:
        return store.watch.charge(
            key,
            "o/r",
            "2030-01-01",
            "merge",
            "high",
            minutes,
            lambda spent: budget.allows("high", spent, minutes, 120),
            NOW,
        )

    assert charge("w1") and charge("w1")
    results = together(4, lambda: charge(f"w-{threading.get_ident()}"))
    assert sorted(results) == [False, False, False, True]  # 50 + 50 fit in 120; a third does not
    spending = store.watch.spending("o/r", "2030-01-01")
    assert (spending.spent, spending.skipped, spending.skipped_minutes) == (100.0, 3, 150.0)
    store.watch.settle("w1", 10.0)
    assert store.watch.spending("o/r", "2030-01-01").spent == 60.0
    assert store.watch.spending("o/r", "2030-01-02").spent == 0.0


def test_a_series_reads_each_point_with_the_base_its_run_measured(store):
    request = BenchRequest(
        correlation_id="pb-m",
        repo="o/r",
        installation_id=None,
        number=None,
        base_sha="1" * 40,
        head_sha="2" * 40,
        suites=("verify-step",),
        trigger="merge",
        status="completed",
        created_at=NOW,
    )
    stored, _ = store.benchmarks.open(request)
    result = BenchResult(
        suite="verify-step",
        base_sha="1" * 40,
        head_sha="2" * 40,
        verdict="unchanged",
        headline_metric="verify_ms",
        headline_change=0.0,
        comparison="{}",
        on_default_branch=True,
    )
    point = MetricPoint("verify-step", "verify_ms", "ms", "lower", "2" * 40, 7.5)
    store.benchmarks.complete(stored, [result], [point], "run:o/r:1:1")
    rows = store.watch.series("o/r", "verify-step", "verify_ms")
    assert [(r.sha, r.base_sha, r.value, r.better) for r in rows] == [("2" * 40, "1" * 40, 7.5, "lower")]


def test_a_case_is_found_by_the_start_of_its_key_in_its_repository_only(store):
    first, _ = store.watch.open(case("a", "b"))
    second, _ = store.watch.open(case("c", "d"))
    assert store.watch.starting("o/r", first.key) == [first]
    assert store.watch.starting("o/r", "case-") == [first, second]  # at most 2: enough to say "more than one"
    assert store.watch.starting("other/repo", first.key) == []
    assert store.watch.starting("o/r", "case-%") == []  # a LIKE wildcard is a character, not a pattern


def test_bisects_asked_at_once_pass_the_cooldown_once_whatever_the_store_instance(database_url):
    """Eight `/bench bisect` of one person at once, of eight ranges, each through a store of its own:
    the cooldown decided inside the admission that opens the cases lets one open."""
    from bot.adapters.store.sql import SqlStore

    stores = [SqlStore.connect(database_url, migrate_schema=index == 0) for index in range(8)]
    seen: list = []

    def decide(cooldowns):
        seen.append(cooldowns)
        return ("refused", False) if cooldowns.user_last is not None else ("opened", True)

    def ask(index: int):
        asked = case(good=f"{index}", bad="f", source="command", requested_by="Maintainer", number=7)
        return stores[index].watch.open_by_command("o/r", 7, "maintainer", [asked], decide)

    indexes = iter(range(8))
    lock = threading.Lock()

    def next_ask():
        with lock:
            index = next(indexes)
        return ask(index)

    outcomes = together(8, next_ask)
    for each in stores:
        each.engine.dispose()
    assert sorted(decision for decision, _ in outcomes) == ["opened"] + ["refused"] * 7
    [(opened, new)] = next(cases for decision, cases in outcomes if decision == "opened")
    assert new and opened.requested_by == "Maintainer"
    assert all(c.user_last == NOW for c in seen if c.user_last is not None), "the login's case aside"


def test_a_bisect_s_own_case_does_not_cool_its_replay_and_is_found_not_opened_again(store):
    asked = case(source="command", requested_by="maintainer", number=7)
    first = store.watch.open_by_command("o/r", 7, "maintainer", [asked], lambda c: (c, True))
    again = store.watch.open_by_command("o/r", 7, "maintainer", [asked], lambda c: (c, True))
    assert first[0].user_last is None and again[0].user_last is None and again[0].pr_last is None
    assert [new for _, new in first[1]] == [True] and [new for _, new in again[1]] == [False]
    other = store.watch.open_by_command("o/r", 8, "MAINTAINER", [case("c", "d")], lambda c: (c, False))
    assert other == (store.watch.open_by_command("o/r", 8, "maintainer", [], lambda c: (c, False))[0], [])
    assert other[0].user_last == NOW and other[0].pr_last is None, "the login whatever its case; PR 7's"
    assert store.watch.get(case("c", "d").key) is None, "refused: nothing opened"
    store.watch.open(case("e", "f", number=9, requested_by="maintainer"))  # the watch's own, of PR 9's merge
    watched = store.watch.open_by_command("o/r", 9, "someone", [], lambda c: (c, False))[0]
    assert watched.pr_last is None, "a case the watch opened is no command: it starts no cooldown"
