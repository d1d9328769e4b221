"""`perfbot sandbox` takes its children with it: on SIGHUP (a closed terminal), SIGTERM and SIGINT
it stops them; on SIGKILL, which it cannot catch, the kernel tells them (a parent-death signal), so
that no `perfbot serve` is left holding the port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time

import pytest

from tests.support.serving import PERFBOT, alive, environment, free_port

pytestmark = pytest.mark.slow
linux = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads Linux's /proc")


def descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid``, whatever its session: pid -> command line."""
    found: dict[int, str] = {}
    try:
        children = open(f"/proc/{pid}/task/{pid}/children").read().split()  # noqa: SIM115
    except OSError:
        return found
    for child in map(int, children):
        try:
            found[child] = open(f"/proc/{child}/cmdline").read().replace("\0", " ")  # noqa: SIM115
        except OSError:
            continue
        found.update(descendants(child))
    return found


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@linux
@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGKILL], ids=["SIGHUP", "SIGKILL"])
def test_no_perfbot_serve_outlives_the_sandbox(tmp_path, sig):
    port, github_port = free_port(), free_port()
    sandbox = subprocess.Popen(
        [
            *PERFBOT,
            "sandbox",
            "--dir",
            str(tmp_path / "sandbox"),
            "--port",
            str(port),
            "--github-port",
            str(github_port),
        ],
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    said = []
    try:
        assert sandbox.stdout is not None
        for line in sandbox.stdout:  # until perfbot serve answers
            said.append(line)
            if "perfbot serve " in line:
                break
        assert listening(port), "".join(said)
        started = descendants(sandbox.pid)
        assert any(" serve " in command for command in started.values()), started
        sandbox.send_signal(sig)
        sandbox.wait(60)
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and (listening(port) or any(alive(p) for p in started)):
            time.sleep(0.2)
        left = {pid: command for pid, command in started.items() if alive(pid)}
        assert left == {} and not listening(port), f"left behind: {left}"
    finally:
        for pid in descendants(sandbox.pid) if sandbox.poll() is None else {}:
            os.kill(pid, signal.SIGKILL)
        if sandbox.poll() is None:
            sandbox.kill()
        for pid, command in descendants(1).items():  # a serve of this test, whatever became of its parent
            if f"--port {port}" in command:
                os.kill(pid, signal.SIGKILL)
