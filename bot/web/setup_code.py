"""The one-time code that proves the operator during `perfbot serve --register-app`: made and
printed on the server's console before gunicorn forks its web workers (which inherit it), asked for
by /setup/app before anything goes to GitHub, and the key that signs the registration's state, so
that no visitor can start, forge or finish a registration. Spent once a registration is written."""

from __future__ import annotations

import hashlib
import hmac
import secrets

_code: str | None = None


def issue() -> str:
    """A new code, replacing any earlier one (the console shows it; nothing else keeps it)."""
    global _code
    _code = secrets.token_urlsafe(18)
    return _code


def spend() -> None:
    """No registration can be started or finished in this process any more."""
    global _code
    _code = None


def active() -> bool:
    return _code is not None


def matches(given: str) -> bool:
    """``given`` is the code (compared in constant time); never while none is active."""
    code = _code
    return code is not None and hmac.compare_digest(code.encode(), given.strip().encode())


def sign(*parts: str) -> str:
    """A MAC of ``parts`` keyed by the code: only this server, holding it, makes or checks one."""
    code = _code
    if code is None:
        raise LookupError("no registration code is active")
    message = "\x00".join(parts).encode()
    return hmac.new(code.encode(), message, hashlib.sha256).hexdigest()


def verify(mac: str, *parts: str) -> bool:
    return _code is not None and hmac.compare_digest(sign(*parts).encode(), mac.encode())
