"""A worker killed with SIGKILL after GitHub accepted its dispatch but before it recorded the run:
the delivery's retry finds the request it recorded first, looks the run up by its correlation id,
and does not dispatch a second benchmark."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from datetime import timedelta

import pytest
from sqlalchemy import update

from bot.adapters.store.tables import DeliveryRow
from bot.bootstrap import build
from bot.service import jobs
from bot.settings import Settings
from bot.web.app import create_app
from tests.core.judge.results_data import BASE_SHA, HEAD_SHA
from tests.emulator import live
from tests.emulator.bench_support import NUMBER
from tests.service import diffs
from tests.support import github_data
from tests.support.github_emulator import wait_for
from tests.support.serving import ROOT, environment
from tests.web.helpers import SECRET, deliver

pytestmark = pytest.mark.slow


def test_a_worker_killed_between_dispatch_and_its_record_dispatches_exactly_once(emulator, app_key, tmp_path):
    live.trust_app(emulator, app_key)
    live.add_repository(emulator, diffs.BASE_CONFIG, {"maintainer": "write"})
    emulator.add_pull(live.REPO, NUMBER, HEAD_SHA, diffs.HIGH, base_sha=BASE_SHA)
    posted = emulator.add_comment(live.REPO, NUMBER, "/bench", "maintainer")
    database, queue = f"sqlite:///{tmp_path / 'perfbot.db'}", f"sqlite:///{tmp_path / 'queue.db'}"
    settings = Settings(
        webhook_secrets=(SECRET,),
        app_id=live.APP_ID,
        private_key=app_key[0],
        github_api_url=emulator.base_url,
        database_url=database,
        queue_url=queue,
    )
    runtime = build(settings, retry_delay=0)  # the intake, and later the worker that takes over
    held = emulator.hold("POST", r"/dispatches$")
    log = (tmp_path / "worker.log").open("w")
    worker = subprocess.Popen(
        [sys.executable, "-m", "bot", "worker", "--threads", "1"],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=environment(
            PERFBOT_WEBHOOK_SECRET=SECRET,
            PERFBOT_APP_ID=str(live.APP_ID),
            PERFBOT_PRIVATE_KEY=app_key[0],
            PERFBOT_GITHUB_API_URL=emulator.base_url,
            PERFBOT_DATABASE_URL=database,
            PERFBOT_QUEUE_URL=queue,
        ),
    )
    consumer = None
    try:
        client = create_app(settings, runtime.services).test_client()
        payload = github_data.issue_comment(
            "/bench",
            number=NUMBER,
            repo=live.REPO,
            installation_id=1,
            login="maintainer",
            comment_id=posted["id"],
        )
        assert deliver(client, "issue_comment", payload).status_code == 202
        assert held.reached.wait(90), (tmp_path / "worker.log").read_text()[-3000:]
        os.kill(worker.pid, signal.SIGKILL)  # GitHub has the dispatch; the worker never hears back
        worker.wait(30)
        held.release.set()
        [dispatched] = emulator.dispatches
        [request] = runtime.store.benchmarks.for_pull(live.REPO, NUMBER)
        assert (request.status, request.run_id) == ("dispatching", None)

        with runtime.store.engine.begin() as connection:  # the dead worker's lease runs out
            connection.execute(
                update(DeliveryRow).values(
                    started_at=DeliveryRow.started_at - timedelta(seconds=jobs.LEASE_S + 1)
                )
            )
        consumer = runtime.start_consumer(1)  # its start-up sweep enqueues the lost delivery again

        def recorded() -> bool:
            return runtime.store.benchmarks.for_pull(live.REPO, NUMBER)[0].status == "running"

        assert wait_for(recorded, timeout=60), runtime.store.deliveries.counts()
        assert len(emulator.dispatches) == 1, "dispatched once"
        assert runtime.store.benchmarks.for_pull(live.REPO, NUMBER)[0].run_id == dispatched["run_id"]
        assert wait_for(lambda: runtime.store.deliveries.counts() == {"done": 1}, timeout=30)
        assert emulator.reactions_on(posted["id"]) == ["eyes", "rocket"]
        assert len(emulator.dispatches) == 1
    finally:
        held.release.set()
        if worker.poll() is None:
            worker.kill()
        if consumer is not None:
            consumer.stop(graceful=True)
        runtime.close()
        log.close()
