"""The deliveries' leases in the database (SQLite and PostgreSQL): taken by one owner until they
run out or are released, renewed by their owner only, finished only by their holder, all by the
database's clock whatever the workers' own say; failures kept with their kind; the liveness rows
`/healthz` reads."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from bot.adapters.sqlite_files import ReadOnlyStorage
from bot.adapters.store.sql import SqlStore
from bot.service import jobs, leases
from bot.service.failures import StorageUnavailable, SubjectBusy
from bot.service.services import Services
from tests.service.fakes import FakeGitHubFactory, FakeQueue
from tests.support.db_time import elapse

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
LEASE = 60


def at(seconds: float) -> datetime:
    return NOW + timedelta(seconds=seconds)


def claim(store, guid: str = "g", repo: str | None = "octo/repo") -> int:
    return store.deliveries.claim("9", guid, "pull_request", "opened", b"{}", repo)


def test_a_lease_keeps_other_owners_out_until_it_runs_out(store):
    delivery = claim(store)
    first = store.deliveries.start(delivery, LEASE, "host/ns/1.1")
    assert (first.attempts, first.error) == (1, None)
    elapse(store, 59)
    assert store.deliveries.start(delivery, LEASE, "host/ns/2.2") is None
    elapse(store, 2)
    assert store.deliveries.start(delivery, LEASE, "host/ns/2.2").attempts == 2


def test_a_renewed_lease_does_not_run_out_and_only_its_owner_renews_it(store):
    delivery = claim(store)
    store.deliveries.start(delivery, LEASE, "me")
    elapse(store, 50)
    assert store.deliveries.renew("someone-else", [delivery], LEASE) == 0
    assert store.deliveries.renew("me", [delivery], LEASE) == 1
    elapse(store, 50)
    assert store.deliveries.start(delivery, LEASE, "other") is None, "renewed until 110 s"
    assert store.deliveries.stale(30) == []
    elapse(store, 11)
    assert store.deliveries.stale(30) == [delivery], "not renewed since: its owner died elsewhere"


def test_only_the_holder_finishes_a_delivery(store):
    delivery = claim(store)
    store.deliveries.start(delivery, LEASE, "first")
    elapse(store, 61)
    store.deliveries.start(delivery, LEASE, "second")  # the first one's lease ran out
    assert store.deliveries.finish(delivery, "done", owner="first") is False
    assert store.deliveries.finish(delivery, "done", owner="second") is True
    assert store.deliveries.finish(delivery, "done", owner="second") is False, "finished once"
    assert store.deliveries.counts() == {"done": 1}


def test_a_released_delivery_can_be_taken_at_once_and_the_sweep_waits_for_its_retry_time(store):
    delivery = claim(store)
    store.deliveries.start(delivery, LEASE, "me")
    retry_at = datetime.now(UTC) + timedelta(seconds=40)  # on this process's clock
    store.deliveries.release(delivery, "Transient: GitHub answered 502", retry_at, "me", "transient")
    elapse(store, 30)
    assert store.deliveries.stale(30) == [], "its retry is not due yet"
    elapse(store, 41)
    assert store.deliveries.stale(30) == [delivery], "due 31 s ago and nobody took it"
    again = store.deliveries.start(delivery, LEASE, "me")
    assert (again.attempts, again.error) == (2, "Transient: GitHub answered 502")


def test_a_dead_holders_leases_are_released_at_once(store):
    held = [claim(store, f"g{n}") for n in range(3)]
    for delivery in held[:2]:
        store.deliveries.start(delivery, LEASE, "dead")
    store.deliveries.start(held[2], LEASE, "alive")
    assert store.deliveries.holders() == ["alive", "dead"]
    assert store.deliveries.release_holder("dead") == held[:2]
    assert store.deliveries.holders() == ["alive"]
    assert store.deliveries.start(held[0], LEASE, "alive").attempts == 2


def test_a_delivery_never_taken_is_stale_once_its_wait_has_passed(store):
    delivery = claim(store)
    elapse(store, 10)
    assert store.deliveries.stale(30) == []
    elapse(store, 30)
    assert store.deliveries.stale(30) == [delivery]


def test_failures_are_kept_with_their_kind_and_repository_and_counted(store):
    permanent, retrying, done = claim(store, "p", "octo/a"), claim(store, "r", "octo/b"), claim(store, "d")
    store.deliveries.start(permanent, LEASE, "me")
    store.deliveries.finish(permanent, "failed", "NoCredentials: no GitHub credentials", "me", "permanent")
    store.deliveries.start(retrying, LEASE, "me")
    store.deliveries.release(
        retrying, "KeyError: 'x'", datetime.now(UTC) + timedelta(seconds=10), "me", "bug"
    )
    store.deliveries.start(done, LEASE, "me")
    store.deliveries.finish(done, "done", owner="me")
    [failed] = store.deliveries.failures(10)
    assert (failed.id, failed.repo, failed.failure, failed.attempts) == (permanent, "octo/a", "permanent", 1)
    assert store.deliveries.failures(10, frozenset({"octo/b"})) == []
    elapse(store, 30)
    health = store.deliveries.health(3600)
    assert (health.failed, health.retrying) == (1, 1)
    assert health.last_failure.error.startswith("NoCredentials")
    assert 30 <= health.oldest_pending_s < 3600
    elapse(store, 3600)
    assert store.deliveries.health(3600).failed == 0, "failed over an hour ago"


def test_consumers_are_seen_by_their_heartbeat_and_forgotten_when_they_stop(store):
    store.liveness.beat("b", NOW, False, 2)
    store.liveness.beat("a", NOW, True, 4)
    elapse(store, 14)
    store.liveness.beat("a", NOW, True, 4)
    assert [c.owner for c in store.liveness.consumers(10)] == ["a"]
    seen = store.liveness.consumers(60)
    assert [(c.owner, c.periodic, c.threads) for c in seen] == [("a", True, 4), ("b", False, 2)]
    assert seen[0].seen_at > seen[1].seen_at
    store.liveness.stopped("a")
    elapse(store, 100)
    assert store.liveness.forget(50) == 1
    assert store.liveness.consumers(3600) == []
    store.liveness.probe()


def test_one_delivery_of_a_pull_request_is_processed_at_a_time(store):
    first = store.deliveries.claim("9", "push-1", "pull_request", "opened", b"{}", "octo/a", "octo/a#7")
    second = store.deliveries.claim("9", "push-2", "pull_request", "synchronize", b"{}", "octo/a", "octo/a#7")
    other = store.deliveries.claim("9", "push-3", "pull_request", "opened", b"{}", "octo/a", "octo/a#8")
    store.deliveries.start(first, LEASE, "one")
    with pytest.raises(SubjectBusy):
        store.deliveries.start(second, LEASE, "two")
    assert store.deliveries.start(other, LEASE, "two") is not None, "another pull request"
    elapse(store, 61)
    assert store.deliveries.start(second, LEASE, "two").attempts == 1, "the first one's lease ran out"
    store.deliveries.finish(second, "done", owner="two")
    store.deliveries.release(first, "Transient: x")
    third = store.deliveries.claim("9", "push-4", "pull_request", "synchronize", b"{}", "octo/a", "octo/a#7")
    assert store.deliveries.start(third, LEASE, "two") is not None, "a released one does not block"


def test_a_delivery_nobody_took_is_found_again_only_after_another_wait(store):
    delivery = claim(store)
    elapse(store, 40)
    assert store.deliveries.stale(30) == [delivery]
    elapse(store, 10)
    assert store.deliveries.stale(30) == [], "enqueued again a moment ago"
    elapse(store, 21)
    assert store.deliveries.stale(30) == [delivery]
    assert store.deliveries.start(delivery, LEASE, "me").attempts == 1


def test_a_lease_taken_without_a_name_still_keeps_others_out_until_it_runs_out(store):
    delivery = claim(store)
    assert store.deliveries.start(delivery, LEASE) is not None
    elapse(store, 30)
    assert store.deliveries.start(delivery, LEASE, "other") is None
    elapse(store, 31)
    assert store.deliveries.start(delivery, LEASE, "other").attempts == 2


def test_a_delivery_waiting_for_its_pull_request_is_not_enqueued_again_while_another_holds_it(store):
    """Its own retry follows it (`SUBJECT_BUSY_S`): a sweep's copy would start another chain of
    retries at every sweep for as long as the other one runs."""
    first = store.deliveries.claim("9", "push-1", "pull_request", "opened", b"{}", "octo/a", "octo/a#7")
    waiting = store.deliveries.claim(
        "9", "push-2", "pull_request", "synchronize", b"{}", "octo/a", "octo/a#7"
    )
    store.deliveries.start(first, LEASE, "one")
    with pytest.raises(SubjectBusy):
        store.deliveries.start(waiting, LEASE, "two")
    elapse(store, 40)  # the first one's lease runs until 60 s
    assert store.deliveries.stale(30) == []
    store.deliveries.finish(first, "done", owner="one")
    assert store.deliveries.stale(30) == [waiting], "its turn came: if its retry was lost, the sweep's copy"


def test_a_finished_delivery_is_not_started_again_nor_told_to_wait_for_its_pull_request(store):
    done = store.deliveries.claim("9", "push-1", "pull_request", "opened", b"{}", "octo/a", "octo/a#7")
    store.deliveries.start(done, LEASE, "one")
    store.deliveries.finish(done, "done", owner="one")
    holder = store.deliveries.claim("9", "push-2", "pull_request", "synchronize", b"{}", "octo/a", "octo/a#7")
    store.deliveries.start(holder, LEASE, "two")
    assert store.deliveries.start(done, LEASE, "three") is None  # a copy of it ends, it does not poll


# ------------------------------------------------------------------ workers whose clocks disagree


class Job:
    """A router whose one handler runs ``meanwhile`` while the delivery's job holds its lease."""

    def __init__(self, meanwhile=lambda: None):
        self.meanwhile, self.ran = meanwhile, 0

    def brief(self, event) -> bool:  # its work runs under a committed lease, which others see
        return False

    def dispatch(self, event, payload, services) -> None:
        self.ran += 1
        self.meanwhile()


