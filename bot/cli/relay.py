"""`perfbot relay --listen HOST:PORT --to URL`: pass GitHub's webhook deliveries on to a perfbot
server that GitHub cannot reach, unchanged, so that their signatures verify there
(`bot.web.relay`)."""

from __future__ import annotations

import argparse
import logging
from urllib.parse import urlsplit

from .common import UsageError

log = logging.getLogger("perfbot.relay")


def setup(subparsers) -> None:
    parser = subparsers.add_parser(
        "relay",
        help="pass webhook deliveries on to a perfbot server, byte for byte",
        description="Listen where GitHub can deliver (set the App's webhook URL to this address) and pass "
        "every POST on to --to with its raw body and GitHub's headers unchanged, so the "
        "signature verifies at perfbot; answer what perfbot answered. For trying perfbot "
        "from a laptop or a private network (werkzeug's server; put a TLS proxy in front "
        "of it for anything lasting). At most 32 connections at once, 10 s for a request and "
        "66 MB of bodies held; beyond those it answers 503 with Retry-After.",
    )
    parser.add_argument(
        "--listen", metavar="HOST:PORT", required=True, help="address to listen on, e.g. 0.0.0.0:9000"
    )
    parser.add_argument(
        "--to", metavar="URL", required=True, help="perfbot's webhook URL, e.g. http://127.0.0.1:8000/webhook"
    )
    parser.set_defaults(run=run)


def listen_address(text: str) -> tuple[str, int]:
    host, colon, port = text.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"--listen: expected HOST:PORT, e.g. 0.0.0.0:9000, got {text!r}")
    return host.strip("[]"), int(port)


def target_url(text: str) -> str:
    try:
        parts = urlsplit(text)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            f"--to: expected perfbot's http(s) webhook URL, e.g. http://127.0.0.1:8000/webhook, got {text!r}"
        )
    return text


def run(args: argparse.Namespace) -> int:
    from bot.service import logs
    from bot.web import relay

    host, port = listen_address(args.listen)
    target = target_url(args.to)
    logs.configure("INFO")
    try:
        served = relay.server(host, port, target)
    except OSError as error:
        raise UsageError(f"--listen: cannot listen on {host}:{port} ({error.strerror})") from None
    log.info("relaying webhook deliveries", extra={"listen": f"{host}:{served.port}", "to": target})
    try:
        served.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        served.server_close()
    return 0
