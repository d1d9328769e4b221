"""Fault scenarios against real processes: a bounded stream of signed deliveries sent at a steady
rate to `perfbot serve` while something breaks (a consumer or the server killed with SIGKILL,
PostgreSQL or Redis restarted, the disk full, the files made immutable), then what became of
every delivery: sent, acknowledged (2xx), refused (503), unanswered, processed, lost
(acknowledged but never processed), doubled (processed twice: a second sticky comment or check
run, a delivery finished twice) and the time to recover.

The tests in tests/faults run each scenario small (seconds); `benchmarks/bench_faults.py` runs
them at full size and prints the same figures.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import create_engine, select

from bot.adapters.store.tables import DeliveryRow, RepositoryRow
from bot.web.signature import sign

from . import github_data
from .github_emulator import wait_for
from .serving import PERFBOT, ROOT, children, environment, free_port  # noqa: F401 - ROOT for callers

SECRET = "fault-secret"


# ------------------------------------------------------------------ what is sent


def installation_deliveries(count: int, first: int = 0) -> list[tuple[str, bytes]]:
    """GitHub's `installation_repositories.added` example, one new repository each: processing one
    leaves one repository row, and needs no GitHub API."""
    template = github_data.installation_event("installation_repositories", "added")
    found = []
    for n in range(first, first + count):
        payload = json.loads(json.dumps(template))
        payload["repositories_added"] = [
            {
                **template["repositories_added"][0],
                "id": 50_000_000 + n,
                "full_name": f"fault/repo-{n}",
                "name": f"repo-{n}",
            }
        ]
        found.append(("installation_repositories", json.dumps(payload).encode()))
    return found


@dataclass
class Sent:
    guid: str
    event: str
    scheduled: float  # time.monotonic() it was due
    status: int = 0  # 0: no answer (connection refused or broken)
    answered: float = 0.0


class Stream:
    """Send ``deliveries`` at ``rate`` per second (open loop, from ``senders`` threads) to the
    server(s) ``bases`` name, round robin; `Sent` records what came back."""

    def __init__(
        self,
        bases: Sequence[str],
        deliveries: Sequence[tuple[str, bytes]],
        rate: float,
        senders: int = 8,
        timeout: float = 10.0,
    ):
        self.bases, self.deliveries, self.rate = list(bases), list(deliveries), rate
        self.senders, self.timeout = senders, timeout
        self.sent: list[Sent] = []
        self._jobs: queue.Queue = queue.Queue()
        self._threads: list[threading.Thread] = []
        self.started = 0.0

    def start(self) -> Stream:
        self.started = time.monotonic() + 0.2
        for n, (event, body) in enumerate(self.deliveries):
            record = Sent(str(uuid.uuid4()), event, self.started + n / self.rate)
            self.sent.append(record)
            self._jobs.put((record, body, self.bases[n % len(self.bases)]))
        for _ in range(self.senders):
            self._jobs.put(None)
            thread = threading.Thread(target=self._send, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def at(self, fraction: float) -> float:
        """The moment ``fraction`` of the stream is due."""
        return self.started + fraction * len(self.deliveries) / self.rate

    def wait_until(self, fraction: float) -> None:
        time.sleep(max(0.0, self.at(fraction) - time.monotonic()))

    def join(self) -> None:
        for thread in self._threads:
            thread.join()

    def _send(self) -> None:
        connections: dict[str, http.client.HTTPConnection] = {}
        while (job := self._jobs.get()) is not None:
            record, body, base = job
            time.sleep(max(0.0, record.scheduled - time.monotonic()))
            host, port = base.removeprefix("http://").split(":")
            connection = connections.get(base) or http.client.HTTPConnection(
                host, int(port), timeout=self.timeout
            )
            connections[base] = connection
            try:
                connection.request("POST", "/webhook", body, signed(record.event, body, record.guid))
                response = connection.getresponse()
                response.read()
                record.status = response.status
            except (OSError, http.client.HTTPException):
                connection.close()
                connections.pop(base, None)
                record.status = 0
            record.answered = time.monotonic()

    def acknowledged(self) -> list[Sent]:
        return [s for s in self.sent if 200 <= s.status < 300]


def signed(event: str, body: bytes, guid: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": guid,
        "X-GitHub-Hook-ID": "1",
        "X-Hub-Signature-256": sign(SECRET, body),
        "User-Agent": "GitHub-Hookshot/faults",
    }


# ------------------------------------------------------------------ what became of it


@dataclass
class Figures:
    scenario: str
    sent: int
    acknowledged: int
    refused: int  # answered 503 (with Retry-After): not stored, the sender may send it again
    unanswered: int  # no answer at all (the server was down): not stored either
    processed: int  # acknowledged and processed
    lost: int  # acknowledged, never processed
    doubled: int  # processed twice
    recover_s: float  # from the end of the fault to the last acknowledged delivery processed
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        extra = f" ({'; '.join(self.notes)})" if self.notes else ""
        return (
            f"{self.scenario}: sent {self.sent}, acknowledged {self.acknowledged}, refused (503) "
            f"{self.refused}, unanswered {self.unanswered}, processed {self.processed}, lost {self.lost}, "
            f"doubled {self.doubled}, recovered in {self.recover_s:.1f} s{extra}"
        )


class Deliveries:
    """The stored deliveries of a database, read as the tests' judge (not through the bot)."""

    def __init__(self, url: str):
        self.engine = create_engine(url)

    def statuses(self) -> dict[str, tuple[str, int]]:
        """GUID -> (status, attempts)."""
        with self.engine.connect() as connection:
            rows = connection.execute(select(DeliveryRow.guid, DeliveryRow.status, DeliveryRow.attempts))
            return {guid: (status, attempts) for guid, status, attempts in rows}

    def repositories(self) -> int:
        with self.engine.connect() as connection:
            return len(connection.execute(select(RepositoryRow.id)).all())

    def close(self) -> None:
        self.engine.dispose()


