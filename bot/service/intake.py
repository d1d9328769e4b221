"""Accept a verified webhook: decide whether it is work, claim its GUID once, enqueue it.

What is acknowledged is stored: a delivery the database cannot take now is refused as
`UNAVAILABLE` (the web answers 503 with Retry-After), never acknowledged and lost. One stored but
not enqueued (the queue is down, or its file locked) is acknowledged: the sweep enqueues it when
the queue is back. Either way the answer comes within `WAIT_S` of storage waits (`deadline`),
whoever holds the database or the queue's file, long before GitHub gives up on it (10 s)."""

from __future__ import annotations

import logging
from enum import Enum

from . import chain, deadline
from .events import CommandEvent, Event, MalformedPayload, PullRequestEvent, WorkflowRunEvent
from .failures import StorageUnavailable, Transient
from .ports.store import Store
from .router import Router
from .services import Services

log = logging.getLogger("perfbot.intake")

WAIT_S = 3.0  # all storage waits of one delivery together (its claim, then its enqueue)


class Outcome(Enum):
    QUEUED = "queued"
    DUPLICATE = "duplicate"
    IGNORED = "ignored"
    MALFORMED = "malformed"  # an event the bot acts on, but not in the shape GitHub sends
    UNAVAILABLE = "unavailable"  # the database cannot store it now: not acknowledged


def accept(
    services: Services,
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
    stale-delivery sweep enqueues it later, so claiming first never loses work. Whether it could be
    stored is kept in ``services.storing`` for `/healthz`.
    """
    action = payload.get("action") if isinstance(payload.get("action"), str) else None
    if event == chain.EVENT:  # the bot's own jobs are queued by the bot alone, never from the web
        log.warning("a delivery of the bot's own job event refused", extra={"event": event})
        return Outcome.IGNORED
    try:
        wanted = router.accept(event, payload)
    except MalformedPayload as problem:
        log.warning(
            "malformed payload refused", extra={"event": event, "action": action, "problem": str(problem)}
        )
        return Outcome.MALFORMED
    if wanted is None:
        return Outcome.IGNORED
    with deadline.within(WAIT_S):
        return _store_and_enqueue(services, wanted, hook_id, guid, event, action, body)


def _store_and_enqueue(
    services: Services, wanted: Event, hook_id: str, guid: str, event: str, action: str | None, body: bytes
) -> Outcome:
    repo = getattr(getattr(wanted, "repo", None), "full_name", None)
    store, queue = services.store, services.queue
    try:
        delivery_id = store.deliveries.claim(hook_id, guid, event, action, body, repo, subject(store, wanted))
    except StorageUnavailable as error:
        log.error(
            "delivery refused: it cannot be stored now (%s)", error, extra={"event": event, "action": action}
        )
        services.storing.refused(str(error))
        return Outcome.UNAVAILABLE
    services.storing.stored()
    if delivery_id is None:
        log.info("duplicate delivery ignored", extra={"event": event, "action": action})
        return Outcome.DUPLICATE
    try:
        queue.enqueue(delivery_id)
    except Transient as error:
        log.warning(
            "delivery stored but not enqueued; the sweep will enqueue it (%s)",
            error,
            extra={"delivery_id": delivery_id},
        )
    except Exception:
        log.exception("enqueue failed; the sweep will enqueue it", extra={"delivery_id": delivery_id})
    return Outcome.QUEUED


def subject(store: Store, event: Event) -> str | None:
    """The pull request a delivery acts on, ``owner/name#number`` (a benchmark run's, through its
    request), of which the worker processes one delivery at a time; None for the others."""
    if isinstance(event, (PullRequestEvent, CommandEvent)):
        return f"{event.repo.full_name}#{event.number}"
    if isinstance(event, WorkflowRunEvent):
        request = store.benchmarks.get(event.correlation_id)
        if request is not None and request.number is not None:
            return f"{request.repo}#{request.number}"
    return None
