"""Accept a verified webhook: decide whether it is work, claim its GUID once, enqueue it."""

from __future__ import annotations

import logging
from enum import Enum

from .events import MalformedPayload
from .ports import Queue
from .router import Router
from .storage import Store

log = logging.getLogger("perfbot.intake")


class Outcome(Enum):
    QUEUED = "queued"
    DUPLICATE = "duplicate"
    IGNORED = "ignored"
    MALFORMED = "malformed"  # an event the bot acts on, but not in the shape GitHub sends


def accept(
    store: Store,
    queue: Queue,
    router: Router,
    *,
    hook_id: str,
    guid: str,
    event: str,
    payload: dict,
    body: bytes,
) -> Outcome:
    """Queue the delivery unless no handler wants it or (hook_id, guid) was already claimed.

    A delivery claimed but not enqueued (the queue was down) stays pending in the store, and the
    stale-delivery sweep enqueues it later, so claiming first never loses work.
    """
    action = payload.get("action") if isinstance(payload.get("action"), str) else None
    try:
        wanted = router.accept(event, payload)
    except MalformedPayload as problem:
        log.warning("malformed payload refused", extra={"event": event, "action": action,
                                                         "problem": str(problem)})
        return Outcome.MALFORMED
    if wanted is None:
        return Outcome.IGNORED
    delivery_id = store.deliveries.claim(hook_id, guid, event, action, body)
    if delivery_id is None:
        log.info("duplicate delivery ignored", extra={"event": event, "action": action})
        return Outcome.DUPLICATE
    try:
        queue.enqueue(delivery_id)
    except Exception:
        log.exception("enqueue failed; the sweep will retry", extra={"delivery_id": delivery_id})
    return Outcome.QUEUED
