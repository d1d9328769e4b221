"""`perfbot serve` stops cleanly: Ctrl-C (SIGINT to the terminal's whole process group) and SIGTERM
(a supervisor, to the master alone) end every process it started within a few seconds, whatever a
consumer was doing, print no traceback, and the master exits after its children, never before."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time

import pytest
import requests

from bot.web.signature import sign
from tests.support import github_data
from tests.support.github_emulator import wait_for
from tests.support.serving import PERFBOT, _healthy, alive, children, environment, free_port

SECRET = "s3cret"
# Well under the 20 s a consumer's graceful stop may take (`perfbot worker --stop-timeout`), which
# is what a Ctrl-C waited for before, then "killed".
FEW_SECONDS = 10


def descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid``: pid -> command line."""
    found = children(pid)
    for child in list(found):
        found.update(descendants(child))
    return found


@pytest.fixture
def silent_github():
    """A GitHub that takes connections and never answers: a job calling it waits."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(60)
    yield server
    server.close()


def start(tmp_path, github: socket.socket) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen(
        [*PERFBOT, "serve", "--port", str(port)],
        cwd=tmp_path,
        env=environment(
            PERFBOT_WEBHOOK_SECRET=SECRET,
            PERFBOT_GITHUB_TOKEN="ghp_test",  # nosec B106 - nothing checks it
            PERFBOT_GITHUB_API_URL=f"http://127.0.0.1:{github.getsockname()[1]}",
        ),
        stdout=subprocess.DEVNULL,
        # A file, not a pipe: reading a pipe to its end would wait for every process holding it,
        # and hide a child that outlives the master.
        stderr=(tmp_path / "stderr.txt").open("w"),
        start_new_session=True,  # a group of its own, as a terminal gives a foreground job
    )
    base = f"http://127.0.0.1:{port}"
    if not wait_for(lambda: process.poll() is not None or _healthy(base), 60, interval=0.1) or not _healthy(
        base
    ):
        process.kill()
        process.wait(30)
        pytest.fail(f"perfbot serve did not start: {(tmp_path / 'stderr.txt').read_text()}")
    return process, base


def a_job_waits_on_github(base: str, github: socket.socket) -> socket.socket:
    body = json.dumps(github_data.pull_request("opened")).encode()
    answer = requests.post(
        f"{base}/webhook",
        data=body,
        timeout=10,
        headers={
            "Content-Type": "application/json",
            "X-GitHub-Event": "pull_request",
            "X-GitHub-Delivery": "d-stuck",
            "X-Hub-Signature-256": sign(SECRET, body),
        },
    )
    assert answer.status_code in (200, 202), answer.text
    connection, _ = github.accept()  # a consumer now waits for GitHub's answer
    return connection


def stop(process: subprocess.Popen, send, tmp_path) -> tuple[float, str, dict[int, str]]:
    """Send the signal; the seconds until the master exited, its standard error, and the processes
    it had started that still run a moment after."""
    started = descendants(process.pid)
    assert started, "perfbot serve started no process"
    began = time.monotonic()
    send()
    try:
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    took = time.monotonic() - began
    left = {pid: command for pid, command in started.items() if alive(pid)}
    for pid in left:  # not to leave them to the next test
        os.kill(pid, signal.SIGKILL)
    return took, (tmp_path / "stderr.txt").read_text(), left


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "a-job-waits-on-github"])
def test_ctrl_c_ends_every_process_within_seconds_without_a_traceback(tmp_path, silent_github, busy):
    process, base = start(tmp_path, silent_github)
    connection = a_job_waits_on_github(base, silent_github) if busy else None
    try:
        took, stderr, left = stop(process, lambda: os.killpg(process.pid, signal.SIGINT), tmp_path)
    finally:
        if connection is not None:
            connection.close()
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert left == {}, f"still running: {left}\n{stderr}"
    assert took < FEW_SECONDS, f"{took:.1f} s\n{stderr}"
    assert "graceful stop; killed" not in stderr, stderr  # what the 20 s wait ended with


def test_sigterm_to_the_master_alone_ends_its_children_before_it_exits(tmp_path, silent_github):
    process, _ = start(tmp_path, silent_github)
    # Checked the moment the master has exited: nothing of it may outlive it, the checkpointer included.
    took, stderr, left = stop(process, lambda: process.send_signal(signal.SIGTERM), tmp_path)
    assert process.returncode == 0, stderr
    assert left == {}, f"still running after perfbot serve exited: {left}\n{stderr}"
    assert "Traceback" not in stderr, stderr
