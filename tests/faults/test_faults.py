"""Faults against real processes, small enough for CI; `benchmarks/bench_faults.py` runs the same
scenarios at full size. Each prints its figures (pytest -s shows them) and requires: nothing
acknowledged is lost, nothing is done twice, and the bot recovers by itself."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.support import fault_scenarios as scenarios
from tests.support.faults import (
    Postgres,
    Redis,
    Server,
    Stream,
    chattr,
    health,
    installation_deliveries,
    perfbot_env,
)
from tests.support.github_emulator import wait_for
from tests.support.missing import skip_or_fail
from tests.support.serving import children, web_worker

pytestmark = pytest.mark.slow


def nothing_lost_or_doubled(figures) -> None:
    print(figures.line())
    assert figures.acknowledged > 0, figures.line()
    assert (figures.lost, figures.doubled) == (0, 0), figures.line()
    assert figures.processed == figures.acknowledged, figures.line()


def test_a_consumer_killed_mid_review_and_mid_dispatch_is_replaced_and_its_work_done_once(
    emulator, app_key, tmp_path
):
    found = scenarios.consumer_killed_mid_job(emulator, app_key, tmp_path)
    print(found.line())
    assert found.review_s < 60 and found.dispatch_s < 60, found.line()
    assert (found.comments, found.checks, found.dispatches) == (1, 1, 1), found.line()


def test_the_consumer_then_the_whole_server_killed_mid_stream(tmp_path, github_test_data):
    figures = scenarios.killed_mid_stream(tmp_path, count=240, rate=40)
    nothing_lost_or_doubled(figures)
    assert figures.unanswered > 0, "the server was down for a while: some deliveries went unanswered"


def test_postgresql_and_redis_restarted_mid_stream(tmp_path, github_test_data):
    if Postgres.binaries() is None or not Redis.available():
        skip_or_fail("PostgreSQL's server binaries and redis-server are needed (.ci/run installs them)")
    figures = scenarios.services_restarted(tmp_path, count=200, rate=40)
    nothing_lost_or_doubled(figures)
    assert "503 outside that window 0" in figures.line(), "503 only while PostgreSQL was down"


def test_github_failing_in_every_way_then_recovering(emulator, app_key, tmp_path):
    figures = scenarios.github_faults(emulator, app_key, tmp_path, reviews=6)
    nothing_lost_or_doubled(figures)


@pytest.mark.parametrize("fill", ["quick", "slow"])
def test_a_full_disk_refuses_deliveries_with_503_and_recovers_by_itself(
    tmp_path, github_test_data, monkeypatch, fill
):
    if fill == "slow":
        # As on a loaded machine: the disk is full only once the stream is at 60% of its length,
        # where the fault used to end, so /healthz was asked nothing during it.
        filled = scenarios.fill
        monkeypatch.setattr(scenarios, "fill", lambda folder: (filled(folder), time.sleep(0.3 * 150 / 30))[0])
    figures = scenarios.disk_full(tmp_path, count=150, rate=30)
    if figures is None:
        pytest.skip("no tmpfs can be mounted here (needs root); CI runs as root")
    nothing_lost_or_doubled(figures)
    assert figures.refused > 0 and "server up after: True" in figures.line(), figures.line()
    assert " 0 up while refusing" in figures.line(), figures.line()
    assert "/healthz during the fault: 0 of" not in figures.line(), "it said down while the disk was full"


def test_files_made_immutable_refuse_deliveries_and_keep_the_master_up(tmp_path, github_test_data):
    """A web worker, a consumer or the checkpointer can still die of SIGBUS in a rare race (see
    docs/reliability.md and benchmarks/bench_immutable_stress.py), and is started again; the
    master cannot, and nothing acknowledged may be lost."""
    figures = scenarios.files_immutable(tmp_path, count=150, rate=30)
    if figures is None:
        pytest.skip("chattr +i is not possible here (needs root and an ext4-like filesystem)")
    nothing_lost_or_doubled(figures)
    assert "master up True" in figures.line()


def test_without_credentials_each_delivery_fails_at_once_with_one_clear_line(tmp_path, github_test_data):
    lines, figures = scenarios.without_credentials(tmp_path, count=3)
    print(figures.line())
    failures = [line for line in lines if "delivery failed for good" in line]
    assert len(failures) == 3 and all("no GitHub credentials" in line for line in failures), lines
    assert not any("Traceback" in line or '"exc"' in line for line in lines), lines
    assert "failed at once (1 attempt) 3" in figures.line()


def test_a_web_worker_started_while_the_files_are_immutable_serves_503_and_recovers(
    tmp_path, github_test_data
):
    server = Server(tmp_path, perfbot_env()).start()
    try:
        files = sorted(p for p in tmp_path.iterdir() if ".db" in p.name)
        if not chattr("+i", files):
            pytest.skip("chattr +i is not possible here (needs root and an ext4-like filesystem)")
        try:
            web = web_worker(server.process.pid)
            os.kill(web, signal.SIGKILL)  # gunicorn's master starts another, which boots without storage
            assert wait_for(
                lambda: web not in children(server.process.pid) and len(children(server.process.pid)) >= 1,
                timeout=30,
            )
            assert wait_for(lambda: health(server.base)[0] == 503, timeout=30), server.log()[-3000:]
            assert server.process.poll() is None, "the master stays up"
        finally:
            chattr("-i", files)
        assert wait_for(lambda: health(server.base)[0] == 200, timeout=30), server.log()[-3000:]
        [(event, body)] = installation_deliveries(1)
        stream = Stream([server.base], [(event, body)], rate=10).start()
        stream.join()
        assert stream.sent[0].status == 202
        assert "SIGBUS" not in server.log()
    finally:
        assert server.stop() == 0
