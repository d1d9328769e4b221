"""`perfbot serve` starts with the embedded defaults and answers a signed ping; bad settings exit 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import requests

from bot.cli.main import main
from bot.web.signature import sign
from tests.support.fixtures import redis_url  # noqa: F401, F811  (a fixture)
from tests.support.serving import PERFBOT, environment, serving


def test_serve_on_embedded_defaults_answers_a_signed_ping_and_stops_on_sigterm(tmp_path):
    with serving(tmp_path, environment(PERFBOT_WEBHOOK_SECRET="s3cret")) as base:
        body = b'{"zen": "Design for failure.", "hook_id": 1}'
        response = requests.post(
            f"{base}/webhook",
            data=body,
            timeout=5,
            headers={
                "Content-Type": "application/json",
                "X-GitHub-Event": "ping",
                "X-GitHub-Delivery": "d-1",
                "X-Hub-Signature-256": sign("s3cret", body),
            },
        )
        assert (response.status_code, response.json()) == (200, {"message": "pong"})
        unsigned = requests.post(
            f"{base}/webhook",
            data=body,
            timeout=5,
            headers={"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d-2"},
        )
        assert unsigned.status_code == 401
    assert (tmp_path / "perfbot.db").exists() and (tmp_path / "perfbot.queue.db").exists()


def clear_settings(monkeypatch) -> None:
    for name in [k for k in os.environ if k.startswith("PERFBOT_")]:
        monkeypatch.delenv(name)


def test_serve_without_a_webhook_secret_exits_2_with_one_line(tmp_path, monkeypatch, capsys):
    clear_settings(monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("perfbot: error: PERFBOT_WEBHOOK_SECRET")


def test_a_malformed_queue_url_exits_2(tmp_path, monkeypatch, capsys):
    clear_settings(monkeypatch)
    monkeypatch.setenv("PERFBOT_QUEUE_URL", "amqp://x")
    assert main(["worker"]) == 2
    assert "PERFBOT_QUEUE_URL" in capsys.readouterr().err


def test_perfbot_worker_consumes_deliveries_from_redis_and_stops_on_sigterm(tmp_path, redis_url):  # noqa: F811
    from bot.bootstrap import build
    from bot.settings import Settings
    from tests.support import github_data
    from tests.support.github_emulator import wait_for

    database = f"sqlite:///{tmp_path / 'perfbot.db'}"
    runtime = build(Settings(database_url=database, queue_url=redis_url))
    payload = github_data.installation_event("installation", "created")
    delivery = runtime.store.claim_delivery(
        "1", "g-worker", "installation", "created", json.dumps(payload).encode()
    )
    runtime.queue.enqueue(delivery)
    process = subprocess.Popen(
        [*PERFBOT, "worker", "--threads", "2"],
        cwd=tmp_path,
        text=True,
        env=environment(PERFBOT_DATABASE_URL=database, PERFBOT_QUEUE_URL=redis_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert wait_for(lambda: runtime.store.delivery_counts() == {"done": 1}, timeout=60)
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output
    assert {r.full_name for r in runtime.store.repositories()} == {
        r["full_name"] for r in payload["repositories"]
    }
