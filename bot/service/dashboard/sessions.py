"""Signed-in dashboard sessions, kept on the server: the browser holds only a random token, the
store the session it names (under the token's SHA-256, so the database gives away no usable
cookie). Signing out deletes the session, so a cookie copied before works no more; a session
ends `LIFETIME` after sign-in at the latest, and the private repositories its user may read are
asked of GitHub again when the last answer is `RECHECK` old, so a revoked permission is seen
within minutes, not hours.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from ..ports.sessions import DashboardSession, SessionStore
from ..services import Services
from . import access
from .access import Viewer

LIFETIME = timedelta(hours=8)
RECHECK = timedelta(minutes=10)
MAX_TOKEN = 100  # a token is 43 characters; a longer cookie value is no token of ours


def start(services: Services, sessions: SessionStore, login: str) -> str:
    """A new session for ``login`` (the private repositories it may read asked now), and its token
    for the cookie. Sessions that ended meanwhile are pruned on the way."""
    now = services.now()
    sessions.delete_expired(now)
    token = secrets.token_urlsafe(32)
    sessions.create(
        _key(token),
        DashboardSession(
            login=login,
            private_repos=access.readable_private_repos(services, login),
            created_at=now,
            checked_at=now,
            expires_at=now + LIFETIME,
        ),
    )
    return token


def resume(services: Services, sessions: SessionStore, token: object) -> Viewer | None:
    """Who holds ``token``, with their private repositories re-checked when the answer is older
    than `RECHECK`; None when the token names no live session."""
    if not isinstance(token, str) or not 0 < len(token) <= MAX_TOKEN:
        return None
    key, now = _key(token), services.now()
    found = sessions.get(key)
    if found is None:
        return None
    if now >= found.expires_at:
        sessions.delete(key)
        return None
    private = found.private_repos
    if now - found.checked_at >= RECHECK:
        private = access.readable_private_repos(services, found.login)
        sessions.recheck(key, private, now)
    return Viewer(found.login, private)


def end(sessions: SessionStore, token: object) -> None:
    """Sign out: the session of ``token`` is gone for every copy of the cookie."""
    if isinstance(token, str) and 0 < len(token) <= MAX_TOKEN:
        sessions.delete(_key(token))


def _key(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
