"""Lease holders are named so that a dead one is recognised on its own host (and never judged
elsewhere); the heartbeat renews what runs; a dead worker's deliveries are taken over at once."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading

import pytest

from bot.service import jobs, leases
from bot.service.services import Services
from tests.service.fakes import FakeGitHubFactory
from tests.service.test_job_outcomes import RecordingQueue
from tests.support.github_emulator import wait_for

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process identity is read from /proc")


@linux
def test_a_process_is_alive_until_it_dies_and_is_dead_when_only_its_zombie_is_left():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        owner = leases._owner_of(child.pid)
        assert owner.split("/")[-1].startswith(f"{child.pid}.")
        assert not leases.is_dead(owner)
        child.kill()
        assert wait_for(lambda: leases.is_dead(owner), timeout=10), "a zombie is not a worker"
    finally:
        child.kill()
        child.wait()
    assert leases.is_dead(owner)


@linux
def test_a_pid_taken_by_another_process_is_a_dead_owner():
    host, namespace, process = leases.owner_id().rsplit("/", 2)
    pid, start = process.split(".")
    assert not leases.is_dead(leases.owner_id())
    assert leases.is_dead(f"{host}/{namespace}/{pid}.{int(start) + 1}")


def test_an_owner_of_another_host_or_namespace_or_no_name_is_never_judged_here():
    host, namespace, process = leases.owner_id().rsplit("/", 2)
    assert not leases.is_dead(f"elsewhere/{namespace}/999999999.1")
    assert not leases.is_dead(f"{host}/0123456789/999999999.1")
    assert not leases.is_dead("a worker of an earlier version")
    assert not leases.is_dead(f"{host}/-/999999999.-")


def test_a_job_running_past_the_limit_is_no_longer_renewed_and_said_so_once(caplog):
    clock = [0.0]
    running = leases.Running(clock=lambda: clock[0])
    running.add(1)
    clock[0] = 10.0
    running.add(2)
    assert running.renewable() == [1, 2]
    clock[0] = leases.MAX_JOB_S + 5
    assert running.renewable() == [2]
    assert running.renewable() == [2]
    assert sum("no longer renewed" in r.getMessage() for r in caplog.records) == 1
    running.discard(1)
    running.discard(2)
    assert running.renewable() == []


def test_the_heartbeat_beats_and_says_once_that_renewing_fails(caplog):
    beats: list[int] = []
    failing = threading.Event()

    def renew():
        beats.append(1)
        if failing.is_set():
            raise ConnectionError("database restarting")

    heartbeat = leases.Heartbeat(renew, interval_s=0.02).start()
    try:
        assert wait_for(lambda: len(beats) >= 3)
        failing.set()
        seen = len(beats)
        assert wait_for(lambda: len(beats) >= seen + 5)
    finally:
        heartbeat.stop()
    warnings = [r for r in caplog.records if r.name == "perfbot.leases" and r.levelno == logging.WARNING]
    assert len(warnings) == 1


@linux
def test_the_deliveries_of_a_dead_worker_are_taken_over_and_enqueued_at_once(sqlite_store):
    services = Services(store=sqlite_store, github=FakeGitHubFactory(), queue=RecordingQueue())
    claimed = [
        sqlite_store.deliveries.claim("1", f"g{n}", "pull_request", "opened", json.dumps({}).encode())
        for n in range(3)
    ]
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = leases._owner_of(child.pid)
    child.kill()
    child.wait()
    sqlite_store.deliveries.start(claimed[0], leases.LEASE_S, dead)
    sqlite_store.deliveries.start(claimed[1], leases.LEASE_S, dead)
    sqlite_store.deliveries.start(claimed[2], leases.LEASE_S, leases.owner_id())  # alive: this test
    assert jobs.take_over(services, owner="a consumer started in the dead one's place") == claimed[:2]
    assert services.queue.jobs == claimed[:2]
    assert sqlite_store.deliveries.holders() == [leases.owner_id()]