def judge(
    scenario: str,
    stream: Stream,
    deliveries: Deliveries,
    fault_ended: float,
    timeout: float = 120.0,
    doubled: Callable[[], int] = lambda: 0,
    notes: Sequence[str] = (),
) -> Figures:
    """Wait (up to ``timeout``) until every acknowledged delivery is processed, then count."""
    acknowledged = {s.guid for s in stream.acknowledged()}

    def processed() -> set[str]:
        with contextlib.suppress(Exception):  # the database may still be coming back
            statuses = deliveries.statuses()
            return {guid for guid in acknowledged if statuses.get(guid, ("", 0))[0] == "done"}
        return set()

    wait_for(lambda: len(processed()) == len(acknowledged), timeout=timeout, interval=0.25)
    recovered = time.monotonic()
    done = processed()
    return Figures(
        scenario=scenario,
        sent=len(stream.sent),
        acknowledged=len(acknowledged),
        refused=sum(1 for s in stream.sent if s.status == 503),
        unanswered=sum(1 for s in stream.sent if s.status == 0),
        processed=len(done),
        lost=len(acknowledged - done),
        doubled=doubled(),
        recover_s=max(0.0, recovered - fault_ended),
        notes=list(notes),
    )


# ------------------------------------------------------------------ the processes


class Server:
    """`perfbot serve` in ``workdir`` on a fixed port (so that it can be started again there);
    its output goes to ``workdir / serve.log``."""

    def __init__(
        self,
        workdir: Path,
        env: dict[str, str],
        args: Sequence[str] = (),
        port: int | None = None,
        logs: Path | None = None,
    ):
        self.workdir, self.env, self.args = workdir, env, list(args)
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.log_path = (logs or workdir) / f"serve-{self.port}.log"
        self._log = self.log_path.open("ab")

    def start(self, timeout: float = 90.0) -> Server:
        self.process = subprocess.Popen(
            [*PERFBOT, "serve", "--port", str(self.port), *self.args],
            cwd=self.workdir,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        if not wait_for(lambda: self.process.poll() is not None or answers(self.base), timeout, interval=0.1):
            raise AssertionError(f"perfbot serve did not answer:\n{self.log()[-3000:]}")
        if self.process.poll() is not None:
            raise AssertionError(f"perfbot serve exited {self.process.returncode}:\n{self.log()[-3000:]}")
        return self

    def consumers(self) -> list[int]:
        return [pid for pid, command in children(self.process.pid).items() if " -m bot worker" in command]

    def kill(self) -> None:
        """SIGKILL the whole server at once, as a crash of its machine would: the master, its web
        worker and its consumers."""
        family = list(children(self.process.pid))
        self.process.kill()
        for pid in family:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait()
        wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in family), timeout=30)

    def stop(self) -> int:
        try:
            return terminate(self.process)
        finally:
            self._log.flush()

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")


