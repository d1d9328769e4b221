"""Sign-in and sign-out: GitHub's user authorization for the App (OAuth web flow) with a
one-time state in the session cookie; then a session kept on the server
(`bot.service.dashboard.sessions`), whose token the signed cookie holds, until sign-out deletes
it or it ends."""

from __future__ import annotations

import hmac
import logging
import re
import secrets
from urllib.parse import urlsplit

from flask import Blueprint, abort, redirect, request, session, url_for
from flask.typing import ResponseReturnValue

from bot.service.dashboard import sessions as dashboard_sessions
from bot.service.ports.sign_in import SignInFailed

from .. import state
from . import viewer

bp = Blueprint("signin", __name__)
log = logging.getLogger("perfbot.dashboard")
_STATE, _NEXT = "oauth_state", "next"
MAX_NEXT = 2_000
# A slash not followed by another, then printable ASCII (no space, no control character).
_PLAIN_PATH = re.compile(r"/(?!/)[!-~]*")


@bp.get("/signin")
def start() -> ResponseReturnValue:
    sign_in = state.current().services.sign_in
    if sign_in is None:
        abort(404, "sign-in is not configured on this server")
    session[_STATE] = secrets.token_urlsafe(32)
    session[_NEXT] = safe_next(request.args.get("next"))
    return redirect(sign_in.authorize_url(session[_STATE], callback_url()))


@bp.get("/signin/callback")
def callback() -> ResponseReturnValue:
    services, sessions = state.current().services, state.current().sessions
    if services.sign_in is None or sessions is None:
        abort(404, "sign-in is not configured on this server")
    expected, given = session.pop(_STATE, None), request.args.get("state", "")
    if not isinstance(expected, str) or not hmac.compare_digest(expected.encode(), given.encode()):
        abort(400, "this sign-in was not started here or has expired: sign in again")
    if request.args.get("error"):
        abort(403, "GitHub did not authorize the sign-in")
    code = request.args.get("code", "")
    if not 0 < len(code) <= 100:
        abort(400, "GitHub sent no authorization code")
    try:
        login = services.sign_in.login_for(code, callback_url())
    except SignInFailed as failed:
        log.warning("sign-in failed: %s", failed)
        abort(403, f"GitHub did not confirm the sign-in: {failed}")
    next_page = safe_next(session.pop(_NEXT, None))
    dashboard_sessions.end(sessions, session.get(viewer.SESSION_KEY))
    session.clear()  # a new cookie, a new CSRF token: nothing of the anonymous visit carries over
    session.permanent = True
    session[viewer.SESSION_KEY] = dashboard_sessions.start(services, sessions, login)
    log.info("signed in", extra={"user": login})
    return redirect(next_page)


@bp.post("/signout")
def sign_out() -> ResponseReturnValue:
    sessions = state.current().sessions
    if sessions is not None:
        dashboard_sessions.end(sessions, session.get(viewer.SESSION_KEY))
    session.clear()
    return redirect(url_for("dashboard.merges"), 303)


def callback_url() -> str:
    """Where GitHub sends the sign-in back: under PERFBOT_PUBLIC_URL, which sign-in requires
    (`Settings.checked`, `create_app`), never under the request's Host header, which the client
    writes: a forged one would have GitHub send the authorization code to another host."""
    base = state.current().settings.public_url
    if base is None:
        abort(404, "sign-in is not configured on this server")
    return f"{base}/signin/callback"


def safe_next(value: object) -> str:
    """A path on this server to return to; anything else is '/'.

    Browsers clean a URL before they resolve it (WHATWG URL standard): they drop tabs and line
    breaks anywhere, strip leading and trailing control characters and spaces, and read a
    backslash as a slash, so '/\\t/evil.example' becomes the scheme-relative '//evil.example'.
    Only printable ASCII is accepted, so nothing can be cleaned away; and what is left must be a
    path that starts with one slash, with no scheme and no host.
    """
    if not isinstance(value, str) or len(value) > MAX_NEXT:
        return "/"
    if not _PLAIN_PATH.fullmatch(value) or "\\" in value:
        return "/"
    parts = urlsplit(value)
    return "/" if parts.scheme or parts.netloc else value
