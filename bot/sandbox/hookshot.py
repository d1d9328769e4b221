"""GitHub's side of a webhook delivery: the headers GitHub sets, the signatures over the exact
bytes sent, and the POST; and the one line that says how the server answered. `perfbot deliver`
and the sandbox send deliveries with it.

Standard library only (urllib), so that `perfbot deliver` works on any install of perfbot.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from http import HTTPStatus

from bot import __version__

USER_AGENT = f"GitHub-Hookshot/perfbot-deliver-{__version__}"


class Unreachable(Exception):
    """No HTTP answer came: the address did not answer, or the connection broke."""


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    message: str  # the `message` of a JSON answer, else its first line

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def line(self) -> str:
        """``202 Accepted: queued``: the status, its standard phrase and the message."""
        said = f": {self.message}" if self.message else ""
        return f"{self.status} {phrase(self.status, self.reason)}{said}"


def headers(
    event: str, body: bytes, secret: str, guid: str, hook_id: str = "1", payload: dict | None = None
) -> dict[str, str]:
    """The headers of a delivery of ``event`` with ``body``, signed with ``secret`` as GitHub signs."""
    found = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": guid,
        "X-GitHub-Hook-ID": hook_id,
        "X-Hub-Signature-256": "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest(),
        "X-Hub-Signature": "sha1=" + hmac.new(secret.encode(), body, hashlib.sha1).hexdigest(),
        "User-Agent": USER_AGENT,
        "Content-Type": "application/json",
        "Accept": "*/*",
    }
    found.update(target_headers(payload or {}))
    return found


def target_headers(payload: dict) -> dict[str, str]:
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
    return {
        "X-GitHub-Hook-Installation-Target-Type": kind,
        "X-GitHub-Hook-Installation-Target-ID": str(number),
    }


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> Answer:
    """POST the delivery to ``url`` (http or https: the caller checked) and read the answer."""
    from http.client import HTTPException  # with urllib.request (and ssl): only to send
    from urllib import error as urlerror
    from urllib import request as urlrequest

    request = urlrequest.Request(url, data=body, headers=headers, method="POST")
    try:
        # The URL's scheme was checked to be http or https by the caller: no file: or custom schemes.
        with urlrequest.urlopen(request, timeout=timeout) as answer:  # nosec B310
            return Answer(answer.status, answer.reason, message(answer.read(4096)))
    except urlerror.HTTPError as refused:
        return Answer(refused.code, refused.reason, message(refused.read(4096)))
    except urlerror.URLError as failed:  # refused, unknown host, TLS: the reason says which
        reason = failed.reason
        said = reason.strerror if isinstance(reason, OSError) and reason.strerror else reason
        raise Unreachable(f"cannot reach {url} ({said})") from None
    except TimeoutError:
        raise Unreachable(f"{url} did not answer within {timeout:g} s") from None
    except (OSError, HTTPException) as failed:  # the connection broke: no HTTP answer came
        raise Unreachable(f"cannot reach {url} ({type(failed).__name__}: {failed})") from None


def phrase(status: int, reason: str) -> str:
    """The standard phrase of ``status`` (servers spell it as they like: ACCEPTED, Accepted)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return reason


def message(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    try:
        found = json.loads(text)
    except ValueError:
        found = None
    if isinstance(found, dict) and isinstance(found.get("message"), str):
        text = found["message"]
    line = text.splitlines()[0] if text else ""
    return line[:200]
