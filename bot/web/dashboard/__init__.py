"""The dashboard of flagged merges: server-rendered pages (Jinja, usable without JavaScript),
their JSON API, sign-in through the GitHub App's user authorization, and CSRF protection of
every form and state-changing API call."""

from __future__ import annotations

import secrets

from flask import Blueprint, Flask
from flask_wtf.csrf import CSRFProtect

from bot.service.dashboard import sessions
from bot.settings import Settings

from . import api, failed, pages, regressions, signin


def install(app: Flask, settings: Settings, exempt: tuple[Blueprint, ...] = ()) -> None:
    """Register the dashboard on ``app``; the blueprints named in ``exempt`` (the webhook, signed
    by GitHub instead) skip the CSRF check."""
    # Without sign-in nothing is kept in the session, so a per-process key is enough.
    app.secret_key = settings.session_secret or secrets.token_hex(32)
    secure = (settings.public_url or "").startswith("https://")
    app.config.update(
        SESSION_COOKIE_NAME="perfbot_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=secure,
        PERMANENT_SESSION_LIFETIME=sessions.LIFETIME,  # the server's session ends then too
        WTF_CSRF_TIME_LIMIT=None,  # valid as long as the session: a page left open still works
    )
    csrf = CSRFProtect(app)
    for blueprint in exempt:
        csrf.exempt(blueprint)
    app.register_blueprint(pages.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(signin.bp)
    app.register_blueprint(failed.bp)
    app.register_blueprint(regressions.bp)
