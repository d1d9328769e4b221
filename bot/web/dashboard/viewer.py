"""Who is looking at the dashboard: a GitHub user signed in through the App (the signed session
cookie holds only the token of a session kept on the server, `bot.service.dashboard.sessions`)
or an anonymous viewer; and what they may see."""

from __future__ import annotations

from flask import abort, g, session

from bot.service.dashboard import access, sessions
from bot.service.dashboard.access import Viewer

from .. import state

SESSION_KEY = "session"  # the cookie's key that holds the server-side session's token


def current() -> Viewer:
    """The viewer of this request, looked up once per request."""
    if "perfbot_viewer" not in g:
        g.perfbot_viewer = _look_up()
    viewer: Viewer = g.perfbot_viewer
    return viewer


def _look_up() -> Viewer:
    app_state = state.current()
    if not app_state.settings.sign_in_enabled or app_state.sessions is None or SESSION_KEY not in session:
        return Viewer()
    found = sessions.resume(app_state.services, app_state.sessions, session[SESSION_KEY])
    if found is None:  # signed out elsewhere, or ended: the cookie's token is of no use
        session.pop(SESSION_KEY, None)
        return Viewer()
    return found


def visible() -> frozenset[str] | None:
    """The repositories this request may show (None: all), worked out once per request."""
    if "perfbot_visible" not in g:
        app_state = state.current()
        viewer = current()
        if viewer.login is None and app_state.settings.dashboard_anonymous == "none":
            abort(401, "sign in to see the dashboard")
        g.perfbot_visible = access.visible(app_state.services, viewer, app_state.settings.dashboard_anonymous)
    return g.perfbot_visible


def may_see(repo: str) -> bool:
    shown = visible()
    return shown is None or repo in shown