class Crash(BaseException):
    """A worker killed mid-job: nothing of the job's own handling runs."""


def worker(store, clock_s: float = 0.0) -> Services:
    """The services of a worker whose clock is ``clock_s`` off the true time."""
    return Services(
        store=store,
        github=FakeGitHubFactory(),
        queue=FakeQueue(),
        now=lambda: datetime.now(UTC) + timedelta(seconds=clock_s),
    )


def test_a_worker_whose_clock_runs_ahead_does_not_take_a_delivery_another_is_running(store):
    delivery, seen = claim(store), []
    ahead, second = worker(store, leases.LEASE_S + 1), Job()
    first = Job(meanwhile=lambda: seen.append(jobs.process(delivery, ahead, second, owner="host/ns/2.2")))
    assert jobs.process(delivery, worker(store), first, owner="host/ns/1.1") == "done"
    assert (seen, second.ran) == (["skipped"], 0)
    assert store.deliveries.counts() == {"done": 1}


def test_a_worker_whose_clock_runs_behind_holds_its_lease_for_all_of_it(store):
    delivery, seen = claim(store), []
    second = Job()
    first = Job(
        meanwhile=lambda: seen.append(jobs.process(delivery, worker(store), second, owner="host/ns/2.2"))
    )
    jobs.process(delivery, worker(store, -(leases.LEASE_S + 1)), first, owner="host/ns/1.1")
    assert (seen, second.ran) == (["skipped"], 0)


