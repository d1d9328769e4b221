"""`perfbot serve` starts with the embedded defaults and answers a signed ping, consumes the
embedded queue in a process it supervises; bad settings exit 2."""

from __future__ import annotations

import fcntl
import gc
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
import requests

from bot.adapters.sqlite_files import lock_file_beside
from bot.cli.main import main
from bot.web.signature import sign
from tests.support.fixtures import redis_url  # noqa: F401, F811  (a fixture)
from tests.support.github_emulator import wait_for
from tests.support.serving import (
    PERFBOT,
    alive,
    children,
    environment,
    free_port,
    served,
    serving,
    web_worker,
)
from tests.web.helpers import SECRET, headers

NOWHERE = "http://127.0.0.1:9"  # the discard port, closed: a worker's hourly task must not reach github.com


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


def test_serve_consumes_the_embedded_queue_in_a_process_of_its_own_and_restarts_it_when_killed(tmp_path):
    from bot.adapters.store.sql import SqlStore
    from tests.support import github_data
    from tests.support.github_emulator import wait_for

    def deliver(base: str, installation_id: int) -> None:
        payload = github_data.installation_event("installation", "created")
        payload["installation"]["id"] = installation_id
        body = json.dumps(payload).encode()
        response = requests.post(
            f"{base}/webhook", data=body, headers=headers("installation", body), timeout=10
        )
        assert response.status_code == 202, response.text

    with served(tmp_path, environment(PERFBOT_WEBHOOK_SECRET=SECRET)) as server:
        store = SqlStore.connect(f"sqlite:///{tmp_path / 'perfbot.db'}", migrate_schema=False)
        web = web_worker(server.process.pid)
        [consumer] = server.consumers()
        checkpointer = [
            pid for pid, command in server.children().items() if "bot.adapters.sqlite_files" in command
        ]
        assert consumer != web and len(server.children()) == 2 + len(checkpointer) and len(checkpointer) <= 1
        deliver(server.base, 1)
        assert wait_for(lambda: store.deliveries.counts() == {"done": 1}, timeout=60)

        # Frozen, the consumer takes nothing: the web worker only accepts and enqueues. It is frozen
        # while the test holds the database's writer lock, never inside one of its own writes
        # (its heartbeat, the sweep): a process stopped there would hold the lock, and the intake
        # rightly answers 503 after its deadline.
        with open(lock_file_beside(str(tmp_path / "perfbot.db")), "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            os.kill(consumer, signal.SIGSTOP)
            # Stopped for certain before the lock is let go: a consumer thread waiting for the lock
            # (its heartbeat) and not yet stopped would take it, and then stop holding it.
            assert wait_for(lambda: stopped_threads(consumer), timeout=10)
            fcntl.flock(lock, fcntl.LOCK_UN)
        deliver(server.base, 2)
        time.sleep(1)
        assert store.deliveries.counts() == {"done": 1, "pending": 1}

        # Killed, it is started again, and the new one processes what waited in the queue.
        os.kill(consumer, signal.SIGKILL)
        assert wait_for(lambda: server.consumers() not in ([], [consumer]), timeout=30)
        [replacement] = server.consumers()
        assert wait_for(lambda: store.deliveries.counts() == {"done": 2}, timeout=60)
        assert not alive(consumer) and alive(replacement)
        store.engine.dispose()

        # Nobody's commit checkpoints so few writes: the master copies the WAL into the file.
        def checkpointed() -> bool:
            shutil.copyfile(tmp_path / "perfbot.db", tmp_path / "file-alone.db")
            with sqlite3.connect(tmp_path / "file-alone.db") as copy:
                return (
                    copy.execute("SELECT count(*) FROM deliveries WHERE status = 'done'").fetchone()[0] == 2
                )

        assert wait_for(checkpointed, timeout=10)
    assert not alive(replacement)  # SIGTERM to the server stopped its consumer too


def test_of_several_consumers_one_alone_runs_the_periodic_tasks_and_so_does_the_one_started_in_its_place(
    tmp_path,
):
    from tests.support.github_emulator import wait_for

    with served(tmp_path, environment(PERFBOT_WEBHOOK_SECRET=SECRET), args=["--consumers", "3"]) as server:
        assert len(server.consumers()) == 3
        [periodic] = server.periodic_consumers()
        others = set(server.consumers()) - {periodic}
        os.kill(periodic, signal.SIGKILL)

        def replaced() -> bool:
            # Linux's children listing may miss a child started meanwhile: wait for a whole picture.
            now = server.consumers()
            return len(now) == 3 and periodic not in now and len(server.periodic_consumers()) == 1

        assert wait_for(replaced, timeout=30), (server.children(), server.periodic_consumers())
        [replacement] = server.periodic_consumers()
        assert replacement != periodic
        left = server.consumers()
        assert set(left) == others | {replacement}  # the others ran on meanwhile, never restarted
    assert not any(alive(pid) for pid in left)


def stopped_threads(pid: int) -> bool:
    """Whether every thread of ``pid`` is stopped (SIGSTOP takes effect thread by thread)."""
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
        except OSError:
            continue  # it ended meanwhile
    return bool(states) and all(state in ("T", "t") for state in states)


def clear_settings(monkeypatch) -> None:
    for name in [k for k in os.environ if k.startswith("PERFBOT_")]:
        monkeypatch.delenv(name)


def test_serve_without_a_webhook_secret_exits_2_with_one_line(tmp_path, monkeypatch, capsys):
    clear_settings(monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("perfbot: error: PERFBOT_WEBHOOK_SECRET")


def test_sign_in_without_a_public_url_exits_2_with_one_line_before_serving(tmp_path):
    env = environment(
        PERFBOT_WEBHOOK_SECRET="s3cret",
        PERFBOT_OAUTH_CLIENT_ID="Iv1.x",
        PERFBOT_OAUTH_CLIENT_SECRET="client-secret",
        PERFBOT_SESSION_SECRET="k" * 32,
    )
    try:  # before, it served, and took sign-in's callback address from each request's Host header
        done = subprocess.run(
            [*PERFBOT, "serve", "--port", str(free_port())],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=20,
        )
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"perfbot serve started: {expired.stderr!r}")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "perfbot: error: PERFBOT_PUBLIC_URL is required for dashboard sign-in (PERFBOT_OAUTH_CLIENT_ID): "
        "GitHub sends the sign-in back to it"
    ]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--port", "99999"], "--port must be from 0 to 65535"),
        (["--port", "-1"], "--port must be from 0 to 65535"),
        (["--workers", "0"], "--workers must be positive"),
    ],
)
def test_a_serve_option_out_of_range_exits_2_with_one_line(tmp_path, monkeypatch, capsys, args, message):
    clear_settings(monkeypatch)
    monkeypatch.setenv("PERFBOT_WEBHOOK_SECRET", "s3cret")
    monkeypatch.chdir(tmp_path)
    assert main(["serve", *args]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"perfbot: error: {message}"]


