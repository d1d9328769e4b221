"""A webhook relay: a small HTTP server, run where GitHub can reach it, that passes each POST on to
a perfbot server it can reach (a laptop's through an SSH tunnel, a server on a private network)
as GitHub sent it: the raw body byte for byte and GitHub's headers (`X-Hub-Signature-256`,
`X-GitHub-Event`, `X-GitHub-Delivery`, the hook's ids, content type, user agent) unchanged, so the
signature verifies at perfbot. It keeps no secret and checks nothing that perfbot checks; it
answers what perfbot answered, or 502 when perfbot did not answer.

Its clients are unauthenticated, so what they can hold is bounded (`RelayServer`): at most
`MAX_CONNECTIONS` connections, each served by a thread of a pool of that size (one more is answered
503 with Retry-After and closed at once), `READ_S` for a request's headers and body together (a
stalled or trickling client is cut off then), and `MAX_BYTES_HELD` bytes of bodies read and not yet
passed on, counted as they arrive (a body that would go over is answered 503 with Retry-After)."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import requests
from werkzeug.exceptions import ClientDisconnected
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler
from werkzeug.wrappers import Request, Response

from .webhook import MAX_BODY

log = logging.getLogger("perfbot.relay")
# What GitHub sends that perfbot reads; everything else (Host, proxies' headers) stays behind.
FORWARDED = (
    "Content-Type",
    "User-Agent",
    "X-Hub-Signature-256",
    "X-Hub-Signature",
    "X-GitHub-Event",
    "X-GitHub-Delivery",
    "X-GitHub-Hook-ID",
    "X-GitHub-Hook-Installation-Target-ID",
    "X-GitHub-Hook-Installation-Target-Type",
)
TIMEOUT_S = 30  # GitHub itself gives up after 10 s; perfbot answers well within that
# GitHub gives up after 10 s: a request not read by then was never going to be answered in time.
READ_S = 10.0
MAX_CONNECTIONS = 32
MAX_BYTES_HELD = 2 * MAX_BODY + 16 * 1024 * 1024  # two of GitHub's largest bodies, and then some
RETRY_AFTER_S = 5
CHUNK = 64 * 1024
_BUSY = b"the relay holds as many requests as it may: try again soon\n"
BUSY_ANSWER = (
    b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\nRetry-After: %d\r\n"
    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (RETRY_AFTER_S, len(_BUSY), _BUSY)
)
READ_WHOLE = "perfbot.relay.read_whole"  # the environ's key: a call that ends the read deadline
STOP_READING = "perfbot.relay.stop_reading"  # and one that reads no more of a refused request


class Budget:
    """The bytes of bodies the relay's threads hold, shared by them."""

    def __init__(self, limit: int):
        self.limit, self.held = limit, 0
        self.lock = threading.Lock()

    def take(self, size: int) -> bool:
        with self.lock:
            if self.held + size > self.limit:
                return False
            self.held += size
            return True

    def give(self, size: int) -> None:
        with self.lock:
            self.held -= size