def terminate(process: subprocess.Popen | None) -> int:
    """Stop ``process`` with SIGTERM, as a supervisor would, killing it after 60 s; its exit status
    (0 for one never started)."""
    if process is None or process.poll() is not None:
        return process.returncode if process else 0
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def answers(base: str) -> bool:
    """The server answers /healthz at all (200 ok or degraded, or 503 down)."""
    host, port = base.removeprefix("http://").split(":")
    try:
        connection = http.client.HTTPConnection(host, int(port), timeout=2)
        connection.request("GET", "/healthz")
        status = connection.getresponse().status
        connection.close()
        return status in (200, 503)
    except (OSError, http.client.HTTPException):
        return False


def health(base: str) -> tuple[int, dict]:
    host, port = base.removeprefix("http://").split(":")
    try:
        connection = http.client.HTTPConnection(host, int(port), timeout=5)
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    except (OSError, http.client.HTTPException, ValueError):
        return 0, {}


class Worker:
    """`perfbot worker` (a consumer on its own, for the Redis layout)."""

    def __init__(self, workdir: Path, env: dict[str, str], args: Sequence[str] = (), name: str = "worker"):
        self.workdir, self.env, self.args = workdir, env, list(args)
        self.log_path = workdir / f"{name}.log"
        self._log = self.log_path.open("ab")
        self.process: subprocess.Popen | None = None

    def start(self) -> Worker:
        self.process = subprocess.Popen(
            [*PERFBOT, "worker", *self.args],
            cwd=self.workdir,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        return self

    def stop(self) -> int:
        return terminate(self.process)

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")


def perfbot_env(**settings: str) -> dict[str, str]:
    return environment(**{"PERFBOT_WEBHOOK_SECRET": SECRET, "PERFBOT_LOG_LEVEL": "WARNING", **settings})


# ------------------------------------------------------------------ services of our own


class Redis:
    """A private redis-server on a free loopback port, which the test may restart (empty, as
    a Redis without persistence comes back)."""

    def __init__(self, workdir: Path):
        self.workdir, self.port = workdir, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    @staticmethod
    def available() -> bool:
        return shutil.which("redis-server") is not None

    def start(self) -> Redis:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert wait_for(lambda: _listening(self.port), timeout=20), "redis-server did not start"
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def restart(self, down_s: float = 1.0) -> tuple[float, float]:
        """Kill it and start it again, empty; (down since, up again) in time.monotonic()."""
        down = time.monotonic()
        self.stop()
        time.sleep(down_s)
        self.start()
        return down, time.monotonic()


class Postgres:
    """A private PostgreSQL cluster (initdb in a temporary folder, run as the ``postgres`` user
    when this is root) on a free loopback port, which the test may restart."""

    def __init__(self):
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="perfbot-pg-"))
        self.data = self.folder / "data"
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    @staticmethod
    def binaries() -> Path | None:
        found = shutil.which("pg_ctl")
        if found:
            return Path(found).resolve().parent
        versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"))
        return versions[-1] if versions else None

    def _run(self, *command: str) -> None:
        binaries = self.binaries()
        full = [str(binaries / command[0]), *command[1:]]
        if os.geteuid() == 0:
            full = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(_quote(a) for a in full)]
        subprocess.run(full, check=True, capture_output=True, timeout=120)

    def start(self) -> Postgres:
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        self._start()
        return self

    def _start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.folder} -c fsync=off"
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.folder / "log"), "-w", "start"
        )

    def restart(self, down_s: float = 1.0) -> tuple[float, float]:
        """Stop it (fast: connections are cut) and start it again; (down since, up again)."""
        down = time.monotonic()
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        time.sleep(down_s)
        self._start()
        return down, time.monotonic()

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def tmpfs(size: str) -> Iterator[Path | None]:
    """A tmpfs of ``size`` mounted on a new folder (root only); None where it cannot be mounted."""
    folder = Path(tempfile.mkdtemp(prefix="perfbot-tmpfs-"))
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True
        ).returncode
        == 0
    )
    try:
        yield folder if mounted else None
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def fill(folder: Path) -> Path:
    """Fill the filesystem of ``folder`` to the last byte with a file; the file."""
    filler = folder / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    chunk = 1 << 20
    try:
        while chunk:
            try:
                os.write(descriptor, b"\0" * chunk)
            except OSError:
                chunk //= 2
    finally:
        os.close(descriptor)
    return filler


def chattr(flags: str, paths: Sequence[Path]) -> bool:
    return subprocess.run(["chattr", flags, *map(str, paths)], capture_output=True).returncode == 0


__all__ = [
    "ROOT",
    "Deliveries",
    "Figures",
    "Postgres",
    "Redis",
    "Server",
    "Stream",
    "Worker",
    "chattr",
    "fill",
    "health",
    "installation_deliveries",
    "judge",
    "perfbot_env",
    "tmpfs",
]
