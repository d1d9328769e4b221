"""`GET /healthz` (database and queue reachable) and `GET /metrics` (Prometheus text)."""

from __future__ import annotations

import logging

from flask import Blueprint, Response, jsonify
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from . import state

bp = Blueprint("health", __name__)
log = logging.getLogger("perfbot.health")


@bp.get("/healthz")
def healthz() -> tuple[Response, int]:
    services = state.current().services
    checks = {"database": services.store.ping, "queue": services.queue.ping}
    report, healthy = {}, True
    for name, check in checks.items():
        try:
            check()
            report[name] = "ok"
        except Exception as error:  # any failure to reach it is the answer, not a crash
            log.warning("%s unreachable", name, exc_info=error)
            report[name], healthy = f"unreachable: {type(error).__name__}", False
    return jsonify({"status": "ok" if healthy else "degraded", **report}), 200 if healthy else 503


@bp.get("/metrics")
def metrics() -> Response:
    registry = state.current().metrics.registry
    return Response(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
