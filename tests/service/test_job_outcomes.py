"""What a failed attempt becomes, decided once: permanent failures fail at once with one line,
transient ones and bugs are retried after a backoff, a bug's traceback is logged once, and the
attempt counts the log gives are the stored ones."""

from __future__ import annotations

import json
import logging

import pytest

from bot.service import failures, intake, jobs
from bot.service.events import PullRequestEvent
from bot.service.failures import RetryLater
from bot.service.ports.queue import Queue
from bot.service.router import Pipeline, Router
from bot.service.services import Services
from tests.service.fakes import FakeGitHubFactory
from tests.support import github_data
from tests.support.db_time import elapse


class RecordingQueue(Queue):
    def __init__(self):
        self.jobs: list[int] = []
        self.down = False

    def enqueue(self, delivery_id):
        if self.down:
            raise failures.QueueUnavailable("Redis is restarting")
        self.jobs.append(delivery_id)

    def pending(self):
        return len(self.jobs)

    def ping(self):
        pass


class Failing:
    """A pull request pipeline that raises the next of ``errors`` at each call, then succeeds."""

    def __init__(self, *errors: Exception):
        self.errors, self.calls = list(errors), 0

    def __call__(self, event, services):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)


@pytest.fixture
def services(sqlite_store):
    return Services(store=sqlite_store, github=FakeGitHubFactory(), queue=RecordingQueue())


def deliver(services, handler, guid="g-1") -> int:
    router = Router({PullRequestEvent: Pipeline(lambda _: True, handler)})
    payload = github_data.pull_request("opened", number=7)
    outcome = intake.accept(
        services,
        router,
        hook_id="1",
        guid=guid,
        event="pull_request",
        payload=payload,
        body=json.dumps(payload).encode(),
    )
    assert outcome is intake.Outcome.QUEUED
    services.router = router
    return services.queue.jobs[-1]


def run(services, delivery_id):
    return jobs.process(delivery_id, services, services.router, owner="test-worker")


def lines(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "perfbot.jobs"]


def test_a_permanent_failure_fails_at_once_with_one_line_and_no_traceback(services, caplog):
    handler = Failing(failures.NoCredentials("no GitHub credentials: set PERFBOT_APP_ID ..."))
    delivery = deliver(services, handler)
    assert run(services, delivery) == "failed"
    [line] = lines(caplog)
    assert line.levelno == logging.ERROR and line.exc_info is None
    assert "no GitHub credentials" in line.getMessage() and line.attempt == 1
    [failed] = services.store.deliveries.failures(5)
    assert (failed.failure, failed.attempts, failed.repo) == ("permanent", 1, "Codertocat/Hello-World")
    assert handler.calls == 1


def test_a_transient_failure_is_retried_after_the_backoff_honouring_retry_after(services, caplog):
    handler = Failing(
        failures.Transient("GitHub answered 502"), failures.Transient("rate limit", retry_after=45)
    )
    delivery = deliver(services, handler)
    with pytest.raises(RetryLater) as first:
        run(services, delivery)
    assert first.value.delay_s == failures.FIRST_RETRY_S
    with pytest.raises(RetryLater) as second:
        run(services, delivery)
    assert second.value.delay_s == 45
    assert run(services, delivery) == "done"
    attempts = [(r.attempt, r.failure, r.exc_info) for r in lines(caplog)]
    assert attempts == [(1, "transient", None), (2, "transient", None)]


def test_a_bug_is_retried_and_its_traceback_logged_once(services, caplog):
    handler = Failing(KeyError("number"), KeyError("number"), TypeError("odd answer"))
    delivery = deliver(services, handler)
    for _ in range(3):
        with pytest.raises(RetryLater):
            run(services, delivery)
    assert run(services, delivery) == "done"
    logged = [(r.attempt, r.failure, r.exc_info is not None) for r in lines(caplog)]
    assert logged == [(1, "bug", True), (2, "bug", False), (3, "bug", True)], "a new error: its traceback too"
    assert services.store.deliveries.counts() == {"done": 1}


def test_the_last_attempt_fails_for_good_and_its_count_is_the_stored_one(services, caplog):
    handler = Failing(*[RuntimeError("still broken")] * jobs.MAX_ATTEMPTS)
    delivery = deliver(services, handler)
    for _ in range(jobs.MAX_ATTEMPTS - 1):
        with pytest.raises(RetryLater):
            run(services, delivery)
    assert run(services, delivery) == "failed"
    records = lines(caplog)
    assert [r.attempt for r in records] == list(range(1, jobs.MAX_ATTEMPTS + 1))
    assert f"after {jobs.MAX_ATTEMPTS} attempts" in records[-1].getMessage()
    assert sum(r.exc_info is not None for r in records) == 1
    [failed] = services.store.deliveries.failures(5)
    assert (failed.attempts, failed.failure) == (jobs.MAX_ATTEMPTS, "bug")


def test_a_job_that_finds_the_database_away_asks_to_run_later(services, monkeypatch):
    delivery = deliver(services, Failing())

    def away(*_args, **_kw):
        raise failures.StorageUnavailable("the database is unavailable: connection refused")

    monkeypatch.setattr(services.store.deliveries, "start", away)
    with pytest.raises(RetryLater) as retry:
        run(services, delivery)
    assert retry.value.delay_s == jobs.STORAGE_RETRY_S


def test_a_delivery_stored_while_the_queue_was_down_is_enqueued_by_the_sweep_once_it_is_idle(services):
    services.queue.down = True
    handler = Failing()
    router = Router({PullRequestEvent: Pipeline(lambda _: True, handler)})
    payload = github_data.pull_request("opened", number=7)
    outcome = intake.accept(
        services,
        router,
        hook_id="1",
        guid="g",
        event="pull_request",
        payload=payload,
        body=json.dumps(payload).encode(),
    )
    assert outcome is intake.Outcome.QUEUED, "stored: acknowledged"
    services.queue.down = False
    assert jobs.requeue_stale(services) == 0, "not yet: it may still be on its way"
    elapse(services.store, jobs.UNQUEUED_IDLE_S + 1)
    assert jobs.requeue_stale(services) == 1
    assert services.queue.jobs == [1]


def test_a_delivery_the_database_cannot_store_is_refused_not_acknowledged(services, monkeypatch):
    def full(*_args, **_kw):
        raise failures.StorageUnavailable("database or disk is full")

    monkeypatch.setattr(services.store.deliveries, "claim", full)
    router = Router({PullRequestEvent: Pipeline(lambda _: True, Failing())})
    payload = github_data.pull_request("opened", number=7)
    outcome = intake.accept(
        services,
        router,
        hook_id="1",
        guid="g",
        event="pull_request",
        payload=payload,
        body=json.dumps(payload).encode(),
    )
    assert outcome is intake.Outcome.UNAVAILABLE
    assert services.storing.failing(within_s=10) == "database or disk is full"


def test_a_delivery_of_a_pull_request_another_worker_is_processing_waits_its_turn(services):
    first, second = deliver(services, Failing(), guid="push-1"), deliver(services, Failing(), guid="push-2")
    services.store.deliveries.start(first, jobs.LEASE_S, "another-worker")
    with pytest.raises(RetryLater) as later:
        run(services, second)
    assert later.value.delay_s == jobs.SUBJECT_BUSY_S
    services.store.deliveries.finish(first, "done", owner="another-worker")
    assert services.store.deliveries.start(second, 60, "x").attempts == 1, "not counted"
