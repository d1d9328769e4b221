"""Slow and idle clients against the real `perfbot serve`: while they hold connections (more of
them than the worker has threads), signed deliveries and /healthz are answered, as GitHub needs
within its 10 s; and the server ends each slow connection itself: headers not in within the
keep-alive, a body not in within `BODY_S` (408), a body over `MAX_BODY` refused at once (413).
`benchmarks/bench_faults.py --only slow-clients` measures the answer times with 64 held."""

from __future__ import annotations

import json
import socket
import time

import requests

from bot.web.buffering import BODY_S
from bot.web.webhook import MAX_BODY
from tests.support.serving import environment, served
from tests.web.helpers import SECRET, headers
from tests.web.slow_clients import SlowClients

GITHUB_TIMEOUT_S = 10  # GitHub gives up on a delivery after this long, and does not send it again
THREADS = 8  # perfbot serve's default --threads


def raw(base: str, request: bytes, wait_s: float) -> bytes:
    """Send ``request`` on a connection of its own; what the server sent before it closed the
    connection (or ``wait_s`` passed)."""
    host, port = base.removeprefix("http://").split(":")
    received = b""
    with socket.create_connection((host, int(port)), timeout=wait_s) as sock:
        sock.sendall(request)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                return received
            received += chunk
    return received + b"<still open>"


def test_deliveries_and_healthz_are_answered_while_slow_clients_hold_more_connections_than_threads(tmp_path):
    body = json.dumps({"zen": "Design for failure.", "hook_id": 1}).encode()
    with (
        served(tmp_path, environment(PERFBOT_WEBHOOK_SECRET=SECRET)) as server,
        SlowClients(server.base, 2 * THREADS, kinds=("headers", "body")) as attack,
    ):
        time.sleep(1.5)  # every slow connection accepted, and a first byte trickled after its opening
        for _ in range(3):
            answer = requests.post(
                f"{server.base}/webhook", data=body, headers=headers("ping", body), timeout=GITHUB_TIMEOUT_S
            )
            assert (answer.status_code, answer.json()) == (200, {"message": "pong"})
            assert requests.get(f"{server.base}/healthz", timeout=GITHUB_TIMEOUT_S).status_code == 200
        assert attack.held() == 2 * THREADS


def test_the_server_ends_slow_requests_itself(tmp_path):
    with served(tmp_path, environment(PERFBOT_WEBHOOK_SECRET=SECRET)) as server:
        # Headers that never end: closed, with nothing sent (what could it answer?).
        assert raw(server.base, b"POST /webhook HTTP/1.1\r\nHost: perfbot\r\nX-Slow: a", wait_s=30) == b""
        # A body announced and never sent: 408 once BODY_S has passed.
        waited = raw(
            server.base,
            b"POST /webhook HTTP/1.1\r\nHost: perfbot\r\nContent-Length: 100\r\n\r\n{",
            wait_s=BODY_S + 20,
        )
        assert waited.startswith(b"HTTP/1.1 408 ") and waited.endswith(b"}"), waited
        # A body over MAX_BODY: 413 before any of it is read.
        big = f"POST /webhook HTTP/1.1\r\nHost: perfbot\r\nContent-Length: {MAX_BODY + 1}\r\n\r\n".encode()
        assert raw(server.base, big, wait_s=10).startswith(b"HTTP/1.1 413 ")
