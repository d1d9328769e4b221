"""`POST /webhook`: authenticate, validate, dedupe and enqueue a GitHub delivery; answer fast."""

from __future__ import annotations

import json
import logging
import time

from flask import Blueprint, current_app, jsonify, request

from bot.service import intake
from bot.service.logs import current_delivery

from . import signature

bp = Blueprint("webhook", __name__)
log = logging.getLogger("perfbot.webhook")

MAX_BODY = 25 * 1024 * 1024  # GitHub never sends more than 25 MB
_GUID_MAX, _EVENT_MAX = 80, 80


def _answer(status: int, message: str, **extra):
    return jsonify({"message": message, **extra}), status


@bp.post("/webhook")
def receive():
    runtime = current_app.extensions["perfbot"]
    started = time.perf_counter()
    body = request.get_data(cache=False)  # raw bytes; werkzeug answers 413 past MAX_CONTENT_LENGTH
    if not runtime.settings.webhook_secrets:
        return _answer(503, "PERFBOT_WEBHOOK_SECRET is not configured")
    header = request.headers.get("X-Hub-Signature-256")
    if header is None:
        return _outcome("unsigned", _answer(401, "missing X-Hub-Signature-256"), started)
    if not signature.verify(header, body, runtime.settings.webhook_secrets):
        return _outcome("bad_signature", _answer(403, "signature does not match"), started)
    event, guid = request.headers.get("X-GitHub-Event", ""), request.headers.get("X-GitHub-Delivery", "")
    if not (0 < len(event) <= _EVENT_MAX and 0 < len(guid) <= _GUID_MAX):
        return _outcome(
            "bad_headers", _answer(400, "X-GitHub-Event and X-GitHub-Delivery are required"), started
        )
    payload, problem = _parse(body)
    if problem:
        return _outcome("bad_payload", _answer(400, problem), started)
    token = current_delivery.set(guid)
    try:
        return _dispatch(runtime, event, guid, payload, body, started)
    finally:
        current_delivery.reset(token)


def _parse(body: bytes) -> tuple[dict, str | None]:
    if request.mimetype != "application/json":
        return {}, "expected Content-Type: application/json"
    try:
        payload = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        return {}, "body is not UTF-8"
    except (ValueError, RecursionError):
        return {}, "body is not valid JSON"
    if not isinstance(payload, dict):
        return {}, "body must be a JSON object"
    return payload, None


def _dispatch(runtime, event: str, guid: str, payload: dict, body: bytes, started: float):
    if event == "ping":
        log.info("ping", extra={"event": event, "zen": payload.get("zen")})
        return _outcome("ping", _answer(200, "pong"), started)
    hook_id = request.headers.get("X-GitHub-Hook-ID", "")[:40]
    outcome = intake.accept(
        runtime.store,
        runtime.queue,
        runtime.router,
        hook_id=hook_id,
        guid=guid,
        event=event,
        payload=payload,
        body=body,
    )
    log.info("delivery %s", outcome.value, extra={"event": event, "action": payload.get("action")})
    status = 202 if outcome is intake.Outcome.QUEUED else 200
    return _outcome(outcome.value, _answer(status, outcome.value), started)


def _outcome(name: str, response, started: float):
    metrics = current_app.extensions["perfbot_metrics"]
    metrics.deliveries.labels(outcome=name).inc()
    metrics.intake_seconds.observe(time.perf_counter() - started)
    return response
