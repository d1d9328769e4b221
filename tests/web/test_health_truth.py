"""`/healthz` tells the truth: down (503) while the database takes no write, degraded (200) when
the queue is unreachable, no consumer is running or deliveries fail; and the intake refuses with
503 and Retry-After exactly while it cannot store, and accepts again by itself."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from bot.bootstrap import build
from bot.service import failures, jobs, leases
from bot.service.services import Services
from bot.settings import Settings
from bot.web import health as health_module
from bot.web.app import create_app
from tests.service.fakes import FakeGitHubFactory
from tests.support import github_data
from tests.support.sqlite_locks import write_locked
from tests.web.helpers import SECRET, deliver

PRIVATE_REPO = "Codertocat/Hello-World"


def make(tmp_path, queue_url: str | None = None):
    settings = Settings(
        webhook_secrets=(SECRET,),
        database_url=f"sqlite:///{tmp_path / 'perfbot.db'}",
        queue_url=queue_url or f"sqlite:///{tmp_path / 'queue.db'}",
    )
    runtime = build(settings, github=FakeGitHubFactory())
    return create_app(settings, runtime.services).test_client(), runtime


@pytest.fixture
def bot(tmp_path):
    client, runtime = make(tmp_path)
    yield client, runtime
    runtime.close()


def consumer_seen(runtime) -> None:
    runtime.store.liveness.beat("a-consumer", datetime.now(UTC), True, 4)


def health(client):
    response = client.get("/healthz")
    return response.status_code, response.get_json()


def installation(n: int) -> dict:
    payload = github_data.installation_event("installation_repositories", "added")
    payload["repositories_added"] = [
        {**payload["repositories_added"][0], "id": 10_000 + n, "full_name": f"octo/r{n}", "name": f"r{n}"}
    ]
    return payload


def test_healthy_when_the_database_takes_writes_and_a_consumer_runs(bot):
    client, runtime = bot
    consumer_seen(runtime)
    status, body = health(client)
    assert (status, body["status"], body["database"], body["queue"], body["consumers"]) == (
        200,
        "ok",
        "ok",
        "ok",
        1,
    )


def test_degraded_but_in_rotation_without_a_consumer(bot):
    client, _ = bot
    status, body = health(client)
    assert (status, body["status"], body["problems"]) == (200, "degraded", ["consumers"])


def test_degraded_with_failed_deliveries_named_by_kind_and_hint_not_by_repository(bot):
    client, runtime = bot
    consumer_seen(runtime)
    delivery = runtime.store.deliveries.claim("1", "g", "pull_request", "opened", b"{}", PRIVATE_REPO)
    runtime.store.deliveries.start(delivery, 60, "w")
    error = failures.describe(failures.NoCredentials("no GitHub credentials: set PERFBOT_APP_ID ..."))
    runtime.store.deliveries.finish(delivery, "failed", error, "w", "permanent")
    status, body = health(client)
    assert (status, body["status"], body["problems"]) == (200, "degraded", ["deliveries"])
    last = body["deliveries"]["last_failure"]
    assert (last["failure"], last["error"], last["hint"]) == (
        "permanent",
        "NoCredentials",
        failures.NoCredentials.hint,
    )
    assert body["deliveries"]["failed_last_hour"] == 1
    assert PRIVATE_REPO not in json.dumps(body)


def test_degraded_when_the_queue_is_unreachable_and_deliveries_are_still_stored(tmp_path):
    client, runtime = make(tmp_path, queue_url="redis://127.0.0.1:1/0")
    try:
        consumer_seen(runtime)
        status, body = health(client)
        assert (status, body["status"], body["problems"]) == (200, "degraded", ["queue"])
        assert body["queue"].startswith("unavailable: QueueUnavailable: the queue Redis is unavailable")
        assert deliver(client, "installation_repositories", installation(1)).status_code == 202
        assert runtime.store.deliveries.counts() == {"pending": 1}, "stored: the sweep enqueues it later"
    finally:
        runtime.close()


def test_down_and_refusing_deliveries_while_the_files_cannot_be_written_then_back_by_itself(bot, tmp_path):
    client, runtime = bot
    consumer_seen(runtime)
    assert deliver(client, "installation_repositories", installation(1)).status_code == 202
    files = sorted(str(p) for p in tmp_path.iterdir() if p.is_file())
    if subprocess.run(["chattr", "+i", *files], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not possible here (needs root and an ext4-like filesystem)")
    try:
        status, body = health(client)
        assert (status, body["status"]) == (503, "down")
        assert body["database"].startswith("cannot write: ReadOnlyStorage")
        refused = deliver(client, "installation_repositories", installation(2))
        assert (refused.status_code, refused.headers["Retry-After"]) == (503, "30")
    finally:
        subprocess.run(["chattr", "-i", *files], check=True)
    assert deliver(client, "installation_repositories", installation(3)).status_code == 202
    assert health(client)[0] == 200
    assert runtime.store.deliveries.counts() == {"pending": 2}, "the refused one was never acknowledged"


def test_down_while_the_intake_just_failed_to_store_though_a_small_write_still_fits(bot):
    client, runtime = bot
    consumer_seen(runtime)
    runtime.services.storing.refused("database or disk is full")
    status, body = health(client)
    assert (status, body["status"]) == (503, "down")
    assert body["database"] == "the last delivery could not be stored: database or disk is full"
    assert deliver(client, "installation_repositories", installation(4)).status_code == 202
    assert health(client)[0] == 200, "stored again: up by itself"


def test_an_intake_that_failed_to_store_makes_only_its_own_app_down(bot, tmp_path, monkeypatch):
    """What an intake last stored is its process's `Services`' (built once per process, after
    gunicorn forks): a second app in the same interpreter reports on its own intake."""
    client, runtime = bot
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    other_client, other = make(other_dir)
    try:
        consumer_seen(runtime)
        consumer_seen(other)

        def full(*_args, **_kw):
            raise failures.StorageUnavailable("database or disk is full")

        monkeypatch.setattr(other.store.deliveries, "claim", full)
        assert deliver(other_client, "installation_repositories", installation(6)).status_code == 503
        assert health(other_client)[0] == 503
        assert health(client)[0] == 200, "this app's intake stored all it was given"
    finally:
        other.close()


def test_a_locked_database_is_answered_503_before_github_gives_up_and_health_says_down(bot, tmp_path):
    client, runtime = bot
    consumer_seen(runtime)
    with write_locked(tmp_path / "perfbot.db") as still_locked:
        refused = deliver(client, "installation_repositories", installation(5))
        assert (refused.status_code, refused.headers.get("Retry-After")) == (503, "30")
        assert still_locked(), "answered while the lock was held, not after it was let go"
        status, body = health(client)
        assert (status, body["status"]) == (503, "down")
        assert body["database"].startswith(
            "cannot write: StorageUnavailable: the database perfbot.db is unavailable"
        )
        assert "locked" in body["database"], body
        assert still_locked()
    assert deliver(client, "installation_repositories", installation(6)).status_code == 202
    assert runtime.store.deliveries.counts() == {"pending": 1}, "the refused one was never stored"


def test_a_locked_queue_file_stores_the_delivery_answers_in_time_and_health_names_the_file(bot, tmp_path):
    client, runtime = bot
    consumer_seen(runtime)
    with write_locked(tmp_path / "queue.db") as still_locked:
        stored = deliver(client, "installation_repositories", installation(7))
        assert stored.status_code == 202, "stored: the sweep enqueues it once the queue takes it"
        assert still_locked(), "answered while the lock was held, not after it was let go"
        status, body = health(client)
        assert (status, body["status"], body["problems"]) == (200, "degraded", ["queue"])
        assert body["queue"].startswith("unavailable: QueueUnavailable: the queue queue.db is unavailable"), (
            body
        )
        assert "locked" in body["queue"], body
        assert body["database"] == "ok"
        assert still_locked()
        assert runtime.queue.pending() == 0, "not enqueued while the file was locked"
    assert runtime.store.deliveries.counts() == {"pending": 1}
    assert jobs.requeue_stale(runtime.services, older_than_s=0) == 1
    assert runtime.queue.pending() == 1
    assert health(client)[1]["status"] == "ok"


def clock_off(runtime, seconds: float) -> Services:
    """This process's services with a clock ``seconds`` off the true time (another machine's)."""
    return replace(runtime.services, now=lambda: datetime.now(UTC) + timedelta(seconds=seconds))


def test_a_consumer_whose_clock_runs_behind_is_still_heard_from(bot):
    client, runtime = bot
    jobs.ConsumerDuties(clock_off(runtime, -(3 * leases.HEARTBEAT_S + 1)), threads=2, periodic=False).beat()
    status, body = health(client)
    assert (status, body["status"], body["consumers"]) == (200, "ok", 1)


def test_a_replica_whose_clock_runs_ahead_does_not_call_a_delivery_received_a_moment_ago_late(bot):
    client, runtime = bot
    consumer_seen(runtime)
    assert deliver(client, "installation_repositories", installation(8)).status_code == 202
    runtime.services.now = lambda: datetime.now(UTC) + timedelta(seconds=health_module.LATE_S + 60)
    status, body = health(client)
    assert (status, body["status"]) == (200, "ok"), body
    assert body["deliveries"]["oldest_waiting_s"] < health_module.LATE_S