class Deadlines:
    """Connections that must have sent their request by a time; a thread shuts the reading side of
    those that did not, which ends a read blocked on them (a trickle of a byte now and then would
    renew a socket's own timeout for ever)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self.due: dict[socket.socket, float] = {}
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="perfbot-relay-deadlines")
        self.thread.start()

    def add(self, connection: socket.socket, seconds: float) -> None:
        with self.lock:
            self.due[connection] = self.clock() + seconds

    def remove(self, connection: socket.socket) -> None:
        with self.lock:
            self.due.pop(connection, None)

    def stop(self) -> None:
        self.stopped.set()

    def _run(self) -> None:
        while not self.stopped.wait(0.1):
            now = self.clock()
            with self.lock:
                late = [connection for connection, due in self.due.items() if due <= now]
                for connection in late:
                    del self.due[connection]
            for connection in late:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RD)


class Relay:
    """The WSGI application: every POST, whatever its path, goes to ``target``."""

    def __init__(self, target: str, timeout: float = TIMEOUT_S, budget: Budget | None = None):
        self.target, self.timeout = target, timeout
        self.budget = budget or Budget(MAX_BYTES_HELD)  # read when made: tests set a smaller one
        self.http = requests.Session()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        request = Request(environ)
        try:
            return self.answer(request)(environ, start_response)
        finally:
            self.budget.give(request.environ.pop("perfbot.relay.held", 0))

    def read(self, request: Request) -> bytes | Response:
        """The body, taken from the budget as it comes; else the answer that refuses it, after
        which nothing more is read of the connection."""
        body = self._read(request)
        stop_reading = request.environ.get(STOP_READING)
        if isinstance(body, Response) and stop_reading is not None:
            stop_reading()
        return body

    def _read(self, request: Request) -> bytes | Response:
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                chunk = request.stream.read(CHUNK)
            except (OSError, ClientDisconnected):  # the read deadline ended it, or the client left
                chunk = b""
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_BODY:
                return _text(413, "body over 25 MB: GitHub never sends one")
            if not self.budget.take(len(chunk)):
                return _text(
                    503,
                    "the relay holds as many request bodies as it may: try again soon",
                    {"Retry-After": str(RETRY_AFTER_S), "Connection": "close"},
                )
            request.environ["perfbot.relay.held"] = request.environ.get("perfbot.relay.held", 0) + len(chunk)
            chunks.append(chunk)
        if request.content_length is not None and size < request.content_length:
            return _text(
                408, f"the request's body did not arrive within {READ_S:.0f} s", {"Connection": "close"}
            )
        read_whole = request.environ.get(READ_WHOLE)
        if read_whole is not None:
            read_whole()
        return b"".join(chunks)

    def answer(self, request: Request) -> Response:
        if request.method != "POST":
            return _text(405, "the relay passes on POSTed webhook deliveries only", {"Allow": "POST"})
        if request.content_length is not None and request.content_length > MAX_BODY:
            return _text(413, "body over 25 MB: GitHub never sends one")
        body = self.read(request)
        if isinstance(body, Response):
            return body
        headers = {name: request.headers[name] for name in FORWARDED if name in request.headers}
        try:
            answered = self.http.post(
                self.target, data=body, headers=headers, timeout=self.timeout, allow_redirects=False
            )
        except requests.RequestException as error:
            log.warning(
                "perfbot did not answer: %s",
                type(error).__name__,
                extra={"delivery": request.headers.get("X-GitHub-Delivery", "")[:64]},
            )
            return _text(502, f"the relay could not reach perfbot ({type(error).__name__})")
        log.info(
            "relayed",
            extra={
                "delivery": request.headers.get("X-GitHub-Delivery", "")[:64],
                "event": request.headers.get("X-GitHub-Event", "")[:64],
                "status": answered.status_code,
            },
        )
        kept = {k: v for k, v in answered.headers.items() if k.lower() == "content-type"}
        return Response(answered.content, answered.status_code, headers=kept)


class Handler(WSGIRequestHandler):
    """werkzeug's handler, one request per connection (HTTP/1.0), whose request must be in within
    the server's read deadline; the socket's own timeout ends a client that sends nothing."""

    protocol_version = "HTTP/1.0"
    server: RelayServer

    def setup(self) -> None:
        super().setup()
        # socketserver's class-wide `timeout`, per server: a read that gets nothing for this long.
        self.connection.settimeout(self.server.read_s)
        self.server.deadlines.add(self.connection, self.server.read_s)

    def finish(self) -> None:
        self.server.deadlines.remove(self.connection)
        super().finish()

    def make_environ(self) -> dict[str, Any]:
        environ = super().make_environ()
        connection, deadlines = self.connection, self.server.deadlines
        environ[READ_WHOLE] = lambda: deadlines.remove(connection)
        environ[STOP_READING] = lambda: _stop_reading(connection)
        return environ


class RelayServer(BaseWSGIServer):
    """werkzeug's server with a bounded pool of threads instead of one thread per connection."""

    def __init__(
        self,
        host: str,
        port: int,
        app: Relay,
        fd: int | None = None,
        connections: int | None = None,
        read_s: float | None = None,
    ):
        super().__init__(host, port, app, handler=Handler, fd=fd)
        connections = MAX_CONNECTIONS if connections is None else connections
        self.read_s = READ_S if read_s is None else read_s
        self.slots = threading.BoundedSemaphore(connections)
        self.pool = ThreadPoolExecutor(max_workers=connections, thread_name_prefix="perfbot-relay")
        self.deadlines = Deadlines()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.sendall(BUSY_ANSWER)
            self.shutdown_request(request)
            return
        self.pool.submit(self._serve, request, client_address)

    def _serve(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001 - socketserver's own way: reported, the server goes on
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            self.slots.release()

    def server_close(self) -> None:
        super().server_close()
        if hasattr(self, "pool"):  # werkzeug closes its first socket while it is being made
            self.deadlines.stop()
            self.pool.shutdown(wait=False, cancel_futures=True)


def server(host: str, port: int, target: str, **limits: Any) -> RelayServer:
    """The relay, bound to ``host``:``port`` (0: any free port), not yet serving; `OSError` when
    the address cannot be had (werkzeug's own binding would exit the process instead).
    ``limits``: `RelayServer`'s ``connections`` and ``read_s``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    bound = socket.create_server((host, port), family=family)
    return RelayServer(host, bound.getsockname()[1], Relay(target), fd=bound.detach(), **limits)


def _stop_reading(connection: socket.socket) -> None:
    # werkzeug reads what is left of a body before it closes; a refused one is not worth the wait.
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RD)


def _text(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return Response(message + "\n", status, headers=headers or {}, mimetype="text/plain")
