"""`GET /healthz`, which tells a load balancer the truth, and `GET /metrics` (Prometheus text).

- **down** (503): this replica cannot store deliveries (the database does not take a write within
  `PROBE_S`: down, full, read-only, or locked by another process; or its intake could not store
  the last delivery in the last 10 s and none since), so its intake answers 503 too; a load
  balancer should send deliveries elsewhere.
- **degraded** (200): it stores deliveries, but something needs a person: the queue cannot be
  reached or its file does not take a write within `PROBE_S` (stored deliveries wait for it), no
  queue consumer has been heard from, deliveries failed for good in the last hour or wait for a
  retry, or the oldest waiting one is late.
- **ok** (200).

Each probe, and the reads after them, waits at most `PROBE_S` (`bot.service.deadline`), so the
answer comes within about three times that, whatever holds the files; a problem names the file
(its name, not its path).

The answer names no repository (it is public): failures are counted, the last one by its kind
and what to do about it; signed-in maintainers see the failed deliveries on the dashboard.
"""

from __future__ import annotations

import logging

from flask import Blueprint, Response, jsonify
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from bot.service import deadline, failures
from bot.service.leases import HEARTBEAT_S

from . import state

bp = Blueprint("health", __name__)
log = logging.getLogger("perfbot.health")

FAILURES_WINDOW_S = 3_600.0
CONSUMER_SILENT_S = 3 * HEARTBEAT_S  # three heartbeats missed: not running (by the database's clock)
LATE_S = 600.0  # a delivery waiting this long is stuck, not queued
REFUSED_S = 10.0  # an intake that could not store a delivery this recently is down, whatever the probe says
PROBE_S = 1.0  # each: the database's write probe, the queue's, the reads (Docker's check waits 4 s)


@bp.get("/healthz")
def healthz() -> tuple[Response, int]:
    services = state.current().services
    report: dict[str, object] = {}
    problems: list[str] = []
    try:
        with deadline.within(PROBE_S):
            services.store.liveness.probe()
        report["database"] = "ok"
    except Exception as error:  # any failure to write is the answer, not a crash
        log.warning("health: the database does not take writes: %s", error)
        report["database"] = f"cannot write: {failures.describe(error)[:300]}"
        return jsonify({"status": "down", **report}), 503
    refused = services.storing.failing(REFUSED_S)
    if refused is not None:
        report["database"] = f"the last delivery could not be stored: {refused[:300]}"
        return jsonify({"status": "down", **report}), 503
    try:
        with deadline.within(PROBE_S):
            services.queue.ping()
        report["queue"] = "ok"
    except Exception as error:
        report["queue"] = f"unavailable: {failures.describe(error)[:300]}"
        problems.append("queue")
    try:
        with deadline.within(PROBE_S):
            consumers = services.store.liveness.consumers(CONSUMER_SILENT_S)
            deliveries = services.store.deliveries.health(FAILURES_WINDOW_S)
    except Exception as error:  # the database went away between the probe and these reads
        report["database"] = f"cannot read: {failures.describe(error)[:300]}"
        return jsonify({"status": "down", **report}), 503
    report["consumers"] = len(consumers)
    if not consumers:
        problems.append("consumers")
    report["deliveries"] = _deliveries(deliveries)
    if deliveries.failed or deliveries.retrying or (deliveries.oldest_pending_s or 0) > LATE_S:
        problems.append("deliveries")
    status = "degraded" if problems else "ok"
    return jsonify({"status": status, "problems": problems, **report}), 200


def _deliveries(health) -> dict[str, object]:
    found: dict[str, object] = {
        "failed_last_hour": health.failed,
        "retrying": health.retrying,
        "oldest_waiting_s": None if health.oldest_pending_s is None else round(health.oldest_pending_s, 1),
    }
    last = health.last_failure
    if last is not None:
        kind = (last.error or "").split(":", 1)[0]
        found["last_failure"] = {
            "event": last.event,
            "failure": last.failure,
            "error": kind,
            "hint": failures.hint_for(kind),
            "at": last.finished_at.isoformat() if last.finished_at else None,
        }
    return found


@bp.get("/metrics")
def metrics() -> Response:
    registry = state.current().metrics.registry
    return Response(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
