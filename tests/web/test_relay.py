"""The webhook relay passes GitHub's deliveries on unchanged: for any body and any secret, the
signature perfbot checks still verifies after the relay, and a real perfbot behind it takes a
signed ping; what perfbot answers comes back, and a perfbot that does not answer is a 502."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from werkzeug.datastructures import Headers
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from bot.bootstrap import build
from bot.settings import Settings
from bot.web import relay, signature
from bot.web.app import create_app
from tests.web.helpers import SECRET


def serving(app) -> tuple[str, object]:
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}", server


class Receiver:
    """A stand-in for perfbot's intake: keeps what reached it, answers 202."""

    def __init__(self):
        self.received: list[tuple[bytes, Headers]] = []

    def __call__(self, environ, start_response):
        request = Request(environ)
        self.received.append((request.get_data(), Headers(request.headers)))
        return Response('{"queued": true}', 202, mimetype="application/json")(environ, start_response)


@pytest.fixture(scope="module")
def chain():
    receiver = Receiver()
    target, target_server = serving(receiver)
    relayed = relay.server("127.0.0.1", 0, f"{target}/webhook")
    threading.Thread(target=relayed.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{relayed.port}", receiver
    relayed.shutdown()
    target_server.shutdown()


def github_headers(secret: str, body: bytes, event: str = "pull_request") -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/abc123",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-GitHub-Hook-ID": "42",
        "X-Hub-Signature-256": signature.sign(secret, body),
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.binary(max_size=4096),
    secret=st.text(min_size=1, max_size=40).filter(lambda s: "\x00" not in s),
    path=st.sampled_from(["/", "/webhook", "/hooks/github"]),
)
def test_the_signature_verifies_after_the_relay_for_any_body(chain, body, secret, path):
    address, receiver = chain
    sent = github_headers(secret, body)
    answer = requests.post(f"{address}{path}", data=body, headers=sent, timeout=10)
    assert answer.status_code == 202 and answer.json() == {"queued": True}
    got_body, got_headers = receiver.received[-1]
    assert got_body == body
    assert signature.verify(got_headers.get("X-Hub-Signature-256"), got_body, [secret])
    for name in (
        "X-Hub-Signature-256",
        "X-GitHub-Event",
        "X-GitHub-Delivery",
        "X-GitHub-Hook-ID",
        "Content-Type",
        "User-Agent",
    ):
        assert got_headers[name] == sent[name], name


def test_a_real_perfbot_behind_the_relay_takes_a_signed_ping_and_refuses_a_forged_one(tmp_path):
    settings = Settings(
        webhook_secrets=(SECRET,),
        database_url=f"sqlite:///{tmp_path / 'perfbot.db'}",
        queue_url=f"sqlite:///{tmp_path / 'q.db'}",
    )
    runtime = build(settings)
    bot, bot_server = serving(create_app(settings, runtime.services))
    relayed = relay.server("127.0.0.1", 0, f"{bot}/webhook")
    threading.Thread(target=relayed.serve_forever, daemon=True).start()
    try:
        body = json.dumps(
            {"zen": "Keep it logically awesome.", "hook_id": 42}, separators=(",", ":")
        ).encode()
        url = f"http://127.0.0.1:{relayed.port}/webhook"
        answer = requests.post(url, data=body, headers=github_headers(SECRET, body, "ping"), timeout=10)
        assert answer.status_code == 200, answer.text
        forged = requests.post(
            url, data=body + b" ", headers=github_headers(SECRET, body, "ping"), timeout=10
        )
        assert (forged.status_code, forged.json()["message"]) == (403, "signature does not match")
    finally:
        relayed.shutdown()
        bot_server.shutdown()
        runtime.close()


