"""The web worker: gunicorn's asyncio worker, which reads every request whole before one of the
worker's threads runs perfbot's (WSGI) app on it.

gunicorn's threaded worker reads a request in the thread that then runs the app, so a few clients
that connect and send slowly or not at all (partial headers; a Content-Length and then silence)
hold every thread, and deliveries and /healthz wait behind them for as long as they like. Here
the event loop reads all connections at once, holding no thread, and each has deadlines: its
request headers within gunicorn's keep-alive (which gunicorn applies only between requests;
`Protocol` applies it to the first request too), then its body within `BODY_S`, at most
`webhook.MAX_BODY` bytes (413 at once when Content-Length says more). Only a request read whole
goes to a thread (`--threads` of them per worker), which is then never held by its client.

Nothing is known of a request before its body is whole and its signature checked, so what
unauthenticated clients can hold is bounded per worker: `MAX_CONNECTIONS` open connections (one
more is answered 503 with Retry-After and closed at once, `Busy`), and `MAX_BYTES_HELD` bytes of
bodies, counted as they arrive and until their answer is sent (`Budget`): a body that would go over
is answered 503 with Retry-After and closed, while the requests already read whole keep theirs and
are answered as usual.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from gunicorn.asgi.protocol import ASGIProtocol
from gunicorn.workers.gasgi import ASGIWorker

from .webhook import MAX_BODY

# GitHub gives up on a delivery after 10 s: a body that takes longer was never going to be answered
# in time, and a client that trickles one holds only memory and a socket, for this long at most.
BODY_S = 10.0
# When the worker stops, how long a connection between requests may still send one (as long as
# gunicorn's threaded worker gives it).
STOP_LINGER_S = 2.0
# Per worker. Two bodies of GitHub's largest size fit in the bytes; an idle or slow connection
# costs a socket and gunicorn's buffers (its parser's limits: 8 KB a header line), so 256 of them
# hold a few MB. Over either, the client is told when to try again.
MAX_CONNECTIONS = 256
MAX_BYTES_HELD = 2 * MAX_BODY + 16 * 1024 * 1024
RETRY_AFTER_S = 5

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
WsgiApp = Callable[[dict, Callable], Iterable[bytes]]


class Protocol(ASGIProtocol):
    """gunicorn's HTTP/1 protocol, with its keep-alive deadline on the first request's headers
    too: gunicorn arms it only after a response, so a connection that never finished its first
    request's headers stayed open for good. gunicorn cancels it once the headers are in."""

    _keepalive_handle: asyncio.TimerHandle | None  # gunicorn's: the deadline of the request awaited
    _request_ready: asyncio.Event | None  # gunicorn's: set once a request's headers are in

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self.worker.connections.add(self)
        if self._request_ready is not None:  # HTTP/1 (an HTTP/2 connection has deadlines of its own)
            self._arm_keepalive_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self.worker.connections.discard(self)
        super().connection_lost(exc)

    def linger(self, seconds: float) -> None:
        """The worker is stopping: if this connection is waiting for a request, it gets ``seconds``
        more at most to send its headers (gunicorn's threaded worker gives kept-alive connections
        as long); a request already in is served, and the connection closed after it."""
        handle, loop = self._keepalive_handle, self.worker.loop
        if self._awaiting_request and (handle is None or handle.when() > loop.time() + seconds):
            self._cancel_keepalive_timer()
            self._keepalive_handle = loop.call_later(seconds, self._keepalive_timeout)


class Worker(ASGIWorker):
    """gunicorn's asyncio worker serving `Protocol`, with the WSGI app behind `WsgiOnThreads`
    on ``threads`` threads (gunicorn's own asyncio worker ignores the setting)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.connections: set[Protocol] = set()

    @classmethod
    def check_config(cls, cfg: Any, log: Any) -> None:
        """Nothing to warn of: the threads are the app's (gunicorn's worker warns that it has none)."""

    def load_wsgi(self) -> None:
        self.asgi = WsgiOnThreads(self.app.wsgi(), self.cfg.threads)

    async def _serve(self) -> None:
        # gunicorn's own loop, less the ASGI lifespan (the WSGI app has none), on `Protocol`.
        ssl = self._get_ssl_context()
        for listener in self.sockets:
            server = await self.loop.create_server(
                lambda: admitted(self.connections, MAX_CONNECTIONS, lambda: Protocol(self)),
                sock=listener.sock,
                ssl=ssl,
            )
            self.servers.append(server)
        while self.alive and self.ppid == os.getppid():
            self.notify()
            await asyncio.sleep(1.0)
        for connection in list(self.connections):  # else idle ones hold the stop for their keep-alive
            connection.linger(STOP_LINGER_S)
        await self._shutdown()
        self.asgi.close()


def admitted(open_now: set[Any], limit: int, protocol: Callable[[], asyncio.Protocol]) -> asyncio.Protocol:
    """The protocol for a connection just accepted: ``protocol()`` while fewer than ``limit`` are
    open, else `Busy` (the event loop calls this and then ``connection_made`` with nothing in
    between, so the count is the one the connection joins)."""
    return protocol() if len(open_now) < limit else Busy()


class Busy(asyncio.Protocol):
    """A connection over `MAX_CONNECTIONS`: answered 503 with Retry-After before anything is read
    (a client may answer before reading the request), then closed."""

    BODY = b'{"message": "too many connections: try again soon"}'
    ANSWER = (
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        b"Retry-After: %d\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
        % (RETRY_AFTER_S, len(BODY), BODY)
    )

    def connection_made(self, transport: Any) -> None:
        transport.write(self.ANSWER)
        transport.close()


class Budget:
    """The bytes of request bodies a worker holds, from their first byte until their answer is
    sent; used from the event loop's thread only."""

    def __init__(self, limit: int | None = None):
        self.limit, self.held = MAX_BYTES_HELD if limit is None else limit, 0

    def take(self, size: int) -> bool:
        if self.held + size > self.limit:
            return False
        self.held += size
        return True

    def give(self, size: int) -> None:
        self.held -= size