def test_a_heartbeat_whose_clock_runs_behind_still_renews_for_a_whole_lease(store):
    delivery, seen = claim(store), []
    this, second = worker(store), Job()
    behind = replace(this, now=lambda: datetime.now(UTC) - timedelta(seconds=leases.LEASE_S + 1))

    def meanwhile() -> None:
        jobs.ConsumerDuties(behind, threads=1, periodic=False).beat()  # renews what this process runs
        seen.append(jobs.process(delivery, worker(store), second, owner="host/ns/2.2"))

    jobs.process(delivery, this, Job(meanwhile), owner=leases.owner_id())
    assert (seen, second.ran) == (["skipped"], 0)


def test_a_consumer_renews_the_jobs_of_its_own_services_only(store, monkeypatch):
    """What a process runs is its `Services`' (`bootstrap.build` makes one per process), not a
    module's: a second one in the same interpreter (a test, another app) renews none of it."""
    delivery, renewed = claim(store), []
    renew = store.deliveries.renew
    monkeypatch.setattr(
        store.deliveries,
        "renew",
        lambda owner, ids, lease_s: renewed.append(list(ids)) or renew(owner, ids, lease_s),
    )
    this, other = worker(store), worker(store)

    def meanwhile() -> None:
        jobs.ConsumerDuties(other, threads=1, periodic=False).beat()
        jobs.ConsumerDuties(this, threads=1, periodic=False).beat()

    jobs.process(delivery, this, Job(meanwhile), owner=leases.owner_id())
    assert renewed == [[delivery]], "renewed once, by the consumer of the services that run it"


