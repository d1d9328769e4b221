"""The Flask application factory: `create_app()` is what gunicorn and `perfbot serve` load."""

from __future__ import annotations

from flask import Flask, jsonify
from werkzeug.exceptions import HTTPException

from bot.service import logs
from bot.settings import Settings

from . import health, webhook
from .metrics import Metrics


def create_app(settings: Settings | None = None, runtime=None) -> Flask:
    """An app over ``runtime`` (tests pass their own), else one wired from the environment."""
    from bot import worker  # wiring imports every adapter; only needed when none is given

    settings = settings or (runtime.settings if runtime else Settings.from_env())
    logs.configure(settings.log_level)
    runtime = runtime or worker.build(settings)
    app = Flask("perfbot")
    app.config["MAX_CONTENT_LENGTH"] = webhook.MAX_BODY
    app.extensions["perfbot"] = runtime
    app.extensions["perfbot_metrics"] = Metrics(runtime)
    app.register_blueprint(webhook.bp)
    app.register_blueprint(health.bp)
    app.register_error_handler(HTTPException, _http_error)
    return app


def _http_error(error: HTTPException):
    return jsonify({"message": error.description or error.name}), error.code
