"""`perfbot deliver`: send a webhook payload to a perfbot server as GitHub would, signed with the
webhook secret, so that the bot can be tried without GitHub (GitHub's example payloads, or a
delivery copied from the App's advanced settings).

Standard library only (urllib), so that it works on any install of perfbot.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import re
import sys
import time
import uuid
from http import HTTPStatus
from pathlib import Path
from urllib.parse import urlsplit

from bot import __version__

from .measure_options import positive_float
from .parsing import UsageError

MAX_PAYLOAD = 25 * 2**20  # GitHub sends no larger delivery
USER_AGENT = f"GitHub-Hookshot/perfbot-deliver-{__version__}"
HEADER_VALUE = re.compile(r"[!-~]+")  # printable ASCII, no space: what an event name or an id holds
MAX_TIMEOUT = 24 * 3600  # socket.settimeout overflows from about 1e10 s; no answer is worth a day


def setup(subparsers) -> None:
    parser = subparsers.add_parser(
        "deliver", help="send a webhook payload to a perfbot server, signed as GitHub signs it",
        description="POST PAYLOAD (a JSON file, or - for standard input) to URL as GitHub delivers the "
                    "webhook EVENT: signed with the webhook secret (X-Hub-Signature-256), with GitHub's "
                    "headers. Prints the server's answer in one line; exit 0 for a 2xx answer, 1 for "
                    "another, 2 when it could not be sent.")
    parser.add_argument("event", metavar="EVENT", help="the event name, as X-GitHub-Event: pull_request, "
                                                       "issue_comment, workflow_run, ping, ...")
    parser.add_argument("payload", metavar="PAYLOAD",
                        help="the payload: a JSON file, or - for standard input")
    parser.add_argument("--to", required=True, metavar="URL",
                        help="the webhook URL, e.g. http://127.0.0.1:8000/webhook")
    parser.add_argument("--secret", help="the webhook secret (default: the first of PERFBOT_WEBHOOK_SECRET)")
    parser.add_argument("--action", help="set the payload's action (opened, synchronize, created, ...)")
    parser.add_argument("--delivery", metavar="GUID",
                        help="X-GitHub-Delivery (default: a new UUID; repeat one to test deduplication)")
    parser.add_argument("--hook-id", default="1", metavar="ID", help="X-GitHub-Hook-ID (default 1)")
    parser.add_argument("--timeout", type=positive_float, default=30, metavar="SECONDS",
                        help="how long to wait for the answer (default 30)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.timeout > MAX_TIMEOUT:
        raise UsageError(f"--timeout {args.timeout:g}: expected at most {MAX_TIMEOUT} seconds (a day)")
    for name, value in (("EVENT", args.event), ("--delivery", args.delivery), ("--hook-id", args.hook_id)):
        _header_value(name, value)
    target = _url(args.to)
    secret = _secret(args.secret)
    body, payload = _body(args.payload, args.action)
    guid = args.delivery or str(uuid.uuid4())
    headers = {
        "X-GitHub-Event": args.event,
        "X-GitHub-Delivery": guid,
        "X-GitHub-Hook-ID": args.hook_id,
        "X-Hub-Signature-256": "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest(),
        "X-Hub-Signature": "sha1=" + hmac.new(secret.encode(), body, hashlib.sha1).hexdigest(),
        "User-Agent": USER_AGENT,
        "Content-Type": "application/json",
        "Accept": "*/*",
    }
    headers.update(_target_headers(payload))
    started = time.monotonic()
    status, reason, message = _post(target, body, headers, args.timeout)
    action = payload.get("action")
    what = f"{args.event}.{action}" if isinstance(action, str) else args.event
    answer = f": {message}" if message else ""
    took = time.monotonic() - started
    print(f"{status} {_phrase(status, reason)}{answer} ({what}, delivery {guid}, {took:.2f} s)")
    return 0 if 200 <= status < 300 else 1


def _url(text: str) -> str:
    if not text.isprintable():  # a newline would split the error message, or the request line
        raise UsageError(f"--to {text!r}: a URL holds no control characters")
    try:
        parts = urlsplit(text)
    except ValueError as error:  # an unclosed or misused [ ] around the host
        raise UsageError(f"--to {text}: not a valid URL ({error})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"--to {text}: expected an http:// or https:// URL, e.g. http://127.0.0.1:8000/webhook")
    return text


def _header_value(name: str, value: str | None) -> None:
    """Refuse what http.client would refuse with a traceback (a newline, a character beyond
    Latin-1) or send as a header no GitHub delivery has (a space, a control character, nothing)."""
    if value is not None and not HEADER_VALUE.fullmatch(value):
        raise UsageError(f"{name} {value!r}: expected printable ASCII characters, no spaces "
                         "(it is an HTTP header's value)")


def _secret(given: str | None) -> str:
    if given:
        return given
    configured = [s.strip() for s in os.environ.get("PERFBOT_WEBHOOK_SECRET", "").split(",") if s.strip()]
    if not configured:
        raise UsageError("no webhook secret: pass --secret or set PERFBOT_WEBHOOK_SECRET (the server's)")
    return configured[0]


def _body(name: str, action: str | None) -> tuple[bytes, dict]:
    """The bytes to send (the file's own, unless --action changes the payload) and the payload."""
    where = "standard input" if name == "-" else name
    try:
        if name == "-":
            data = sys.stdin.buffer.read(MAX_PAYLOAD + 1)
        else:
            with Path(name).open("rb") as handle:
                data = handle.read(MAX_PAYLOAD + 1)
    except IsADirectoryError:
        raise UsageError(f"{name}: is a directory, not a JSON file") from None
    except OSError as error:
        raise UsageError(f"{name}: cannot read ({error.strerror})") from None
    if len(data) > MAX_PAYLOAD:
        raise UsageError(f"{where}: larger than GitHub's 25 MiB limit for a delivery")
    try:
        payload = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{where}: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise UsageError(f"{where}: not valid JSON (line {error.lineno}, column {error.colno}: "
                         f"{error.msg})") from None
    except RecursionError:
        raise UsageError(f"{where}: not valid JSON (nested too deeply)") from None
    if not isinstance(payload, dict):
        raise UsageError(f"{where}: a webhook payload is a JSON object, not {type(payload).__name__}")
    if action is None:
        return data, payload
    payload["action"] = action
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode(), payload


def _target_headers(payload: dict) -> dict[str, str]:
    """Whose hook GitHub says sent it: the App's (for a payload of an installation), else the
    repository's or the organization's; nothing when the payload names none of them."""
    installation, hook = payload.get("installation"), payload.get("hook")
    for owner in (installation, hook):
        if isinstance(owner, dict) and _is_id(owner.get("app_id")):
            return _target("integration", owner["app_id"])
    for kind in ("repository", "organization"):
        owner = payload.get(kind)
        if isinstance(owner, dict) and _is_id(owner.get("id")):
            return _target(kind, owner["id"])
    return {}


def _target(kind: str, number: int) -> dict[str, str]:
    return {"X-GitHub-Hook-Installation-Target-Type": kind,
            "X-GitHub-Hook-Installation-Target-ID": str(number)}


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> tuple[int, str, str]:
    """The answer's status, reason and message (the `message` of a JSON answer, else its first line)."""
    from http.client import HTTPException  # with urllib.request (and ssl): only to send
    from urllib import error as urlerror
    from urllib import request as urlrequest

    request = urlrequest.Request(url, data=body, headers=headers, method="POST")
    try:
        # The URL's scheme was checked to be http or https (`_url`): no file: or custom schemes.
        with urlrequest.urlopen(request, timeout=timeout) as answer:  # nosec B310
            return answer.status, answer.reason, _message(answer.read(4096))
    except urlerror.HTTPError as refused:
        return refused.code, refused.reason, _message(refused.read(4096))
    except urlerror.URLError as failed:  # refused, unknown host, TLS: the reason says which
        reason = failed.reason
        said = reason.strerror if isinstance(reason, OSError) and reason.strerror else reason
        raise UsageError(f"cannot reach {url} ({said})") from None
    except TimeoutError:
        raise UsageError(f"{url} did not answer within {timeout:g} s") from None
    except (OSError, HTTPException) as failed:  # the connection broke: no HTTP answer came
        raise UsageError(f"cannot reach {url} ({type(failed).__name__}: {failed})") from None


def _phrase(status: int, reason: str) -> str:
    """The standard phrase of ``status`` (servers spell it as they like: ACCEPTED, Accepted)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return reason


def _message(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    try:
        found = json.loads(text)
    except ValueError:
        found = None
    if isinstance(found, dict) and isinstance(found.get("message"), str):
        text = found["message"]
    line = text.splitlines()[0] if text else ""
    return line[:200]