@pytest.mark.parametrize("url", ["mysql://u@db/perfbot", "::not a url"])
def test_a_database_url_perfbot_cannot_use_exits_2_with_one_line(tmp_path, monkeypatch, capsys, url):
    clear_settings(monkeypatch)
    monkeypatch.setenv("PERFBOT_WEBHOOK_SECRET", "s3cret")
    monkeypatch.setenv("PERFBOT_DATABASE_URL", url)
    monkeypatch.chdir(tmp_path)
    assert main(["serve"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("perfbot: error: PERFBOT_DATABASE_URL: "), lines


@pytest.mark.parametrize(
    "args,message",
    [
        (["--threads", "0"], "--threads must be positive"),
        (["--stop-timeout", "-1"], "--stop-timeout must be a number of seconds, 0 or more"),
        (["--stop-timeout", "nan"], "--stop-timeout must be a number of seconds, 0 or more"),
        (["--stop-timeout", "inf"], "--stop-timeout must be a number of seconds, 0 or more"),
    ],
)
def test_a_worker_option_out_of_range_exits_2_with_one_line(tmp_path, monkeypatch, capsys, args, message):
    clear_settings(monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert main(["worker", *args]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"perfbot: error: {message}"]


def test_perfbot_worker_keeps_what_it_built_at_start_out_of_the_collector(tmp_path, monkeypatch):
    """Its oldest generation's collections walked every object made since start, and paused a
    consumer thread that held a SQLite writer lock the intake waited for."""
    from bot import collector, worker

    clear_settings(monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PERFBOT_DATABASE_URL", f"sqlite:///{tmp_path / 'perfbot.db'}")
    monkeypatch.setenv("PERFBOT_QUEUE_URL", f"sqlite:///{tmp_path / 'queue.db'}")
    monkeypatch.setenv("PERFBOT_GITHUB_API_URL", NOWHERE)
    seen = {}

    def consumed(runtime, **options):
        seen.update(threshold=gc.get_threshold(), frozen=gc.get_freeze_count())
        return 0

    monkeypatch.setattr(worker, "run_forever", consumed)
    threshold = gc.get_threshold()
    try:
        assert main(["worker", "--threads", "1"]) == 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
    assert seen["threshold"] == collector.THRESHOLDS
    assert seen["frozen"] > 10_000, "the start-up objects were left to the collector"


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
    delivery = runtime.store.deliveries.claim(
        "1", "g-worker", "installation", "created", json.dumps(payload).encode()
    )
    runtime.queue.enqueue(delivery)
    process = worker(tmp_path, database, redis_url, "--threads", "2")
    try:
        assert wait_for(lambda: runtime.store.deliveries.counts() == {"done": 1}, timeout=60)
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    finally:
        stopped(process)
    assert process.returncode == 0, output
    assert {r.full_name for r in runtime.store.installations.repositories()} == {
        r["full_name"] for r in payload["repositories"]
    }


def test_perfbot_worker_starts_its_scoring_process_before_any_review(tmp_path):
    """The first review after a worker starts finds the scoring process ready (it waited 2.7 s,
    against 0.3 s, for a fresh interpreter to start and import the scoring)."""
    from bot.bootstrap import build
    from bot.settings import Settings

    database = f"sqlite:///{tmp_path / 'perfbot.db'}"
    queue = f"sqlite:///{tmp_path / 'queue.db'}"
    build(Settings(database_url=database, queue_url=queue)).close()
    process = worker(tmp_path, database, queue, "--threads", "1")
    try:
        scorers = lambda: [c for c in children(process.pid).values() if "spawn_main" in c]  # noqa: E731
        assert wait_for(lambda: len(scorers()) == 1, timeout=60), children(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=30)
        finally:
            stopped(process)
    assert process.returncode == 0


def test_perfbot_worker_stops_within_its_stop_timeout_while_a_job_waits_on_github(tmp_path, redis_url):  # noqa: F811
    """A job stuck on GitHub (a server that takes the connection and never answers) does not keep
    a worker told to stop: it exits after --stop-timeout, leaving the delivery pending for the next
    consumer to take over (as after kill -9), not after GitHub's timeouts and retries."""
    from bot.bootstrap import build
    from bot.settings import Settings
    from tests.support import github_data

    silent = socket.create_server(("127.0.0.1", 0))
    silent.settimeout(60)
    database = f"sqlite:///{tmp_path / 'perfbot.db'}"
    runtime = build(Settings(database_url=database, queue_url=redis_url))
    payload = github_data.pull_request("opened")
    delivery = runtime.store.deliveries.claim(
        "1", "g-stuck", "pull_request", "opened", json.dumps(payload).encode()
    )
    runtime.queue.enqueue(delivery)
    process = worker(
        tmp_path,
        database,
        redis_url,
        "--threads",
        "2",
        "--stop-timeout",
        "1",
        PERFBOT_GITHUB_TOKEN="ghp_test",  # nosec B106 - nothing checks it
        PERFBOT_GITHUB_API_URL=f"http://127.0.0.1:{silent.getsockname()[1]}",
    )
    try:
        connection, _ = silent.accept()  # the job now waits for GitHub's answer
        process.send_signal(signal.SIGTERM)
        try:
            output, _ = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail("the worker waited for its stuck job")
        connection.close()
    finally:
        stopped(process)
        silent.close()
    assert process.returncode == 0, output
    assert runtime.store.deliveries.counts() == {"pending": 1}
    [said] = [line for line in map(json.loads, output.splitlines()) if "unfinished" in line["msg"]]
    assert (said["level"], said["deliveries"]) == ("WARNING", [delivery]), said


def worker(tmp_path, database: str, queue: str, *args: str, **settings: str) -> subprocess.Popen:
    """`perfbot worker` with ``args`` on ``database`` and ``queue``, its output (log and all) piped;
    GitHub is nowhere unless ``settings`` say otherwise."""
    return subprocess.Popen(
        [*PERFBOT, "worker", *args],
        cwd=tmp_path,
        text=True,
        env=environment(
            **{
                "PERFBOT_DATABASE_URL": database,
                "PERFBOT_QUEUE_URL": queue,
                "PERFBOT_GITHUB_API_URL": NOWHERE,
                **settings,
            }
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def stopped(process: subprocess.Popen) -> None:
    """Kill ``process`` if it still runs: a worker left behind would take the next test's jobs
    from the shared Redis queue."""
    if process.poll() is None:
        process.kill()
        process.wait()


@pytest.mark.parametrize("verb", ["serve", "worker"])
def test_a_database_whose_schema_cannot_be_migrated_exits_2_with_one_line_saying_so(tmp_path, verb):
    from tests.adapters.test_bootstrap import sqlite_with_a_conflicting_column

    env = environment(
        PERFBOT_WEBHOOK_SECRET="s3cret", PERFBOT_DATABASE_URL=sqlite_with_a_conflicting_column(tmp_path)
    )
    try:  # not tried again and again as if the database were away
        done = subprocess.run(
            [*PERFBOT, verb, "--port", str(free_port())] if verb == "serve" else [*PERFBOT, verb],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=20,
        )
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"perfbot {verb} kept trying: {expired.stderr!r}")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "perfbot: error: the database's schema could not be migrated: duplicate column name: subject"
    )


def test_serve_opens_no_control_socket_that_a_second_server_would_share(tmp_path):
    """gunicorn 27 opens an arbiter control socket at $HOME/.gunicorn/gunicorn.ctl by default: one
    path for every server of a user, through which anyone with access can stop or reconfigure it.
    perfbot serve never uses it."""
    home = tmp_path / "home"
    home.mkdir()
    env = {**environment(PERFBOT_WEBHOOK_SECRET="s3cret"), "HOME": str(home)}
    env.pop("XDG_RUNTIME_DIR", None)
    with serving(tmp_path, env):
        assert not (home / ".gunicorn").exists()


def test_register_app_refuses_existing_credentials_and_an_app_server_with_one_line(
    tmp_path, monkeypatch, capsys
):
    clear_settings(monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "perfbot-app.env").write_text("PERFBOT_APP_ID=1\n")
    assert main(["serve", "--register-app", "perfbot-app.env"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"perfbot: error: --register-app: {tmp_path / 'perfbot-app.env'} exists: perfbot never overwrites "
        "credentials; move it away or name another file"
    )
    monkeypatch.setenv("PERFBOT_APP_ID", "7")
    pem = "RSA " + "PRIVATE KEY"  # built here, so that no committed file holds a key's header
    monkeypatch.setenv("PERFBOT_PRIVATE_KEY", f"-----BEGIN {pem}-----\\nx\\n-----END {pem}-----")
    assert main(["serve", "--register-app", "new.env"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "perfbot: error: --register-app: this server is an App already (PERFBOT_APP_ID is set)"
    )
