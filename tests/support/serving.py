"""`perfbot serve` as a real subprocess (gunicorn, its worker process, the embedded queue
consumer), for tests that exercise the start-up path the way an operator runs it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from .github_emulator import wait_for

PERFBOT = [sys.executable, "-m", "bot"]
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment(**settings: str) -> dict[str, str]:
    """This process's environment without its PERFBOT_* settings, plus ``settings``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PERFBOT_")}
    return {**clean, "PYTHONPATH": str(ROOT), **settings}


@contextmanager
def serving(cwd: Path, env: dict[str, str], start_timeout: float = 60) -> Iterator[str]:
    """Run `perfbot serve` in ``cwd`` on a free port until /healthz answers, and yield its base URL;
    afterwards stop it with SIGTERM, as a supervisor would, and require a clean exit."""
    port = free_port()
    process = subprocess.Popen(
        [*PERFBOT, "serve", "--port", str(port)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: process.poll() is not None or _healthy(base), start_timeout, interval=0.1)
        if process.poll() is not None or not _healthy(base):
            process.kill()
            pytest.fail(f"perfbot serve did not start:\n{process.communicate(timeout=30)[0]}")
        yield base
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0, output


def _healthy(base: str) -> bool:
    try:
        return requests.get(f"{base}/healthz", timeout=1).status_code == 200
    except requests.RequestException:  # not listening yet, or the worker still booting
        return False