def test_a_sweep_whose_clock_runs_ahead_finds_no_live_lease_stale(store):
    delivery, found = claim(store), []
    ahead = worker(store, leases.LEASE_S + 1)
    first = Job(meanwhile=lambda: found.append(jobs.requeue_stale(ahead, older_than_s=jobs.UNQUEUED_S)))
    jobs.process(delivery, worker(store), first, owner="host/ns/1.1")
    assert found == [0] and ahead.queue.jobs == []


def test_a_dead_workers_delivery_taken_over_by_a_clock_that_runs_ahead_is_due_at_once(store):
    delivery = claim(store)
    with pytest.raises(Crash):
        jobs.process(delivery, worker(store), Job(meanwhile=_crash), owner=leases._owner_of(_a_dead_pid()))
    ahead = worker(store, 3600)
    assert jobs.take_over(ahead, owner="its successor") == [delivery]
    elapse(store, 1)
    sweep = worker(store)
    assert jobs.requeue_stale(sweep, older_than_s=0) == 1, "released just now, not an hour from now"


def _crash() -> None:
    raise Crash


def _a_dead_pid() -> int:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_sqlite_file_made_immutable_is_refused_before_it_is_touched_and_used_again_after(tmp_path, chattr):
    store = SqlStore.connect(f"sqlite:///{tmp_path / 'perfbot.db'}")
    try:
        claim(store, "before")
        files = sorted(str(p) for p in tmp_path.iterdir())
        chattr("+i", *files)
        with pytest.raises(ReadOnlyStorage):
            claim(store, "during")
        with pytest.raises(StorageUnavailable):
            store.liveness.probe()
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


def test_the_dashboards_sessions_are_refused_as_the_rest_of_the_store_is(tmp_path, chattr):
    """Read while the file is immutable, a session would touch its WAL index: SIGBUS."""
    from bot.adapters.store.sessions import SqlSessionStore
    from bot.service.ports.sessions import DashboardSession

    store = SqlStore.connect(f"sqlite:///{tmp_path / 'perfbot.db'}")
    sessions = SqlSessionStore(store.db)
    try:
        sessions.create(
            "k",
            DashboardSession(
                login="octocat",
                private_repos=frozenset({"octo/a"}),
                created_at=NOW,
                checked_at=NOW,
                expires_at=at(3600),
            ),
        )
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
