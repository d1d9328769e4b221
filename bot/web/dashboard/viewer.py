"""Who is looking at the dashboard: a GitHub user signed in through the App (their login and the
private repositories found readable at sign-in, in the signed session cookie) or an anonymous
viewer; and what they may see."""

from __future__ import annotations

from flask import abort, g, session

from bot.service.dashboard import access
from bot.service.dashboard.access import Viewer

from .. import state

LOGIN, PRIVATE = "login", "private"


def current() -> Viewer:
    if not state.current().settings.sign_in_enabled or not isinstance(session.get(LOGIN), str):
        return Viewer()
    private = session.get(PRIVATE) or []
    return Viewer(session[LOGIN], frozenset(r for r in private if isinstance(r, str)))


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
