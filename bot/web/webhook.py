"""`POST /webhook`: authenticate, validate, dedupe and enqueue a GitHub delivery; answer fast."""

from __future__ import annotations

import json
import logging
import time

from flask import Blueprint, Response, jsonify, request

from bot.service import intake
from bot.service.logs import current_delivery

from . import signature, state
from .state import AppState

bp = Blueprint("webhook", __name__)
log = logging.getLogger("perfbot.webhook")

MAX_BODY = 25 * 1024 * 1024  # GitHub never sends more than 25 MB
RETRY_AFTER_S = 30  # when the database cannot store a delivery: worth asking again this much later
_GUID_MAX, _EVENT_MAX = 80, 80


Answer = tuple[Response, int]


def _answer(status: int, message: str, **extra: object) -> Answer:
    return jsonify({"message": message, **extra}), status


@bp.post("/webhook")
def receive() -> Answer:
    app_state = state.current()
    started = time.perf_counter()
    body = request.get_data(cache=False)  # raw bytes; werkzeug answers 413 past MAX_CONTENT_LENGTH
    if not app_state.settings.webhook_secrets:
        return _answer(503, "PERFBOT_WEBHOOK_SECRET is not configured")
    header = request.headers.get("X-Hub-Signature-256")
    if header is None:
        return _outcome(app_state, "unsigned", _answer(401, "missing X-Hub-Signature-256"), started)
    if not signature.verify(header, body, app_state.settings.webhook_secrets):
        return _outcome(app_state, "bad_signature", _answer(403, "signature does not match"), started)
    event, guid = request.headers.get("X-GitHub-Event", ""), request.headers.get("X-GitHub-Delivery", "")
    if not (0 < len(event) <= _EVENT_MAX and 0 < len(guid) <= _GUID_MAX):
        refused = _answer(400, "X-GitHub-Event and X-GitHub-Delivery are required")
        return _outcome(app_state, "bad_headers", refused, started)
    payload, problem = _parse(body)
    if problem:
        return _outcome(app_state, "bad_payload", _answer(400, problem), started)
    token = current_delivery.set(guid)
    try:
        return _dispatch(app_state, event, guid, payload, body, started)
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


def _dispatch(
    app_state: AppState, event: str, guid: str, payload: dict, body: bytes, started: float
) -> Answer:
    if event == "ping":
        log.info("ping", extra={"event": event, "zen": payload.get("zen")})
        return _outcome(app_state, "ping", _answer(200, "pong"), started)
    hook_id = request.headers.get("X-GitHub-Hook-ID", "")[:40]
    outcome = intake.accept(
        app_state.services,
        app_state.router,
        hook_id=hook_id,
        guid=guid,
        event=event,
        payload=payload,
        body=body,
    )
    log.info("delivery %s", outcome.value, extra={"event": event, "action": payload.get("action")})
    if outcome is intake.Outcome.UNAVAILABLE:  # not stored: GitHub (or whoever sent it) must send it again
        refused = _answer(503, "perfbot cannot store deliveries right now; send it again later")
        refused[0].headers["Retry-After"] = str(RETRY_AFTER_S)
        return _outcome(app_state, "unavailable", refused, started)
    if outcome is intake.Outcome.MALFORMED:
        refused = _answer(400, f"the {event} payload does not have the shape GitHub's schema gives it")
        return _outcome(app_state, "bad_payload", refused, started)
    status = 202 if outcome is intake.Outcome.QUEUED else 200
    return _outcome(app_state, outcome.value, _answer(status, outcome.value), started)


def _outcome(app_state: AppState, name: str, response: Answer, started: float) -> Answer:
    app_state.metrics.deliveries.labels(outcome=name).inc()
    app_state.metrics.intake_seconds.observe(time.perf_counter() - started)
    return response
