"""Slow and idle clients, as an attacker holds them against a server: connections that send
nothing, stop inside their headers, or send whole headers with a Content-Length and then trickle
the body, a byte every `TRICKLE_S`; or ("bulk", not among the default kinds) announce a body of
GitHub's largest size and send all of it but its last byte as fast as they may (`BULK_PER_TICK`
a tick), then stall, to make the server hold as many bytes as it will. One the server closes is
opened again at once (an attacker reconnects), until `stop`. Used by tests/web/test_slow_clients.py and, at full size, by
benchmarks/bench_faults.py (the `slow-clients` scenario)."""

from __future__ import annotations

import contextlib
import itertools
import selectors
import socket
import threading
import time
from dataclasses import dataclass, field

KINDS = ("idle", "headers", "body")
TRICKLE_S = 1.0
BULK_BODY = 25 * 1024 * 1024  # webhook.MAX_BODY: the largest body the server takes
BULK_PER_TICK = 4 * 1024 * 1024
OPENINGS = {
    "idle": b"",
    "headers": b"POST /webhook HTTP/1.1\r\nHost: perfbot\r\nX-Slow: ",
    "body": (
        b"POST /webhook HTTP/1.1\r\nHost: perfbot\r\nContent-Type: application/json\r\n"
        b"X-GitHub-Event: ping\r\nContent-Length: 1000000\r\n\r\n{"
    ),
    "bulk": (
        b"POST /webhook HTTP/1.1\r\nHost: perfbot\r\nContent-Type: application/json\r\n"
        b"X-GitHub-Event: ping\r\nContent-Length: " + str(BULK_BODY).encode() + b"\r\n\r\n{"
    ),
}


@dataclass
class Held:
    kind: str
    sock: socket.socket
    opened: float
    sent: int = 0  # of a bulk body


@dataclass
class Tally:
    opened: int = 0
    closed_by_server: int = 0  # the server closed it (a deadline), possibly after an answer
    answers: dict[str, int] = field(default_factory=dict)  # first line of what the server answered -> count
    lifetimes: list[float] = field(default_factory=list)  # seconds each closed one was held


class SlowClients:
    """``count`` slow connections to ``base`` (http://host:port), the kinds in turn."""

    def __init__(self, base: str, count: int, kinds: tuple[str, ...] = KINDS):
        host, port = base.removeprefix("http://").split(":")
        self.address = (host, int(port))
        self.count, self.kinds = count, kinds
        self.tally = Tally()
        self._held: dict[int, Held] = {}
        self._selector = selectors.DefaultSelector()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="slow-clients")
        self._ready = threading.Event()

    def __enter__(self) -> SlowClients:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> SlowClients:
        kinds = itertools.cycle(self.kinds)
        for _ in range(self.count):
            self._open(next(kinds))
        self._thread.start()
        self._ready.wait(timeout=10)
        return self

    def held(self) -> int:
        return len(self._held)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        for held in list(self._held.values()):
            self._forget(held)
        self._selector.close()

    def _open(self, kind: str) -> None:
        sock = socket.create_connection(self.address, timeout=5)
        sock.sendall(OPENINGS[kind])
        sock.setblocking(False)
        held = Held(kind, sock, time.monotonic())
        self._held[sock.fileno()] = held
        self._selector.register(sock, selectors.EVENT_READ, held)
        self.tally.opened += 1

    def _forget(self, held: Held) -> None:
        self._held.pop(held.sock.fileno(), None)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(held.sock)
        held.sock.close()

    def _run(self) -> None:
        next_trickle = time.monotonic() + TRICKLE_S
        self._ready.set()
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=min(0.2, max(0.0, next_trickle - time.monotonic()))):
                self._read(key.data)
            if time.monotonic() >= next_trickle:
                next_trickle += TRICKLE_S
                for held in list(self._held.values()):
                    self._trickle(held)

    def _read(self, held: Held) -> None:
        try:
            data = held.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            line = data.split(b"\r\n", 1)[0].decode("latin-1")
            self.tally.answers[line] = self.tally.answers.get(line, 0) + 1
            return
        self._closed(held)

    def _trickle(self, held: Held) -> None:
        if held.kind == "idle":
            return
        if held.kind == "bulk":
            self._bulk(held)
            return
        try:
            held.sock.send(b"a" if held.kind == "headers" else b" ")
        except BlockingIOError:
            return
        except OSError:
            self._closed(held)

    def _bulk(self, held: Held) -> None:
        block = b" " * 65536
        budget = min(BULK_PER_TICK, BULK_BODY - 2 - held.sent)  # the opening sent 1, 1 never
        while budget > 0:
            try:
                sent = held.sock.send(block[: min(len(block), budget)])
            except BlockingIOError:
                return
            except OSError:
                self._closed(held)
                return
            held.sent += sent
            budget -= sent

    def _closed(self, held: Held) -> None:
        self.tally.closed_by_server += 1
        self.tally.lifetimes.append(time.monotonic() - held.opened)
        self._forget(held)
        if not self._stop.is_set():
            with contextlib.suppress(OSError):  # the server is stopping; the loop ends with it
                self._open(held.kind)