class Holding:
    """What one request took of a `Budget`, given back once, when it is answered."""

    def __init__(self, budget: Budget):
        self.budget, self.size = budget, 0

    def take(self, size: int) -> bool:
        if not self.budget.take(size):
            return False
        self.size += size
        return True

    def give_back(self) -> None:
        self.budget.give(self.size)
        self.size = 0


@dataclass
class Reply:
    """What the WSGI app answered, whole."""

    status: int = 500
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: list[bytes] = field(default_factory=list)


class WsgiOnThreads:
    """An ASGI app that reads the request's body whole (within `BODY_S`, at most `MAX_BODY`
    bytes), then runs the WSGI ``app`` on one of ``threads`` threads and sends its answer."""

    def __init__(self, app: WsgiApp, threads: int, budget: Budget | None = None):
        self.app = app
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="perfbot-web")
        self.budget = budget or Budget()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # a WebSocket upgrade: refused before it is accepted (403)
            await send({"type": "websocket.close", "code": 1008})
            return
        holding = Holding(self.budget)
        try:
            body = await read_body(scope, receive, holding)
            if body is None:
                return  # the client went away: no one to answer
            if isinstance(body, Reply):
                await respond(send, body)
                return
            environ = wsgi_environ(scope, body)
            reply = await asyncio.get_running_loop().run_in_executor(self.pool, run_wsgi, self.app, environ)
            await respond(send, reply)
        finally:
            holding.give_back()

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


async def read_body(scope: Scope, receive: Receive, holding: Holding) -> bytes | Reply | None:
    """The whole body, its bytes taken from ``holding``'s budget; else the answer that refuses it
    (413 too large, 408 too slow, 503 over the worker's budget); None when the client
    disconnected."""
    declared = _content_length(scope)
    if declared is not None and declared > MAX_BODY:
        return refusal(413, f"the body is over {MAX_BODY} bytes")
    chunks, size = [], 0
    try:
        async with asyncio.timeout(BODY_S):
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return None
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > MAX_BODY:
                    return refusal(413, f"the body is over {MAX_BODY} bytes")
                if not holding.take(len(chunk)):
                    return refusal(
                        503,
                        "the server holds as many request bodies as it may: try again soon",
                        ((b"retry-after", str(RETRY_AFTER_S).encode()),),
                    )
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
    except TimeoutError:
        return refusal(408, f"the request's body did not arrive within {BODY_S:.0f} s")


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:  # gunicorn answers 400 to such a request before it gets here
                return None
    return None


def refusal(status: int, message: str, extra: tuple[tuple[bytes, bytes], ...] = ()) -> Reply:
    body = json.dumps({"message": message}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *extra,
    ]  # what is left of its body is never read
    return Reply(status, headers, [body])


def wsgi_environ(scope: Scope, body: bytes) -> dict[str, Any]:
    """PEP 3333's environ of an ASGI request whose body was read whole: the header names as the
    CGI variables, the path's UTF-8 as latin-1, CONTENT_LENGTH the body's own length (a chunked
    request comes to the app with one too)."""
    server = scope.get("server") or ("localhost", 80)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": scope.get("root_path", "").encode().decode("latin-1"),
        "PATH_INFO": scope["path"].encode().decode("latin-1"),
        "QUERY_STRING": scope["query_string"].decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1]),
        "SERVER_PROTOCOL": f"HTTP/{scope['http_version']}",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if scope.get("client"):
        environ["REMOTE_ADDR"], environ["REMOTE_PORT"] = str(scope["client"][0]), str(scope["client"][1])
    for raw_name, raw_value in scope["headers"]:
        name = raw_name.decode("latin-1").upper().replace("-", "_")
        if name in ("CONTENT_LENGTH", "TRANSFER_ENCODING"):
            continue  # the body is whole: its own length is what counts
        key = name if name == "CONTENT_TYPE" else f"HTTP_{name}"
        value = raw_value.decode("latin-1")
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    return environ


def run_wsgi(app: WsgiApp, environ: dict[str, Any]) -> Reply:
    """Run ``app`` on ``environ`` (in a worker thread) and collect its whole answer."""
    reply = Reply()

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable:
        # Nothing is sent before the app returns, so an error page may always replace the answer.
        reply.status = int(status.split(" ", 1)[0])
        reply.headers = [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]
        return reply.body.append

    result = app(environ, start_response)
    try:
        reply.body.extend(chunk for chunk in result if chunk)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return reply


async def respond(send: Send, reply: Reply) -> None:
    await send({"type": "http.response.start", "status": reply.status, "headers": reply.headers})
    await send({"type": "http.response.body", "body": b"".join(reply.body)})
