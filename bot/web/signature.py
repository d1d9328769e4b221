"""Verify GitHub's `X-Hub-Signature-256` HMAC over the raw body against one or more secrets."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable
from typing import TypeGuard

_HEADER = re.compile(r"sha256=([0-9a-f]{64})")


def sign(secret: str, body: bytes) -> str:
    """The header value GitHub sends for ``body``: ``sha256=`` and the hex HMAC-SHA256."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def is_well_formed(header: str | None) -> TypeGuard[str]:
    return header is not None and _HEADER.fullmatch(header) is not None


def verify(header: str | None, body: bytes, secrets: Iterable[str]) -> bool:
    """True when ``header`` is the signature of ``body`` under any of ``secrets`` (rotation).

    Every secret is compared, in constant time, so the timing says nothing about which matched.
    """
    if not is_well_formed(header):
        return False
    matched = False
    for secret in secrets:
        matched |= hmac.compare_digest(sign(secret, body), header)
    return matched
