"""Who holds a delivery, for how long, and whether the holder is still alive.

A consumer process takes a delivery under a lease in its own name (`owner_id`): the host, the
kernel's boot and PID namespace, the process id and its start time, so that no two processes,
now or later, share a name. While its jobs run, a `Heartbeat` thread renews the process's
leases every `HEARTBEAT_S`, so a job slower than the lease (a review waiting out a rate limit)
is never taken by a second worker. A process that dies stops renewing: its leases run out after
`LEASE_S` wherever it ran, and at once where a process on the same host and namespace can see it
is gone (`is_dead`), which every consumer checks when it starts and at every sweep. Leases are
given, renewed and judged by the database's clock (`bot.service.ports.store.Deliveries`), so
the workers' own clocks need not agree.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

log = logging.getLogger("perfbot.leases")

LEASE_S = 60.0  # a lease nobody renewed for this long belongs to a dead worker
HEARTBEAT_S = 15.0  # renewals per lease: four, so that a slow database does not lose one
MAX_JOB_S = 3_600.0  # a job running longer is presumed hung: its lease is no longer renewed
_NO_NAMESPACE = "-"


def owner_id() -> str:
    """This process's name as a lease holder, ``host/namespace/pid.start``."""
    return _owner_of(os.getpid())


@cache
def _owner_of(pid: int) -> str:
    start = _start_time(pid)
    return f"{_host()}/{_namespace()}/{pid}.{start if start is not None else '-'}"


def is_dead(owner: str) -> bool:
    """Whether ``owner`` is a process of this host and namespace that no longer runs (exited,
    killed, a zombie, or its pid taken by another process). A holder elsewhere is never judged
    dead here: its lease runs out instead."""
    try:
        host, namespace, process = owner.rsplit("/", 2)
        pid_text, start_text = process.split(".", 1)
        pid = int(pid_text)
    except ValueError:
        return False
    if host != _host() or namespace != _namespace() or namespace == _NO_NAMESPACE:
        return False
    stat = _stat(pid)
    if stat is None:
        return True
    state, start = stat
    return state in ("Z", "X") or str(start) != start_text


class Running:
    """The deliveries this process is working on now (the heartbeat renews their leases only, so
    that one whose job ended without being marked runs out and is taken again). One per process, in
    its `Services`: every consumer thread of it adds what it works on."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._started: dict[int, float] = {}
        self._hung: set[int] = set()

    def add(self, delivery_id: int) -> None:
        with self._lock:
            self._started[delivery_id] = self._clock()

    def discard(self, delivery_id: int) -> None:
        with self._lock:
            self._started.pop(delivery_id, None)
            self._hung.discard(delivery_id)

    def current(self) -> list[int]:
        """The deliveries whose jobs run now, hung ones included."""
        with self._lock:
            return sorted(self._started)

    def renewable(self) -> list[int]:
        """The deliveries whose jobs have run less than `MAX_JOB_S`; one past it is presumed hung
        (logged once) and left to run out, so that another worker takes it."""
        now = self._clock()
        with self._lock:
            late = [d for d, started in self._started.items() if now - started > MAX_JOB_S]
            newly = [d for d in late if d not in self._hung]
            self._hung.update(late)
            renewable = [d for d in self._started if d not in self._hung]
        for delivery_id in newly:
            log.error(
                "a job has run for over %.0f s; its lease is no longer renewed",
                MAX_JOB_S,
                extra={"delivery_id": delivery_id},
            )
        return sorted(renewable)


class Heartbeat:
    """A daemon thread calling ``renew`` every ``interval_s`` until `stop`; a failed renewal is
    logged (once until one succeeds again) and tried at the next beat."""

    def __init__(self, renew: Callable[[], object], interval_s: float = HEARTBEAT_S):
        self._renew, self.interval_s = renew, interval_s
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="perfbot-heartbeat", daemon=True)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(self.interval_s + 5)

    def _run(self) -> None:
        failing = False
        while not self._stopping.wait(self.interval_s):
            try:
                self._renew()
            except Exception as error:  # the database may be restarting: the next beat tries again
                if not failing:
                    log.warning("could not renew this worker's leases: %s", error)
                failing = True
            else:
                if failing:
                    log.info("leases renewed again")
                failing = False


@cache
def _host() -> str:
    return socket.gethostname()[:60].replace("/", "_") or "localhost"


@cache
def _namespace() -> str:
    """The kernel's boot and this process's PID namespace (Linux), hashed short: two processes
    with one host name but different kernels or containers never judge each other's pids."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        pids = os.readlink("/proc/self/ns/pid")
    except OSError:
        return _NO_NAMESPACE
    return hashlib.sha256(f"{boot} {pids}".encode()).hexdigest()[:10]


def _start_time(pid: int) -> int | None:
    stat = _stat(pid)
    return None if stat is None else stat[1]


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks after boot) of ``pid``, from /proc; None if there is none."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[19])
