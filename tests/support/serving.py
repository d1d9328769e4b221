"""`perfbot serve` as a real subprocess (gunicorn's master, its worker process, the embedded
queue's consumer process), for tests that exercise the start-up path the way an operator runs it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Served:
    base: str
    process: subprocess.Popen

    def children(self) -> dict[int, str]:
        """The master's child processes: pid -> command line."""
        return children(self.process.pid)

    def consumers(self) -> list[int]:
        return _consumers(self.children())

    def periodic_consumers(self) -> list[int]:
        """The consumers that run the periodic tasks, read from one listing of the children (two
        listings taken while the master starts one could disagree)."""
        commands = self.children()
        return [pid for pid in _consumers(commands) if "--no-periodic" not in commands[pid]]


def _consumers(commands: dict[int, str]) -> list[int]:
    return [pid for pid, command in commands.items() if " -m bot worker " in f"{command} "]


@contextmanager
def serving(
    cwd: Path, env: dict[str, str], start_timeout: float = 60, port: int | None = None
) -> Iterator[str]:
    """`served`, yielding only the base URL."""
    with served(cwd, env, start_timeout, port=port) as server:
        yield server.base


@contextmanager
def served(
    cwd: Path,
    env: dict[str, str],
    start_timeout: float = 60,
    args: Sequence[str] = (),
    port: int | None = None,
) -> Iterator[Served]:
    """Run `perfbot serve` with ``args`` in ``cwd`` on ``port`` (else a free one) until /healthz
    answers, and yield it; afterwards stop it with SIGTERM, as a supervisor would, and require a
    clean exit that leaves none of its processes behind."""
    port = port or free_port()
    process = subprocess.Popen(
        [*PERFBOT, "serve", "--port", str(port), *args],
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
        yield Served(base, process)
    finally:
        left = children(process.pid)
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=30)
        print(output)  # pytest shows what a test printed only when it fails: the server's log then
    assert process.returncode == 0, output
    assert wait_for(lambda: not any(alive(pid) for pid in left), timeout=10), (
        f"still running after perfbot serve exited: {[left[pid] for pid in left if alive(pid)]}\n{output}"
    )


def web_worker(master: int) -> int:
    """The web worker of the `perfbot serve` whose master is ``master``. Waited for until it alone
    matches: a child the master has forked and not yet executed (the checkpointer, a consumer) has
    the master's command line for that moment, and once passed for a second web worker."""

    def matching() -> list[int]:
        return [pid for pid, command in children(master).items() if " -m bot serve " in f"{command} "]

    assert wait_for(lambda: len(matching()) == 1, timeout=30), children(master)
    [web] = matching()
    return web


def children(pid: int) -> dict[int, str]:
    """The child processes of ``pid`` (Linux's /proc): pid -> command line."""
    try:
        pids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return {}
    found = {}
    for child in map(int, pids):
        try:
            found[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue  # exited meanwhile
    return found


def alive(pid: int) -> bool:
    """``pid`` runs (a zombie, exited but not yet collected, does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _healthy(base: str) -> bool:
    try:
        return requests.get(f"{base}/healthz", timeout=1).status_code == 200
    except requests.RequestException:  # not listening yet, or the worker still booting
        return False
