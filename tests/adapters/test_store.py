"""SqlStore on SQLite and PostgreSQL: durable dedupe, leases, sweeps, repositories, reviews, merges,
benchmark requests and results, work keys, approvals and acknowledgements."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

from sqlalchemy import inspect, text

from bot.adapters.store import migrate
from bot.adapters.store.sql import SqlStore
from bot.service.records import Ack, BenchRequest, BenchResult, Merge, MetricPoint, Reason, Repository, Review
from tests.support.db_time import elapse

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def test_a_delivery_guid_is_claimed_once_per_hook(store):
    first = store.deliveries.claim("9", "guid-1", "pull_request", "opened", b"{}")
    assert first is not None
    assert store.deliveries.claim("9", "guid-1", "pull_request", "opened", b"{}") is None
    assert store.deliveries.claim("10", "guid-1", "pull_request", "opened", b"{}") is not None


def test_a_claim_outlives_the_process_that_made_it(database_url):
    SqlStore.connect(database_url).deliveries.claim("9", "guid-r", "ping", None, b"{}")
    reopened = SqlStore.connect(database_url)
    assert reopened.deliveries.claim("9", "guid-r", "ping", None, b"{}") is None


def test_a_started_delivery_is_leased_until_finished_or_expired(store):
    delivery_id = store.deliveries.claim("9", "g", "pull_request", "opened", b'{"a": 1}')
    delivery = store.deliveries.start(delivery_id, 60)
    assert (delivery.payload, delivery.attempts, delivery.event) == (b'{"a": 1}', 1, "pull_request")
    elapse(store, 30)
    assert store.deliveries.start(delivery_id, 60) is None
    elapse(store, 31)
    assert store.deliveries.start(delivery_id, 60).attempts == 2
    store.deliveries.finish(delivery_id, "done")
    elapse(store, 86_400)
    assert store.deliveries.start(delivery_id, 60) is None
    assert store.deliveries.counts() == {"done": 1}


def test_released_and_abandoned_deliveries_are_found_by_the_sweep(store):
    abandoned = store.deliveries.claim("9", "a", "pull_request", "opened", b"{}")
    released = store.deliveries.claim("9", "b", "pull_request", "opened", b"{}")
    finished = store.deliveries.claim("9", "c", "pull_request", "opened", b"{}")
    store.deliveries.start(abandoned, 60)
    store.deliveries.start(released, 60)
    store.deliveries.release(released, "RuntimeError: boom")
    store.deliveries.finish(finished, "done")
    elapse(store, 10)
    assert store.deliveries.stale(60) == []
    elapse(store, 3600)
    assert store.deliveries.stale(60) == [abandoned, released]


def test_installation_events_keep_the_repository_list(store):
    store.installations.replace(1, [Repository(10, "o/a", 1), Repository(11, "o/b", 1)])
    store.installations.add(1, [Repository(12, "o/c", 1)])
    store.installations.remove_repositories(1, [10])
    store.installations.replace(2, [Repository(20, "p/z", 2)])
    assert [(r.full_name, r.installation_id) for r in store.installations.repositories()] == [
        ("o/b", 1),
        ("o/c", 1),
        ("p/z", 2),
    ]
    store.installations.remove(1)
    assert [r.id for r in store.installations.repositories()] == [20]


def test_calls_together_are_one_transaction_committed_at_its_end(store):
    delivery_id = store.deliveries.claim("9", "g", "installation_repositories", "added", b"{}")
    with store.together():
        assert store.deliveries.start(delivery_id, 60, "one") is not None
        store.installations.add(1, [Repository(10, "o/a", 1)])
        store.installations.remove_repositories(1, [11])  # a session joins it too
        assert [r.id for r in store.installations.repositories()] == [10]  # its own writes, seen
        with store.together():  # inside another, it is that one
            store.deliveries.finish(delivery_id, "done", owner="one")
    assert store.deliveries.counts() == {"done": 1}
    assert [r.id for r in store.installations.repositories()] == [10]


def test_calls_together_that_raise_leave_nothing_behind(store):
    class Crash(BaseException):
        pass

    delivery_id = store.deliveries.claim("9", "g", "installation_repositories", "added", b"{}")
    try:
        with store.together():
            store.deliveries.start(delivery_id, 60, "one")
            store.installations.add(1, [Repository(10, "o/a", 1)])
            raise Crash
    except Crash:
        pass
    assert store.installations.repositories() == []
    assert store.deliveries.start(delivery_id, 60, "two").attempts == 1  # never started before


def test_calls_together_take_the_writer_lock_once(tmp_path, monkeypatch):
    store = SqlStore.connect(f"sqlite:///{tmp_path / 'perfbot.db'}")
    taken: list[None] = []
    acquire = store.db._writer.acquire
    monkeypatch.setattr(
        store.db._writer, "acquire", lambda timeout_s: taken.append(None) or acquire(timeout_s)
    )
    delivery_id = store.deliveries.claim("9", "g", "installation_repositories", "added", b"{}")
    with store.together():
        store.deliveries.start(delivery_id, 60, "one")
        store.installations.add(1, [Repository(10, "o/a", 1)])
        store.deliveries.finish(delivery_id, "done", owner="one")
    assert len(taken) == 2  # the claim, then the three calls together
    store.engine.dispose()


def test_calls_together_are_this_threads_alone(store):
    """Another thread's calls meanwhile are transactions of their own, committed whatever
    becomes of the block."""
    done = threading.Event()

    def elsewhere() -> None:
        store.installations.add(2, [Repository(20, "p/z", 2)])
        done.set()

    try:
        with store.together():
            store.installations.add(1, [Repository(10, "o/a", 1)])
            thread = threading.Thread(target=elsewhere)
            thread.start()
            if store.engine.dialect.name != "sqlite":  # on SQLite it waits for the writer lock
                assert done.wait(10)
            raise ValueError("rolled back")
    except ValueError:
        pass
    thread.join(10)
    assert [r.id for r in store.installations.repositories()] == [20]


def test_the_last_review_of_a_pull_request_replaces_the_previous_one(store):
    first = Review(
        repo="o/a",
        number=3,
        head_sha="a" * 40,
        score=70,
        level="high",
        comment_id=555,
        check_run_id=9,
        blocks=("### high", "reasons"),
        wants_comment=True,
        reasons=(Reason("path.pynccl", 40.0, "NCCL communicator"),),
    )
    store.reviews.save(first)
    assert store.reviews.get("o/a", 3) == first
    second = Review(repo="o/a", number=3, head_sha="b" * 40, score=10, level="low", comment_id=555)
    store.reviews.save(second)
    assert store.reviews.get("o/a", 3) == second
    assert store.reviews.get("o/a", 4) is None


def merge(number: int, title: str, merge_sha: str, head_sha: str, score, level, merged_at) -> Merge:
    return Merge(
        repo="o/a",
        number=number,
        title=title,
        merge_sha=merge_sha,
        head_sha=head_sha,
        score=score,
        level=level,
        merged_at=merged_at,
    )


def test_merges_are_listed_newest_first_with_their_risk(store):
    old = datetime(2026, 1, 1, tzinfo=UTC)
    store.dashboard.record_merge(merge(1, "first", "m1", "h1", 80, "high", old))
    store.dashboard.record_merge(merge(2, "second", "m2", "h2", None, None, old + timedelta(days=1)))
    store.dashboard.record_merge(merge(1, "first", "m1", "h1", 80, "high", old))
    merges = store.dashboard.merges("o/a")
    assert [(m.number, m.level) for m in merges] == [(2, None), (1, "high")]
    assert merges[1].merged_at == old


def test_every_push_of_a_head_is_kept_in_order(store):
    """A commit pushed again is a later push (an approval's comment between them was written on the
    other head); the same push delivered twice is one; a time with another offset is the same instant."""
    x, r = "c" * 40, "a" * 40
    store.work.record_push("o/a", 3, x, NOW)
    store.work.record_push("o/a", 3, r, NOW + timedelta(minutes=1))
    store.work.record_push("o/a", 3, x, NOW + timedelta(minutes=3))
    store.work.record_push("o/a", 3, x, NOW + timedelta(minutes=3))  # a redelivery of the same event
    store.work.record_push("o/a", 4, "d" * 40, NOW)  # another pull request
    plus_two = timezone(timedelta(hours=2))
    comment_at = (NOW + timedelta(minutes=2)).astimezone(plus_two)
    assert store.work.pushes_before("o/a", 3, comment_at) == [(x, NOW), (r, NOW + timedelta(minutes=1))]
    assert store.work.pushes_before("o/a", 3, NOW + timedelta(minutes=4)) == [
        (x, NOW),
        (r, NOW + timedelta(minutes=1)),
        (x, NOW + timedelta(minutes=3)),
    ]
    assert store.work.pushes_before("o/a", 3, NOW) == [], "a push at the comment's second is not before it"


def test_pushes_of_one_second_keep_the_order_they_were_recorded_in(store):
    for sha in ("e" * 40, "c" * 40, "a" * 40):
        store.work.record_push("o/a", 3, sha, NOW)
    assert [sha for sha, _ in store.work.pushes_before("o/a", 3, NOW + timedelta(seconds=1))] == [
        "e" * 40,
        "c" * 40,
        "a" * 40,
    ]


def test_migrating_twice_changes_nothing(store):
    migrate.upgrade(store.engine)
    tables = set(inspect(store.engine).get_table_names())
    assert {"deliveries", "repositories", "reviews", "merges", "alembic_version"} <= tables


def test_the_database_answers_a_ping(store):
    store.ping()


def test_old_finished_deliveries_shed_their_payload_then_are_forgotten(store):
    done = store.deliveries.claim("9", "old", "pull_request", "opened", b'{"big": "payload"}')
    pending = store.deliveries.claim("9", "waiting", "pull_request", "opened", b"{}")
    store.deliveries.finish(done, "done")
    later = datetime.now(UTC) + timedelta(days=3)
    assert store.deliveries.prune(later, drop_payload_after_s=86_400, forget_after_s=30 * 86_400) == 0
    with store.engine.connect() as connection:
        payloads = dict(connection.execute(text("SELECT guid, payload FROM deliveries")).all())
    assert bytes(payloads["old"]) == b"" and bytes(payloads["waiting"]) == b"{}"
    assert store.deliveries.claim("9", "old", "pull_request", "opened", b"{}") is None, "still deduplicated"
    assert store.deliveries.prune(later + timedelta(days=40), 86_400, 30 * 86_400) == 1
    assert store.deliveries.claim("9", "old", "pull_request", "opened", b"{}") is not None
    assert store.deliveries.start(pending, 60) is not None


def test_the_migrations_build_exactly_the_tables_the_models_declare(store):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from bot.adapters.store.tables import Base

    with store.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert differences == []


def test_an_installation_removes_only_its_own_repositories(store):
    store.installations.replace(1, [Repository(10, "o/a", 1)])
    store.installations.remove_repositories(2, [10])
    assert [(r.id, r.installation_id) for r in store.installations.repositories()] == [(10, 1)]


def _request(correlation_id: str = "pb-1", **changes) -> BenchRequest:
    fields = dict(
        correlation_id=correlation_id,
        repo="o/r",
        installation_id=1,
        number=7,
        base_sha="b" * 40,
        head_sha="a" * 40,
        suites=("verify-step", "quick"),
        rounds=5,
        max_rounds=None,
        trigger="command",
        requested_by="maintainer",
        comment_id=11,
        status="requested",
        created_at=NOW,
    )
    return BenchRequest(**{**fields, **changes})


def test_a_bench_request_is_recorded_once_per_correlation_id(store):
    first, created = store.benchmarks.open(_request())
    again, created_again = store.benchmarks.open(_request(rounds=9))
    assert created and not created_again and again == first and again.rounds == 5
    assert first.suites == ("verify-step", "quick") and first.created_at == NOW and first.id
    store.benchmarks.update(
        replace(first, status="running", run_id=42, run_url="https://run", check_run_id=3)
    )
    stored = store.benchmarks.get("pb-1")
    assert (stored.status, stored.run_id, stored.run_url, stored.check_run_id) == (
        "running",
        42,
        "https://run",
        3,
    )


def test_requests_are_listed_per_pull_request_and_for_the_default_branch(store):
    store.benchmarks.open(_request("pb-1"))
    store.benchmarks.open(_request("pb-2", created_at=NOW + timedelta(minutes=1)))
    store.benchmarks.open(_request("pb-3", number=None, trigger="merge", requested_by="#7"))
    assert [r.correlation_id for r in store.benchmarks.for_pull("o/r", 7)] == ["pb-2", "pb-1"]
    assert [r.correlation_id for r in store.benchmarks.for_pull("o/r", None)] == ["pb-3"]
    asked = {
        user: store.benchmarks.admit("pb-new", "o/r", 7, user, lambda now: (now, None))[0]
        for user in ("maintainer", "someone")
    }
    assert asked["maintainer"].user_last == asked["maintainer"].pr_last == NOW + timedelta(minutes=1)
    assert asked["someone"].user_last is None and asked["someone"].pr_last == NOW + timedelta(minutes=1)
    assert [r.correlation_id for r in asked["someone"].active] == ["pb-2", "pb-1"]


def test_the_cooldowns_count_a_login_s_bench_whatever_its_case(store):
    store.benchmarks.open(_request("pb-1", requested_by="Maintainer"))
    seen, _ = store.benchmarks.admit("pb-new", "o/r", 8, "maintainer", lambda now: (now, None))
    assert seen.user_last == NOW and seen.pr_last is None


def test_a_completed_request_stores_its_results_and_points_once(store):
    request, _ = store.benchmarks.open(_request(number=None, trigger="merge"))
    done = replace(request, status="completed", conclusion="success", completed_at=NOW)
    result = BenchResult(
        suite="quick",
        base_sha="b" * 40,
        head_sha="a" * 40,
        verdict="regression",
        headline_metric="step_ms",
        headline_change=0.2,
        comparison='{"verdict": "regression"}',
        on_default_branch=True,
    )
    point = MetricPoint("quick", "step_ms", "ms", "lower", "a" * 40, 12.0)
    assert store.benchmarks.complete(done, [result], [point], "run:o/r:1:1")
    assert not store.benchmarks.complete(done, [result], [point], "run:o/r:1:1")
    assert store.benchmarks.results(request.id) == [result]
    assert store.benchmarks.get(request.correlation_id).status == "completed"
    with store.engine.connect() as connection:
        points = connection.execute(
            text("select metric, sha, value, result_id from metric_points")
        ).fetchall()
    assert [(m, s, v) for m, s, v, _ in points] == [("step_ms", "a" * 40, 12.0)] and points[0][3]


def test_a_request_that_never_reached_github_is_released_once_and_not_counted_by_the_cooldowns(store):
    store.benchmarks.open(_request("pb-requested"))
    store.benchmarks.open(
        _request("pb-dispatching", created_at=NOW + timedelta(minutes=1), status="dispatching")
    )
    store.benchmarks.open(_request("pb-running", number=8, status="running", run_id=5))
    later = NOW + timedelta(minutes=5)
    for correlation_id in ("pb-requested", "pb-dispatching"):
        released = store.benchmarks.release(correlation_id, "perfbot gave up", later)
        assert (released.status, released.error, released.completed_at) == (
            "failed",
            "perfbot gave up",
            later,
        )
        assert store.benchmarks.release(correlation_id, "again", later) is None, "released once"
    assert store.benchmarks.release("pb-running", "no", later) is None, (
        "a request with a run is left as it is"
    )
    assert store.benchmarks.release("pb-unknown", "no", later) is None
    assert store.benchmarks.get("pb-running").status == "running"
    seen, _ = store.benchmarks.admit("pb-new", "o/r", 7, "maintainer", lambda now: (now, None))
    assert seen.active == () and seen.pr_last is None, "neither ran"
    assert seen.user_last == NOW, "the running one, on another pull request, counts"


def test_work_keys_approvals_and_acks(store):
    assert store.work.claim("reply:o/r:1") and not store.work.claim("reply:o/r:1")
    assert store.work.done("reply:o/r:1") and not store.work.done("reply:o/r:2")
    store.work.approve("o/r", 7, "a" * 40, "maintainer")
    store.work.approve("o/r", 7, "a" * 40, "other")
    assert store.work.approved("o/r", 7, "a" * 40) and not store.work.approved("o/r", 7, "c" * 40)
    ack = Ack(
        repo="o/r",
        number=7,
        head_sha="a" * 40,
        user="maintainer",
        reason="known",
        comment_id=11,
        created_at=NOW,
    )
    assert store.work.add_ack(ack, "ack:o/r:11") and not store.work.add_ack(ack, "ack:o/r:11")
    assert store.work.acks("o/r", 7) == [ack]
    assert store.work.prune(datetime.now(UTC) + timedelta(days=1), 3600) == 2
    assert not store.work.done("reply:o/r:1")


def test_concurrent_admissions_admit_one_request_whatever_the_store_instance(database_url):
    """Eight `/bench` comments at once, each through a store of its own (as the worker threads and
    processes of a deployment have): the "one running" rule decided inside the admission admits one."""
    stores = [SqlStore.connect(database_url, migrate_schema=index == 0) for index in range(8)]
    start = threading.Barrier(len(stores))
    outcomes: list[str] = []

    def decide(now):
        time.sleep(0.01)  # what the decision reads must not change before its insert lands
        if now.active or now.user_last is not None:
            return "refused", None
        return "admitted", _request(correlation_id=f"pb-{threading.get_ident()}")

    def comment(store: SqlStore) -> None:
        start.wait()
        decision, _ = store.benchmarks.admit(f"pb-{threading.get_ident()}", "o/r", 7, "maintainer", decide)
        outcomes.append(decision)

    threads = [threading.Thread(target=comment, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in stores:
        store.engine.dispose()
    assert sorted(outcomes) == ["admitted"] + ["refused"] * 7
    check = SqlStore.connect(database_url)
    assert len(check.benchmarks.for_pull("o/r", 7)) == 1
    check.engine.dispose()


def test_an_admission_sees_its_own_request_recorded_by_an_earlier_attempt(store):
    store.benchmarks.open(_request("pb-replay"))
    decision, recorded = store.benchmarks.admit(
        "pb-replay", "o/r", 7, "maintainer", lambda now: (now.existing.correlation_id, None)
    )
    assert (decision, recorded) == ("pb-replay", None)
