"""Intake claims each delivery once; jobs process it once, retry failures, and sweep lost ones."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from sqlalchemy.orm import Session

from bot.adapters.store.tables import DeliveryRow
from bot.service import failures, intake, jobs
from bot.service.events import MalformedPayload
from bot.service.records import Repository
from bot.service.router import Pipeline, Router
from bot.service.routes import ROUTER
from bot.service.services import Services
from tests.service.fakes import FakeGitHubFactory, FakeQueue
from tests.support.db_time import elapse


class Recorder:
    """A router of one pipeline, for `pull_request` `opened` deliveries (the payload is the event)."""

    def __init__(self, failures: int = 0):
        self.calls: list[dict] = []
        self.failures = failures
        self.router = Router(
            {dict: Pipeline(lambda event: event.get("action") == "opened", self)},
            parse=lambda event, payload: payload,
            kinds={"pull_request": dict},
        )

    def __call__(self, payload, services):
        self.calls.append(payload)
        if self.failures:
            self.failures -= 1
            raise RuntimeError("GitHub said 502")


@pytest.fixture
def make(sqlite_store):
    def make(queue: FakeQueue | None = None) -> Services:
        # The database stamps deliveries with its own clock: the services' clock starts at the true time.
        start = datetime.now(UTC)
        return Services(
            store=sqlite_store, github=FakeGitHubFactory(), queue=queue or FakeQueue(), now=lambda: start
        )

    return make


def later(services: Services, seconds: float) -> None:
    """``seconds`` pass for what the database judges by its own clock (leases, stale deliveries,
    and the rest it stamped), as they pass for the services' clock, which stays where it is."""
    elapse(services.store, seconds)


def stored(services: Services, delivery_id: int) -> DeliveryRow | None:
    with Session(services.store.engine) as session:
        return session.get(DeliveryRow, delivery_id)


def accept(services, recorder, guid="g-1", hook="9", action="opened"):
    payload = {"action": action}
    return intake.accept(
        services,
        recorder.router,
        hook_id=hook,
        guid=guid,
        event="pull_request",
        payload=payload,
        body=json.dumps(payload).encode(),
    )


def test_a_delivery_is_queued_once_and_its_replay_is_a_duplicate(make):
    services, recorder = make(), Recorder()
    assert accept(services, recorder) is intake.Outcome.QUEUED
    assert accept(services, recorder) is intake.Outcome.DUPLICATE
    assert services.queue.jobs == [1]


def test_the_same_guid_from_another_hook_is_separate_work(make):
    services, recorder = make(), Recorder()
    accept(services, recorder, hook="1")
    assert accept(services, recorder, hook="2") is intake.Outcome.QUEUED


def test_an_action_no_handler_wants_is_ignored_without_storing(make):
    services, recorder = make(), Recorder()
    assert accept(services, recorder, action="labeled") is intake.Outcome.IGNORED
    assert services.store.deliveries.counts() == {}


def test_a_claim_survives_a_queue_outage_and_the_sweep_enqueues_it_later(make):
    services, recorder = make(FakeQueue(broken=True)), Recorder()
    assert accept(services, recorder) is intake.Outcome.QUEUED
    services.queue.broken = False
    assert jobs.requeue_stale(services) == 0, "not yet: its first attempt may still be coming"
    later(services, seconds=jobs.LEASE_S + 60)
    assert jobs.requeue_stale(services) == 1
    assert services.queue.jobs == [1]


def test_processing_runs_the_handler_once_even_when_the_job_runs_twice(make):
    services, recorder = make(), Recorder()
    accept(services, recorder)
    assert jobs.process(1, services, recorder.router) == "done"
    assert jobs.process(1, services, recorder.router) == "skipped"
    assert len(recorder.calls) == 1


def test_a_failed_attempt_is_released_for_the_retry_then_succeeds(make):
    services, recorder = make(), Recorder(failures=1)
    accept(services, recorder)
    with pytest.raises(failures.RetryLater):  # the queue runs it again once the backoff has passed
        jobs.process(1, services, recorder.router)
    assert stored(services, 1).status == "pending"
    later(services, seconds=60)
    assert jobs.process(1, services, recorder.router) == "done"


def test_a_delivery_failing_every_attempt_is_marked_failed_for_good(make):
    services, recorder = make(), Recorder(failures=100)
    accept(services, recorder)
    for _ in range(jobs.MAX_ATTEMPTS - 1):
        with pytest.raises(failures.RetryLater):
            jobs.process(1, services, recorder.router)
        later(services, seconds=600)
    assert jobs.process(1, services, recorder.router) == "failed"
    assert stored(services, 1).error.startswith("RuntimeError")


def test_a_delivery_held_by_a_live_worker_is_not_taken_twice(make):
    services, recorder = make(), Recorder()
    accept(services, recorder)
    assert services.store.deliveries.start(1, jobs.LEASE_S) is not None
    assert jobs.process(1, services, recorder.router) == "skipped"
    later(services, seconds=jobs.LEASE_S + 1)
    assert jobs.process(1, services, recorder.router) == "done"


def test_a_payload_missing_its_fields_fails_at_once_without_retries(make):
    services = make()
    body = b'{"action": "opened", "pull_request": {"number": 7}}'
    assert (
        intake.accept(
            services, ROUTER, hook_id="1", guid="g", event="pull_request", payload=json.loads(body), body=body
        )
        is intake.Outcome.MALFORMED
    )
    delivery_id = services.store.deliveries.claim("1", "g", "pull_request", "opened", body)  # stored before
    assert jobs.process(delivery_id, services, ROUTER) == "failed"
    assert stored(services, delivery_id).error.startswith("MalformedPayload: pull_request payload: ")


