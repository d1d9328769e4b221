"""The server image, run as it ships: `perfbot serve` answers /healthz and a signed ping from
outside the container, `perfbot worker` starts and stops on SIGTERM, both as the unprivileged
user, and the image holds the server only.

Runs with buildah against the image named by PERFBOT_TEST_IMAGE, which
tests/container/build_and_run.sh builds from the Dockerfile and sets (CI runs that script);
without it these tests are skipped.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from bot.web.signature import sign

IMAGE = os.environ.get("PERFBOT_TEST_IMAGE")
pytestmark = pytest.mark.skipif(
    not IMAGE,
    reason="PERFBOT_TEST_IMAGE not set: tests/container/build_and_run.sh builds the image and runs these",
)
BUILDAH_ENV = {**os.environ, "STORAGE_DRIVER": "vfs", "BUILDAH_ISOLATION": "chroot"}
SECRET = "container-s3cret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def buildah(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["buildah", *args], env=BUILDAH_ENV, capture_output=True, text=True, check=True, timeout=300
    )


@pytest.fixture
def container() -> Iterator[str]:
    """A fresh working container of the image (its own /data), removed afterwards."""
    name = buildah("from", "--pull-never", "--quiet", IMAGE).stdout.strip()
    yield name
    buildah("rm", name)


def run_in(
    container: str, script: str, *, control: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.Popen:
    """Run a shell script in the container as its image's user, with ``control`` mounted at /control."""
    args = ["buildah", "run"]
    for key, value in (env or {}).items():
        args += ["--env", f"{key}={value}"]
    if control is not None:
        args += ["--volume", f"{control}:/control:ro"]
    return subprocess.Popen(
        [*args, container, "--", "sh", "-c", script],
        env=BUILDAH_ENV,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def output_of(container: str, script: str) -> str:
    process = run_in(container, script)
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output
    return output


def test_the_image_runs_as_the_unprivileged_user_in_its_data_folder(container):
    user, uid, folder = output_of(container, "id -un; id -u; pwd").split()
    assert (user, folder) == ("perfbot", "/data") and uid != "0"


def test_the_image_holds_the_server_only(container):
    """No torch (the runner's), no git program, and no installer left in the venv."""
    found = output_of(
        container,
        'python -c "import importlib.util as u; '
        "print([m for m in ('torch', 'pip', 'setuptools') if u.find_spec(m)])\"; "
        "command -v git || echo no-git",
    )
    assert found.split("\n")[:2] == ["[]", "no-git"]


def test_serve_answers_healthz_and_a_signed_ping_and_stops_on_sigterm(container, tmp_path):
    port = free_port()
    # The host creates /control/stop when it is done probing; the container then stops the server
    # with SIGTERM, as a container runtime would, and reports how it exited.
    script = (
        f"perfbot serve --host 127.0.0.1 --port {port} & pid=$!; "
        "i=0; while [ ! -e /control/stop ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; "
        'echo "user $(stat -c %U /proc/$pid)"; kill -TERM $pid; wait $pid; echo "serve exited $?"'
    )
    tmp_path.chmod(0o755)  # the container's user reads it
    process = run_in(container, script, control=tmp_path, env={"PERFBOT_WEBHOOK_SECRET": SECRET})
    try:
        base = f"http://127.0.0.1:{port}"
        health = wait_for_health(f"{base}/healthz", process)
        assert health.json() == {
            "status": "ok",
            "problems": [],
            "database": "ok",
            "queue": "ok",
            "consumers": 1,
            "deliveries": {"failed_last_hour": 0, "oldest_waiting_s": None, "retrying": 0},
        }
        body = b'{"zen": "Keep it logically awesome.", "hook_id": 7}'
        response = requests.post(
            f"{base}/webhook",
            data=body,
            timeout=5,
            headers={
                "Content-Type": "application/json",
                "X-GitHub-Event": "ping",
                "X-GitHub-Delivery": "c-1",
                "X-Hub-Signature-256": sign(SECRET, body),
            },
        )
        assert (response.status_code, response.json()) == (200, {"message": "pong"})
        forged = requests.post(
            f"{base}/webhook",
            data=body,
            timeout=5,
            headers={
                "Content-Type": "application/json",
                "X-GitHub-Event": "ping",
                "X-GitHub-Delivery": "c-2",
                "X-Hub-Signature-256": sign("not-the-secret", body),
            },
        )
        assert forged.status_code == 403
    finally:
        (tmp_path / "stop").touch()
        output, _ = process.communicate(timeout=60)
    lines = output.strip().splitlines()
    assert "user perfbot" in lines and lines[-1] == "serve exited 0", output
    assert process.returncode == 0, output


def wait_for_health(url: str, process: subprocess.Popen) -> requests.Response:
    """The first answer of ``url`` that says "ok": the server may answer 503 while its web worker
    boots, and "degraded" until its queue consumer's first heartbeat."""
    deadline, status = time.monotonic() + 90, "no answer"
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[0]
        try:
            response = requests.get(url, timeout=2)
            if response.status_code == 200 and response.json().get("status") == "ok":
                return response
            status = f"{response.status_code} {response.text.strip()}"
        except requests.ConnectionError:  # not listening yet
            pass
        time.sleep(0.2)
    pytest.fail(f"{url} did not report ok within 90 s (last: {status})")


def test_the_worker_starts_and_stops_on_sigterm(container):
    script = (
        "perfbot worker 2>/tmp/worker.log & pid=$!; "
        "i=0; while ! grep -qs 'worker started' /tmp/worker.log && [ $i -lt 600 ]; do "
        "sleep 0.1; i=$((i+1)); done; "
        'echo "user $(stat -c %U /proc/$pid)"; kill -TERM $pid; wait $pid; echo "worker exited $?"; '
        "cat /tmp/worker.log"
    )
    output = output_of(container, script)
    lines = output.strip().splitlines()
    assert lines[:2] == ["user perfbot", "worker exited 0"], output
    logged = [json.loads(line)["msg"] for line in lines[2:] if line.startswith("{")]
    # A lone worker runs the periodic tasks too: its sweeps may come before and after it started.
    # The container has no GitHub credentials, so the worker says so once before it starts.
    lifecycle = [msg for msg in logged if msg != "sweep"]
    assert lifecycle[-2:] == ["worker started", "worker stopping"], output
    assert [msg for msg in lifecycle[:-2] if not msg.startswith("no GitHub credentials")] == [], output
    assert "sweep" in logged, output
