"""Process one stored delivery exactly once, and re-enqueue deliveries lost to a crash."""

from __future__ import annotations

import json
import logging

from . import notes
from .events import MalformedPayload
from .logs import current_delivery
from .records import Delivery
from .router import Router
from .services import Services

log = logging.getLogger("perfbot.jobs")

LEASE_S = 600.0  # a worker that has not finished a delivery in this long is presumed dead
MAX_ATTEMPTS = 6
PAYLOAD_KEPT_S = 2 * 86_400  # long enough to debug a failed delivery
DEDUPE_WINDOW_S = 35 * 86_400  # GitHub lets a delivery be redelivered for up to 30 days
# Work keys outlive the delivery window: a signed body can be replayed any time. A benchmark request
# needs none of them to stay single (its correlation id is unique), so they may go eventually.
WORK_KEPT_S = 400 * 86_400


def process(delivery_id: int, services: Services, router: Router) -> str:
    """Run the handlers of a delivery; 'done', 'failed', or 'skipped' (done or held elsewhere).

    An exception leaves the delivery pending, released for the next attempt, and propagates so
    that the queue retries it; after `MAX_ATTEMPTS` it is marked failed for good.
    """
    store = services.store
    delivery = store.deliveries.start(delivery_id, services.now(), LEASE_S)
    if delivery is None:
        return "skipped"
    token = current_delivery.set(delivery.guid)
    try:
        router.dispatch(delivery.event, json.loads(delivery.payload), services)
    except MalformedPayload as error:  # a payload without the fields its event must have
        return _failed(services, delivery, MAX_ATTEMPTS, error)
    except Exception as error:
        return _failed(services, delivery, delivery.attempts, error)
    finally:
        current_delivery.reset(token)
    store.deliveries.finish(delivery_id, "done")
    return "done"


def _failed(services: Services, delivery: Delivery, attempts: int, error: Exception) -> str:
    """Release the delivery for its next attempt (re-raising, so that the queue retries), or, after
    the last, mark it failed and leave a note on its pull request."""
    message = f"{type(error).__name__}: {error}"
    if attempts >= MAX_ATTEMPTS:
        log.error("delivery failed for good", exc_info=error, extra={"attempts": attempts})
        services.store.deliveries.finish(delivery.id, "failed", message[:2000])
        notes.delivery_failed(delivery.event, _payload(delivery), services, error)
        return "failed"
    log.warning("delivery failed; will retry", exc_info=error, extra={"attempts": attempts})
    services.store.deliveries.release(delivery.id, message)
    raise error


def _payload(delivery: Delivery) -> dict:
    try:
        payload = json.loads(delivery.payload)
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}


def requeue_stale(services: Services, older_than_s: float = LEASE_S) -> int:
    """Enqueue again every pending delivery nobody finished within ``older_than_s``."""
    stale = services.store.deliveries.stale(services.now(), older_than_s)
    for delivery_id in stale:
        services.queue.enqueue(delivery_id)
    if stale:
        log.warning("re-enqueued stale deliveries", extra={"count": len(stale)})
    return len(stale)


def housekeeping(services: Services) -> None:
    """The minutely sweep: re-enqueue lost deliveries, shed old payloads, forget old GUIDs and work
    keys."""
    requeue_stale(services)
    services.store.deliveries.prune(services.now(), PAYLOAD_KEPT_S, DEDUPE_WINDOW_S)
    services.store.work.prune(services.now(), WORK_KEPT_S)