def test_a_perfbot_that_does_not_answer_is_a_502_and_only_posts_are_relayed():
    relayed = relay.server("127.0.0.1", 0, "http://127.0.0.1:9/webhook")  # the discard port: nobody
    threading.Thread(target=relayed.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{relayed.port}/webhook"
        answer = requests.post(url, data=b"{}", headers=github_headers("s", b"{}"), timeout=10)
        assert answer.status_code == 502 and "could not reach perfbot" in answer.text
        assert requests.get(url, timeout=10).status_code == 405
    finally:
        relayed.shutdown()


def relay_to(receiver_url: str):
    relayed = relay.server("127.0.0.1", 0, receiver_url)
    threading.Thread(target=relayed.serve_forever, daemon=True).start()
    return relayed


def opened(port: int, data: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(data)
    return sock


def answer_of(sock: socket.socket) -> bytes:
    """What the relay sent before it closed the connection (the socket's 60 s timeout: a test
    whose relay never answers fails, it does not hang)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except TimeoutError:
        return received + b"<still open>"
    return received


def stalled(port: int, declared: int = 1000, sent: bytes = b"{") -> socket.socket:
    head = f"POST /webhook HTTP/1.1\r\nHost: relay\r\nContent-Length: {declared}\r\n\r\n".encode()
    return opened(port, head + sent)


@pytest.fixture
def small_relay(monkeypatch):
    """A relay with small limits (raising=False: the limits did not exist before issue 35)."""
    monkeypatch.setattr(relay, "READ_S", 1.0, raising=False)
    monkeypatch.setattr(relay, "MAX_CONNECTIONS", 4, raising=False)
    monkeypatch.setattr(relay, "MAX_BYTES_HELD", 250_000, raising=False)
    receiver = Receiver()
    target, target_server = serving(receiver)
    relayed = relay_to(f"{target}/webhook")
    yield relayed, receiver
    relayed.shutdown()
    relayed.server_close()
    target_server.shutdown()


def test_a_stalled_or_trickling_body_is_cut_off_at_the_read_deadline(small_relay):
    """Issue 35: `perfbot relay` had no read timeout; a stalled body held its thread and memory
    for as long as the socket stayed open."""
    relayed, receiver = small_relay
    silent = stalled(relayed.port)
    trickling = stalled(relayed.port)
    cut = False
    for _ in range(10):  # a byte every 0.3 s renews no deadline
        try:
            trickling.send(b" ")
        except OSError:  # the relay closed it (its 408 may be lost to the reset)
            cut = True
            break
        time.sleep(0.3)
    with silent:
        assert answer_of(silent).startswith(b"HTTP/1.0 408 ")
    with trickling:
        try:
            got = answer_of(trickling)
        except ConnectionResetError:
            got = b"<reset>"
        assert cut or got.startswith(b"HTTP/1.0 408 "), got
        assert not got.endswith(b"<still open>")
    assert receiver.received == []


def test_connections_over_the_cap_are_answered_503_at_once_and_threads_stay_bounded(small_relay):
    """Issue 35: a thread per connection (40 stalled bodies: 341 threads)."""
    relayed, receiver = small_relay
    monkey_read_s = relayed.read_s
    relayed.read_s = 30  # the held ones stay held while the others come
    threads_before = threading.active_count()
    held = [stalled(relayed.port) for _ in range(4)]
    try:
        for _ in range(6):
            with opened(relayed.port, b"") as over:
                got = answer_of(over)
                assert got.startswith(b"HTTP/1.0 503 ") and b"\r\nRetry-After: 5\r\n" in got, got
        assert threading.active_count() - threads_before <= 4
    finally:
        relayed.read_s = monkey_read_s
        for sock in held:
            sock.close()
    body = b'{"zen": "ok"}'
    # The held connections' slots come back once the relay's threads see their clients close,
    # which is not at once on a loaded machine (CI once got a 503 here): wait for it, bounded.
    deadline = time.monotonic() + 20
    while True:
        answered = requests.post(
            f"http://127.0.0.1:{relayed.port}/webhook",
            data=body,
            headers=github_headers(SECRET, body),
            timeout=30,
        )
        if answered.status_code != 503 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert answered.status_code == 202 and receiver.received[-1][0] == body


def test_bodies_held_beyond_the_relays_budget_are_answered_503(small_relay):
    relayed, receiver = small_relay
    relayed.read_s = 30
    first = stalled(relayed.port, declared=1_000_000, sent=b" " * 200_000)
    time.sleep(0.5)  # read by the relay before the next one comes (not an assertion: an order)
    second = stalled(relayed.port, declared=1_000_000, sent=b" " * 200_000)
    with first, second:
        got = answer_of(second)
        assert got.startswith(b"HTTP/1.0 503 ") and b"Retry-After: 5" in got, got
        assert relayed.app.budget.held <= 250_000
    assert receiver.received == []
