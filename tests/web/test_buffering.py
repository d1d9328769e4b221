"""`bot.web.buffering.WsgiOnThreads`, the bridge from gunicorn's event loop to the WSGI app: the
app gets the request as a WSGI server would give it (the body byte for byte however it was cut
into chunks, the headers, the path), and only once the body is whole; a body over `MAX_BODY`, a
body that does not come in time and a client that went away never reach the app."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import threading
from collections.abc import Iterable

import pytest
from flask import Flask, jsonify, request
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.web import buffering
from bot.web.buffering import WsgiOnThreads
from bot.web.webhook import MAX_BODY


def echo_app() -> Flask:
    app = Flask("echo")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY

    @app.route("/<path:anything>", methods=["GET", "POST", "PUT"])
    @app.route("/", methods=["GET", "POST", "PUT"])
    def echo(anything: str = ""):
        body = request.get_data(cache=False)
        return jsonify(
            {
                "method": request.method,
                "path": request.path,
                "query": request.query_string.decode(),
                "sha": hashlib.sha256(body).hexdigest(),
                "length": len(body),
                "headers": {k.lower(): v for k, v in request.headers.items()},
            }
        )

    return app


class Recorder:
    """A WSGI app that records that it was called."""

    def __init__(self):
        self.calls = 0

    def __call__(self, environ: dict, start_response) -> Iterable[bytes]:
        self.calls += 1
        start_response("204 No Content", [])
        return []


def scope(
    method: str = "POST", path: str = "/", headers: list[tuple[bytes, bytes]] = (), query: bytes = b""
) -> dict:
    return {
        "type": "http",
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": list(headers),
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
    }


def call(app, request_scope: dict, messages: list[dict] | None) -> list[dict]:
    """Run the bridge on one request whose body comes as ``messages`` (None: it never comes);
    what it sent back."""
    bridge, sent = WsgiOnThreads(app, threads=2), []

    async def receive() -> dict:
        if messages is None:
            await asyncio.sleep(3600)
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    try:
        asyncio.run(bridge(request_scope, receive, send))
    finally:
        bridge.close()
    return sent


def chunks_of(body: bytes, cuts: list[int]) -> list[dict]:
    points = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    pieces = [body[a:b] for a, b in zip(points, points[1:], strict=False)] or [b""]
    return [
        {"type": "http.request", "body": piece, "more_body": n < len(pieces) - 1}
        for n, piece in enumerate(pieces)
    ]


def answer(sent: list[dict]) -> tuple[int, dict[bytes, bytes], bytes]:
    start, body = sent
    return start["status"], dict(start["headers"]), body["body"]


@settings(max_examples=80, deadline=None)
@given(
    body=st.binary(max_size=70_000),
    cuts=st.lists(st.integers(min_value=0), max_size=12),
    declared=st.booleans(),
)
def test_the_app_gets_the_body_byte_for_byte_however_it_came_in_chunks(body, cuts, declared):
    headers = (
        [(b"content-length", str(len(body)).encode())] if declared else [(b"transfer-encoding", b"chunked")]
    )
    status, _, raw = answer(call(echo_app(), scope(headers=headers), chunks_of(body, cuts)))
    got = json.loads(raw)
    assert status == 200
    assert (got["length"], got["sha"]) == (len(body), hashlib.sha256(body).hexdigest())
    assert "transfer-encoding" not in got["headers"], "the app gets a whole body, with its length"


header_names = st.from_regex(r"x-[a-z0-9-]{1,20}", fullmatch=True)
header_values = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, blacklist_characters="\x7f"), max_size=40
).map(str.strip)


@settings(max_examples=80, deadline=None)
@given(
    headers=st.lists(st.tuples(header_names, header_values), max_size=8),
    path=st.text(
        st.characters(blacklist_categories=["Cs", "Cc"], blacklist_characters="/?#%\\"), max_size=20
    ),
    query=st.from_regex(r"[a-z0-9=&]{0,30}", fullmatch=True),
)
def test_the_app_gets_the_headers_path_and_query_the_client_sent(headers, path, query):
    raw_headers = [(name.encode(), value.encode("latin-1")) for name, value in headers]
    sent = call(
        echo_app(),
        scope("GET", f"/p/{path}", raw_headers, query.encode()),
        [{"type": "http.request", "body": b""}],
    )
    status, _, raw = answer(sent)
    got = json.loads(raw)
    assert status == 200
    assert (got["method"], got["path"], got["query"]) == ("GET", f"/p/{path}", query)
    expected: dict[str, str] = {}
    for name, value in headers:  # repeated headers reach the app joined, as WSGI servers join them
        expected[name] = f"{expected[name]},{value}" if name in expected else value
    assert {k: v for k, v in got["headers"].items() if k.startswith("x-")} == expected


def test_a_declared_body_over_the_cap_is_refused_with_413_before_any_of_it_is_read():
    app = Recorder()
    sent = call(app, scope(headers=[(b"content-length", str(MAX_BODY + 1).encode())]), messages=None)
    status, headers, _ = answer(sent)
    assert (status, app.calls, headers[b"connection"]) == (413, 0, b"close")


def test_a_content_length_that_is_no_number_is_left_to_the_body_itself():
    sent = call(
        echo_app(), scope(headers=[(b"content-length", b"ten")]), [{"type": "http.request", "body": b"{}"}]
    )
    status, _, raw = answer(sent)
    assert (status, json.loads(raw)["length"]) == (200, 2)


def test_a_chunked_body_that_grows_over_the_cap_is_refused_with_413():
    app = Recorder()
    piece = b"x" * (1024 * 1024)
    messages = [
        {"type": "http.request", "body": piece, "more_body": True} for _ in range(MAX_BODY // len(piece) + 1)
    ]
    status, _, _ = answer(call(app, scope(headers=[(b"transfer-encoding", b"chunked")]), messages))
    assert (status, app.calls) == (413, 0)


def test_a_body_that_does_not_come_in_time_is_refused_with_408(monkeypatch):
    monkeypatch.setattr(buffering, "BODY_S", 0.05)
    app = Recorder()
    status, _, body = answer(call(app, scope(headers=[(b"content-length", b"10")]), messages=None))
    assert (status, app.calls) == (408, 0) and b"did not arrive" in body


def test_a_client_that_went_away_is_not_answered_and_reaches_no_app():
    app = Recorder()
    assert call(app, scope(headers=[(b"content-length", b"10")]), [{"type": "http.disconnect"}]) == []
    assert app.calls == 0


def test_an_error_page_started_after_a_failure_replaces_the_answer():
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        try:
            raise RuntimeError("half-way")
        except RuntimeError:
            start_response("500 Internal Server Error", [("Content-Type", "text/plain")], sys.exc_info())
        return [b"failed"]

    assert answer(call(app, scope("GET"), [{"type": "http.request", "body": b""}]))[0::2] == (500, b"failed")


def test_a_websocket_upgrade_is_refused():
    sent = call(Recorder(), {**scope("GET"), "type": "websocket"}, [])
    assert sent == [{"type": "websocket.close", "code": 1008}]


@pytest.mark.parametrize("threads", [1, 3])
def test_the_app_runs_on_the_workers_threads_never_on_the_event_loop(threads):
    seen = []

    def app(environ, start_response):
        seen.append(threading.current_thread().name)
        start_response("200 OK", [])
        return [b""]

    bridge = WsgiOnThreads(app, threads=threads)

    async def one() -> None:
        async def receive() -> dict:
            return {"type": "http.request", "body": b""}

        async def send(message: dict) -> None:
            pass

        await asyncio.gather(*(bridge(scope("GET"), receive, send) for _ in range(6)))

    try:
        asyncio.run(one())
    finally:
        bridge.close()
    assert len(seen) == 6 and all(name.startswith("perfbot-web") for name in seen)
    assert len(set(seen)) <= threads


def flood(bridge, count: int, chunk: bytes, released: asyncio.Event, answered: list[int]):
    """``count`` requests that each send ``chunk`` of a body declared longer, then wait until
    ``released`` (a stalled client); the status of each answer, in ``answered``."""

    async def one() -> None:
        messages = [{"type": "http.request", "body": chunk, "more_body": True}]

        async def receive() -> dict:
            if messages:
                return messages.pop(0)
            await released.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            if message["type"] == "http.response.start":
                answered.append(message["status"])
                assert message["status"] != 503 or (b"retry-after", b"5") in message["headers"]

        length = str(len(chunk) * 10).encode()
        await bridge(scope(headers=[(b"content-length", length)]), receive, send)

    return [asyncio.ensure_future(one()) for _ in range(count)]


async def until(condition, within_s: float = 60) -> None:
    """Wait for ``condition`` (a check that the answer came, not a timing: the limit is generous)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_s
    while not condition():
        assert loop.time() < deadline, "the condition never came"
        await asyncio.sleep(0.01)


