"""A webhook relay: a small HTTP server, run where GitHub can reach it, that passes each POST on to
a perfbot server it can reach (a laptop's through an SSH tunnel, a server on a private network)
as GitHub sent it: the raw body byte for byte and GitHub's headers (`X-Hub-Signature-256`,
`X-GitHub-Event`, `X-GitHub-Delivery`, the hook's ids, content type, user agent) unchanged, so the
signature verifies at perfbot. It keeps no secret and checks nothing that perfbot checks; it
answers what perfbot answered, or 502 when perfbot did not answer."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Iterable
from typing import Any

import requests
from werkzeug.serving import BaseWSGIServer, make_server
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


class Relay:
    """The WSGI application: every POST, whatever its path, goes to ``target``."""

    def __init__(self, target: str, timeout: float = TIMEOUT_S):
        self.target, self.timeout = target, timeout
        self.http = requests.Session()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        return self.answer(Request(environ))(environ, start_response)

    def answer(self, request: Request) -> Response:
        if request.method != "POST":
            return _text(405, "the relay passes on POSTed webhook deliveries only", {"Allow": "POST"})
        if request.content_length is not None and request.content_length > MAX_BODY:
            return _text(413, "body over 25 MB: GitHub never sends one")
        body = request.stream.read(MAX_BODY + 1)
        if len(body) > MAX_BODY:
            return _text(413, "body over 25 MB: GitHub never sends one")
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


def server(host: str, port: int, target: str) -> BaseWSGIServer:
    """The relay, bound to ``host``:``port`` (0: any free port), not yet serving; `OSError` when
    the address cannot be had (werkzeug's own binding would exit the process instead)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    bound = socket.create_server((host, port), family=family)
    return make_server(host, bound.getsockname()[1], Relay(target), threaded=True, fd=bound.detach())


def _text(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return Response(message + "\n", status, headers=headers or {}, mimetype="text/plain")