def test_housekeeping_requeues_lost_work_and_forgets_old_deliveries(make):
    services, recorder = make(), Recorder()
    accept(services, recorder, guid="lost")
    accept(services, recorder, guid="finished")
    services.store.deliveries.finish(2, "done")
    later(services, seconds=400 * 86_400)
    jobs.housekeeping(services)
    assert services.queue.jobs == [1, 2, 1]
    assert (stored(services, 1).status, stored(services, 2)) == ("pending", None)


# ------------------------------------------------ brief deliveries: lease, work and finish at once


class Rows:
    """A router of one brief pipeline, for `installation_repositories` deliveries: it records the
    repository of the payload, then fails ``failures`` times (after its write) or crashes."""

    def __init__(self, failures: int = 0, crash: BaseException | None = None):
        self.runs, self.failures, self.crash = 0, failures, crash
        self.router = Router(
            {dict: Pipeline(lambda event: True, self, brief=True)},
            parse=lambda event, payload: payload,
            kinds={"installation_repositories": dict},
        )

    def __call__(self, payload, services):
        self.runs += 1
        services.store.installations.add(5, [Repository(payload["id"], payload["name"], 5)])
        if self.crash is not None:
            raise self.crash
        if self.failures:
            self.failures -= 1
            raise RuntimeError("the disk said no")


def brief_delivery(services: Services, repo_id: int = 1) -> int:
    body = json.dumps({"id": repo_id, "name": f"o/r{repo_id}"}).encode()
    return services.store.deliveries.claim("1", f"g-{repo_id}", "installation_repositories", "added", body)


def writer_locks_taken(services: Services, monkeypatch) -> list[None]:
    """Every hold of the store's writer lock from now on, one entry each."""
    taken: list[None] = []
    lock = services.store.db._writer
    acquire = lock.acquire
    monkeypatch.setattr(lock, "acquire", lambda timeout_s: taken.append(None) or acquire(timeout_s))
    return taken


def test_an_installation_delivery_is_leased_worked_and_finished_in_one_hold_of_the_writer_lock(
    make, monkeypatch
):
    """The SQLite writer lock is what the intake waits for: one hold per delivery, not three
    (lease, the repository's row, finish)."""
    services = make()
    payload = {
        "action": "added",
        "installation": {"id": 5},
        "repositories_added": [{"id": 7, "full_name": "o/seven", "private": False}],
        "repositories_removed": [],
    }
    delivery_id = services.store.deliveries.claim(
        "1", "g", "installation_repositories", "added", json.dumps(payload).encode()
    )
    taken = writer_locks_taken(services, monkeypatch)
    assert jobs.process(delivery_id, services, ROUTER) == "done"
    assert len(taken) == 1
    row = stored(services, delivery_id)
    assert (row.status, row.attempts, row.lease_expires_at) == ("done", 1, None)
    assert [r.full_name for r in services.store.installations.repositories()] == ["o/seven"]
    assert jobs.process(delivery_id, services, ROUTER) == "skipped"


def test_a_pull_request_delivery_commits_its_lease_before_its_work(make, monkeypatch):
    """A review waits on GitHub: its lease is committed first, for the heartbeat to renew and the
    other workers to see, and its work is not one transaction with it."""
    services, recorder = make(), Recorder()
    accept(services, recorder)
    seen: list[str | None] = []
    recorder.router._pipelines[dict] = Pipeline(
        lambda event: True, lambda payload, services: seen.append(stored(services, 1).lease_owner)
    )
    assert jobs.process(1, services, recorder.router, owner="host/ns/1.1") == "done"
    assert seen == ["host/ns/1.1"]


def test_a_failed_brief_delivery_keeps_nothing_of_its_work_and_counts_one_attempt(make):
    services, rows = make(), Rows(failures=1)
    delivery_id = brief_delivery(services)
    with pytest.raises(failures.RetryLater):
        jobs.process(delivery_id, services, rows.router)
    row = stored(services, delivery_id)
    assert (row.status, row.attempts, row.lease_owner, row.failure) == ("pending", 1, None, "bug")
    assert row.error.startswith("RuntimeError: the disk said no")
    assert services.store.installations.repositories() == []  # rolled back with the transaction
    assert rows.runs == 1
    later(services, seconds=60)
    assert jobs.process(delivery_id, services, rows.router) == "done"
    assert (stored(services, delivery_id).attempts, rows.runs) == (2, 2)
    assert [r.full_name for r in services.store.installations.repositories()] == ["o/r1"]


def test_a_brief_delivery_failing_for_good_is_marked_failed(make):
    services = make()
    rows = Rows(crash=MalformedPayload("installation_repositories payload: no repositories"))
    delivery_id = brief_delivery(services)
    assert jobs.process(delivery_id, services, rows.router) == "failed"
    row = stored(services, delivery_id)
    assert (row.status, row.attempts, row.failure) == ("failed", 1, "permanent")
    assert services.store.installations.repositories() == []


def test_a_worker_killed_in_a_brief_delivery_leaves_it_as_it_was_for_the_sweep(make):
    """Killed between its statements, as a kill -9 would: nothing was committed, so the delivery
    is pending, held by nobody, and not attempted; the sweep enqueues it again."""

    class Killed(BaseException):
        pass

    services, rows = make(), Rows(crash=Killed())
    delivery_id = brief_delivery(services)
    with pytest.raises(Killed):
        jobs.process(delivery_id, services, rows.router)
    row = stored(services, delivery_id)
    assert (row.status, row.attempts, row.lease_owner) == ("pending", 0, None)
    assert services.store.installations.repositories() == []
    later(services, seconds=jobs.UNQUEUED_S + 1)
    assert jobs.requeue_stale(services) == 1
    assert jobs.process(delivery_id, services, Rows().router) == "done"