def test_stalled_bodies_hold_no_more_than_the_workers_budget_and_the_rest_are_told_to_retry(monkeypatch):
    """Issue 35: 40 connections that send most of a large body and stall held 962 MB of the web
    worker. 64 stalled clients of 100 KB each against a budget of 1 MB: 10 are held, 54 are
    answered 503 with Retry-After at once (before: none answered until their deadline)."""
    monkeypatch.setattr(buffering, "MAX_BYTES_HELD", 1_000_000, raising=False)
    monkeypatch.setattr(buffering, "BODY_S", 3600)
    app, answered, peak = Recorder(), [], []
    bridge = WsgiOnThreads(app, threads=2)

    async def attack() -> None:
        released = asyncio.Event()
        tasks = flood(bridge, 64, b" " * 100_000, released, answered)
        await until(lambda: len(answered) >= 54)
        peak.append(bridge.budget.held)
        released.set()
        await asyncio.gather(*tasks)

    try:
        asyncio.run(attack())
    finally:
        bridge.close()
    assert answered == [503] * 54 and peak == [1_000_000] and app.calls == 0
    assert bridge.budget.held == 0, "every byte given back once its client went away"


def test_requests_read_whole_are_answered_while_stalled_bodies_fill_the_budget(monkeypatch):
    monkeypatch.setattr(buffering, "MAX_BYTES_HELD", 1_000_000, raising=False)
    monkeypatch.setattr(buffering, "BODY_S", 3600)
    running, go_on = threading.Event(), threading.Event()

    def slow_app(environ, start_response):
        running.set()
        go_on.wait(timeout=60)
        start_response("200 OK", [])
        return [environ["wsgi.input"].read()]

    bridge, answered, delivered = WsgiOnThreads(slow_app, threads=2), [], []

    async def both() -> None:
        body = b"{" + b" " * 299_998 + b"}"
        messages = [{"type": "http.request", "body": body, "more_body": False}]

        async def receive() -> dict:
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            delivered.append(message)

        accepted = asyncio.ensure_future(
            bridge(scope(headers=[(b"content-length", str(len(body)).encode())]), receive, send)
        )
        await until(running.is_set)
        released = asyncio.Event()
        tasks = flood(bridge, 20, b" " * 100_000, released, answered)
        await until(lambda: len(answered) >= 13)
        go_on.set()
        await accepted
        released.set()
        await asyncio.gather(*tasks)

    try:
        asyncio.run(both())
    finally:
        go_on.set()
        bridge.close()
    status, _, body = answer(delivered)
    assert status == 200 and len(body) == 300_000
    assert answered == [503] * 13, "7 stalled bodies fit beside the accepted one, the rest were refused"


def test_a_connection_over_the_workers_cap_is_answered_503_and_closed_before_anything_is_read():
    open_now: set = set()

    class Held(asyncio.Protocol):
        def connection_made(self, transport) -> None:
            open_now.add(self)

    async def connect_all() -> list[bytes]:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: buffering.admitted(open_now, 3, Held), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        got, kept = [], []
        for n in range(5):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            kept.append(writer)
            if n < 3:
                await until(lambda n=n: len(open_now) == n + 1)  # admitted, and held open
            else:
                got.append(await asyncio.wait_for(reader.read(), 30))  # answered, then closed
        assert len(open_now) == 3
        for writer in kept:
            writer.close()
        server.close()
        return got

    got = asyncio.run(connect_all())
    assert len(got) == 2
    for answer_bytes in got:
        assert answer_bytes.startswith(b"HTTP/1.1 503 ") and b"\r\nRetry-After: 5\r\n" in answer_bytes
