"""The deliveries' leases in the database (SQLite and PostgreSQL): taken by one owner until they
run out or are released, renewed by their owner only, finished only by their holder; failures
kept with their kind; the liveness rows `/healthz` reads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.adapters.sqlite_files import ReadOnlyStorage
from bot.adapters.store.sql import SqlStore
from bot.service.failures import StorageUnavailable, SubjectBusy

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
LEASE = 60


def at(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def claim(store, guid: str = "g", repo: str | None = "octo/repo") -> int:
    return store.deliveries.claim("9", guid, "pull_request", "opened", b"{}", repo)


def test_a_lease_keeps_other_owners_out_until_it_runs_out(store):
    delivery = claim(store)
    first = store.deliveries.start(delivery, NOW, LEASE, "host/ns/1.1")
    assert (first.attempts, first.error) == (1, None)
    assert store.deliveries.start(delivery, at(59), LEASE, "host/ns/2.2") is None
    assert store.deliveries.start(delivery, at(61), LEASE, "host/ns/2.2").attempts == 2


def test_a_renewed_lease_does_not_run_out_and_only_its_owner_renews_it(store):
    delivery = claim(store)
    store.deliveries.start(delivery, NOW, LEASE, "me")
    assert store.deliveries.renew("someone-else", [delivery], at(50), LEASE) == 0
    assert store.deliveries.renew("me", [delivery], at(50), LEASE) == 1
    assert store.deliveries.start(delivery, at(100), LEASE, "other") is None, "renewed until 110 s"
    assert store.deliveries.stale(at(100), 30) == []
    assert store.deliveries.stale(at(111), 30) == [delivery], "not renewed since: its owner died elsewhere"


def test_only_the_holder_finishes_a_delivery(store):
    delivery = claim(store)
    store.deliveries.start(delivery, NOW, LEASE, "first")
    store.deliveries.start(delivery, at(61), LEASE, "second")  # the first one's lease ran out
    assert store.deliveries.finish(delivery, "done", owner="first") is False
    assert store.deliveries.finish(delivery, "done", owner="second") is True
    assert store.deliveries.finish(delivery, "done", owner="second") is False, "finished once"
    assert store.deliveries.counts() == {"done": 1}


def test_a_released_delivery_can_be_taken_at_once_and_the_sweep_waits_for_its_retry_time(store):
    delivery = claim(store)
    store.deliveries.start(delivery, NOW, LEASE, "me")
    store.deliveries.release(delivery, "Transient: GitHub answered 502", at(40), "me", "transient")
    assert store.deliveries.stale(at(30), 30) == [], "its retry is not due yet"
    assert store.deliveries.stale(at(71), 30) == [delivery], "due 31 s ago and nobody took it"
    again = store.deliveries.start(delivery, at(5), LEASE, "me")
    assert (again.attempts, again.error) == (2, "Transient: GitHub answered 502")


def test_a_dead_holders_leases_are_released_at_once(store):
    held = [claim(store, f"g{n}") for n in range(3)]
    for delivery in held[:2]:
        store.deliveries.start(delivery, NOW, LEASE, "dead")
    store.deliveries.start(held[2], NOW, LEASE, "alive")
    assert store.deliveries.holders() == ["alive", "dead"]
    assert store.deliveries.release_holder("dead", at(1)) == held[:2]
    assert store.deliveries.holders() == ["alive"]
    assert store.deliveries.start(held[0], at(2), LEASE, "alive").attempts == 2


def test_a_delivery_never_taken_is_stale_once_its_wait_has_passed(store):
    delivery = claim(store)
    received = datetime.now(UTC)
    assert store.deliveries.stale(received + timedelta(seconds=10), 30) == []
    assert store.deliveries.stale(received + timedelta(seconds=40), 30) == [delivery]


def test_failures_are_kept_with_their_kind_and_repository_and_counted(store):
    permanent, retrying, done = claim(store, "p", "octo/a"), claim(store, "r", "octo/b"), claim(store, "d")
    store.deliveries.start(permanent, NOW, LEASE, "me")
    store.deliveries.finish(permanent, "failed", "NoCredentials: no GitHub credentials", "me", "permanent")
    store.deliveries.start(retrying, NOW, LEASE, "me")
    store.deliveries.release(retrying, "KeyError: 'x'", at(10), "me", "bug")
    store.deliveries.start(done, NOW, LEASE, "me")
    store.deliveries.finish(done, "done", owner="me")
    [failed] = store.deliveries.failures(10)
    assert (failed.id, failed.repo, failed.failure, failed.attempts) == (permanent, "octo/a", "permanent", 1)
    assert store.deliveries.failures(10, frozenset({"octo/b"})) == []
    health = store.deliveries.health(datetime.now(UTC), datetime.now(UTC) - timedelta(hours=1))
    assert (health.failed, health.retrying) == (1, 1)
    assert health.last_failure.error.startswith("NoCredentials")
    assert health.oldest_pending_s is not None


def test_consumers_are_seen_by_their_heartbeat_and_forgotten_when_they_stop(store):
    store.liveness.beat("a", NOW, NOW, True, 4)
    store.liveness.beat("a", at(15), NOW, True, 4)
    store.liveness.beat("b", at(1), at(1), False, 2)
    assert [c.owner for c in store.liveness.consumers(at(10))] == ["a"]
    assert [(c.owner, c.seen_at) for c in store.liveness.consumers(NOW)] == [("a", at(15)), ("b", at(1))]
    store.liveness.stopped("a")
    assert store.liveness.forget(at(2)) == 1
    assert store.liveness.consumers(NOW) == []
    store.liveness.probe(NOW)


def test_a_sqlite_file_made_immutable_is_refused_before_it_is_touched_and_used_again_after(tmp_path, chattr):
    store = SqlStore.connect(f"sqlite:///{tmp_path / 'perfbot.db'}")
    try:
        claim(store, "before")
        files = sorted(str(p) for p in tmp_path.iterdir())
        chattr("+i", *files)
        with pytest.raises(ReadOnlyStorage):
            claim(store, "during")
        with pytest.raises(StorageUnavailable):
            store.liveness.probe(NOW)
        with pytest.raises(StorageUnavailable):
            store.ping()
        chattr("-i", *files)
        claim(store, "after")
        assert store.deliveries.counts() == {"pending": 2}
    finally:
        store.engine.dispose()


def test_a_database_that_is_down_is_storage_unavailable():
    store = SqlStore.connect("postgresql+psycopg://perfbot:perfbot@127.0.0.1:1/none", migrate_schema=False)
    with pytest.raises(StorageUnavailable, match="unavailable"):
        claim(store)
    store.engine.dispose()


def test_one_delivery_of_a_pull_request_is_processed_at_a_time(store):
    first = store.deliveries.claim("9", "push-1", "pull_request", "opened", b"{}", "octo/a", "octo/a#7")
    second = store.deliveries.claim("9", "push-2", "pull_request", "synchronize", b"{}", "octo/a", "octo/a#7")
    other = store.deliveries.claim("9", "push-3", "pull_request", "opened", b"{}", "octo/a", "octo/a#8")
    store.deliveries.start(first, NOW, LEASE, "one")
    with pytest.raises(SubjectBusy):
        store.deliveries.start(second, at(1), LEASE, "two")
    assert store.deliveries.start(other, at(1), LEASE, "two") is not None, "another pull request"
    assert store.deliveries.start(second, at(61), LEASE, "two").attempts == 1, "the first one's lease ran out"
    store.deliveries.finish(second, "done", owner="two")
    store.deliveries.release(first, "Transient: x", at(62))
    third = store.deliveries.claim("9", "push-4", "pull_request", "synchronize", b"{}", "octo/a", "octo/a#7")
    assert store.deliveries.start(third, at(63), LEASE, "two") is not None, "a released one does not block"


def test_a_delivery_nobody_took_is_found_again_only_after_another_wait(store):
    delivery = claim(store)
    found_at = datetime.now(UTC) + timedelta(seconds=40)
    assert store.deliveries.stale(found_at, 30) == [delivery]
    assert store.deliveries.stale(found_at + timedelta(seconds=10), 30) == [], "enqueued again a moment ago"
    assert store.deliveries.stale(found_at + timedelta(seconds=31), 30) == [delivery]
    assert store.deliveries.start(delivery, found_at, LEASE, "me").attempts == 1


def test_a_lease_taken_without_a_name_still_keeps_others_out_until_it_runs_out(store):
    delivery = claim(store)
    assert store.deliveries.start(delivery, NOW, LEASE) is not None
    assert store.deliveries.start(delivery, at(30), LEASE, "other") is None
    assert store.deliveries.start(delivery, at(61), LEASE, "other").attempts == 2


def test_a_delivery_waiting_for_its_pull_request_is_not_enqueued_again_while_another_holds_it(store):
    """Its own retry follows it (`SUBJECT_BUSY_S`): a sweep's copy would start another chain of
    retries at every sweep for as long as the other one runs."""
    now = datetime.now(UTC)
    first = store.deliveries.claim("9", "push-1", "pull_request", "opened", b"{}", "octo/a", "octo/a#7")
    waiting = store.deliveries.claim("9", "push-2", "pull_request", "synchronize", b"{}", "octo/a", "octo/a#7")
    store.deliveries.start(first, now, LEASE, "one")
    with pytest.raises(SubjectBusy):
        store.deliveries.start(waiting, now, LEASE, "two")
    later = now + timedelta(seconds=40)  # the first one's lease runs until 60 s
    assert store.deliveries.stale(later, 30) == []
    store.deliveries.finish(first, "done", owner="one")
    assert store.deliveries.stale(later, 30) == [waiting], "its turn came: if its retry was lost, the sweep's copy"


def test_a_finished_delivery_is_not_started_again_nor_told_to_wait_for_its_pull_request(store):
    now = datetime.now(UTC)
    done = store.deliveries.claim("9", "push-1", "pull_request", "opened", b"{}", "octo/a", "octo/a#7")
    store.deliveries.start(done, now, LEASE, "one")
    store.deliveries.finish(done, "done", owner="one")
    holder = store.deliveries.claim("9", "push-2", "pull_request", "synchronize", b"{}", "octo/a", "octo/a#7")
    store.deliveries.start(holder, now, LEASE, "two")
    assert store.deliveries.start(done, now, LEASE, "three") is None  # a copy of it ends, it does not poll


def test_the_dashboards_sessions_are_refused_as_the_rest_of_the_store_is(tmp_path, chattr):
    """Read while the file is immutable, a session would touch its WAL index: SIGBUS."""
    from bot.adapters.store.sessions import SqlSessionStore
    from bot.service.dashboard.sessions import DashboardSession

    store = SqlStore.connect(f"sqlite:///{tmp_path / 'perfbot.db'}")
    sessions = SqlSessionStore(store.db)
    try:
        sessions.create("k", DashboardSession(login="octocat", private_repos=frozenset({"octo/a"}), created_at=NOW,
                                              checked_at=NOW, expires_at=at(3600)))
        files = sorted(str(p) for p in tmp_path.iterdir())
        chattr("+i", *files)
        with pytest.raises(ReadOnlyStorage):
            sessions.get("k")
        with pytest.raises(ReadOnlyStorage):
            sessions.delete("k")
        chattr("-i", *files)
        assert sessions.get("k").login == "octocat"
    finally:
        store.engine.dispose()


def test_a_session_store_on_a_database_that_is_down_is_storage_unavailable():
    from bot.adapters.store.sessions import SqlSessionStore

    store = SqlStore.connect("postgresql+psycopg://perfbot:perfbot@127.0.0.1:1/none", migrate_schema=False)
    with pytest.raises(StorageUnavailable, match="unavailable"):
        SqlSessionStore(store.db).get("k")
    store.engine.dispose()
