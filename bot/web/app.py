"""The Flask application factory: `create_app(settings, services)`, over the service's ports."""

from __future__ import annotations

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from bot.service import logs
from bot.service.ports.sessions import SessionStore
from bot.service.router import Router
from bot.service.routes import ROUTER
from bot.service.services import Services
from bot.settings import Settings

from . import app_setup, dashboard, headers, health, state, webhook
from .metrics import Metrics


def create_app(
    settings: Settings, services: Services, router: Router = ROUTER, sessions: SessionStore | None = None
) -> Flask:
    """The webhook intake, /healthz, /metrics and the dashboard; `bot.bootstrap` builds the services
    and the store of the dashboard's sessions, which sign-in needs."""
    if services.sign_in is not None and sessions is None:
        raise ValueError("dashboard sign-in needs a session store (bot.bootstrap.build makes one)")
    if services.sign_in is not None and not settings.public_url:
        # Never the request's Host header, which any client sets (Settings.checked says so at start-up).
        raise ValueError("dashboard sign-in needs the server's public URL (PERFBOT_PUBLIC_URL)")
    logs.configure(settings.log_level)
    app = Flask("perfbot")
    app.config["MAX_CONTENT_LENGTH"] = webhook.MAX_BODY
    state.install(
        app, state.AppState(settings, services, router, Metrics(services.store, services.queue), sessions)
    )
    headers.install(app)
    app.register_blueprint(webhook.bp)
    app.register_blueprint(health.bp)
    dashboard.install(app, settings, exempt=(webhook.bp,))
    if settings.register_app_to:  # only while `perfbot serve --register-app FILE` runs
        app.register_blueprint(app_setup.bp)
    app.register_error_handler(HTTPException, _http_error)
    return app


def _http_error(error: HTTPException) -> tuple[Response, int]:
    return jsonify({"message": error.description or error.name}), error.code or 500
