"""Process one stored delivery exactly once, under a lease that follows its worker; decide once
what a failure means (`failures`); enqueue again what a crash or a queue outage lost."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta

from . import failures, leases, notes
from .failures import Kind, RetryLater, StorageUnavailable, SubjectBusy
from .leases import LEASE_S
from .logs import current_delivery
from .records import Delivery
from .router import Router
from .services import Services

log = logging.getLogger("perfbot.jobs")

MAX_ATTEMPTS = 6  # with the backoff: tried over about five minutes (longer where GitHub asks)
# A pending delivery nobody holds is enqueued again this long after it was due (received, its retry
# time, or the last time it was enqueued again): its job was lost (a queue outage at intake, a disk
# full when its retry was scheduled, Redis restarted, a crash between dequeue and start). Sooner when
# the queue is empty, since then nothing can still be on its way; a copy of a job that was not lost
# after all finds its delivery done, or held, and does nothing.
UNQUEUED_S = 120.0
UNQUEUED_IDLE_S = 10.0
STORAGE_RETRY_S = 10.0  # a job that found the database unavailable before it could start
SUBJECT_BUSY_S = 2.0  # a job whose pull request another worker is processing: soon, not counted
PAYLOAD_KEPT_S = 2 * 86_400  # long enough to debug a failed delivery
DEDUPE_WINDOW_S = 35 * 86_400  # GitHub lets a delivery be redelivered for up to 30 days
# Work keys outlive the delivery window: a signed body can be replayed any time. A benchmark request
# needs none of them to stay single (its correlation id is unique), so they may go eventually.
WORK_KEPT_S = 400 * 86_400
CONSUMERS_KEPT_S = 86_400  # a consumer not heard of in a day is forgotten


def process(delivery_id: int, services: Services, router: Router, owner: str | None = None) -> str:
    """Run the pipeline of a delivery: 'done', 'failed' (for good), or 'skipped' (done, or held
    by a live worker). A failed attempt worth another is released and `RetryLater` raised, which
    the queue turns into a retry after the backoff."""
    owner = owner or leases.owner_id()
    try:
        started = _start(delivery_id, services, router, owner)
    except StorageUnavailable as error:
        _complain(f"cannot take delivery {delivery_id}; trying again in {STORAGE_RETRY_S:.0f} s: {error}")
        raise RetryLater(STORAGE_RETRY_S) from None
    except SubjectBusy:  # one delivery of a pull request at a time: no attempt was counted
        raise RetryLater(SUBJECT_BUSY_S) from None
    delivery = started.delivery
    if delivery is None:
        return "skipped"
    if started.done:
        return "done"
    with _working(services, delivery, renewed=True):
        if started.failed is not None:
            return _failed(services, delivery, owner, started.failed)
        try:
            router.dispatch(delivery.event, json.loads(delivery.payload), services)
        except Exception as error:
            return _failed(services, delivery, owner, error)
        _record(lambda: _finished(services, delivery, owner))
        return "done"


@dataclass(frozen=True)
class _Started:
    delivery: Delivery | None  # None: done already, or held by a live worker
    done: bool = False  # a brief delivery's work and finish were committed with its lease
    failed: Exception | None = None  # a brief delivery's work failed: to be recorded as any failure


class _Undone(Exception):
    """A brief delivery's work failed inside its lease's transaction, which is rolled back whole."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


def _start(delivery_id: int, services: Services, router: Router, owner: str) -> _Started:
    """Take the delivery's lease. A brief delivery (its pipeline writes a few rows of the store,
    `Pipeline.brief`) is also worked and finished in the lease's transaction: one hold of the
    SQLite writer lock instead of three, each of which kept the intake waiting. A crash in it
    leaves the delivery as it was (pending, not held: the sweep enqueues it again). When its work
    fails, the transaction is rolled back and the lease taken again on its own, so that the attempt
    is counted and its failure recorded as any other's."""
    deliveries = services.store.deliveries
    try:
        with services.store.together():
            delivery = deliveries.start(delivery_id, LEASE_S, owner)
            if delivery is None or not router.brief(delivery.event):
                return _Started(delivery)
            with _working(services, delivery, renewed=False):  # nothing to renew: nothing committed yet
                try:
                    router.dispatch(delivery.event, json.loads(delivery.payload), services)
                    deliveries.finish(delivery.id, "done", owner=owner)  # its own lease, this transaction's
                except Exception as error:
                    raise _Undone(error) from error
            return _Started(delivery, done=True)
    except _Undone as undone:
        return _Started(deliveries.start(delivery_id, LEASE_S, owner), failed=undone.error)


@contextmanager
def _working(services: Services, delivery: Delivery, renewed: bool) -> Iterator[None]:
    """The delivery's GUID in the logs meanwhile, and its lease renewed by the heartbeat when
    ``renewed`` (a committed lease: the work may outlast it)."""
    token = current_delivery.set(delivery.guid)
    if renewed:
        services.running.add(delivery.id)
    try:
        yield
    finally:
        if renewed:
            services.running.discard(delivery.id)
        current_delivery.reset(token)


def _finished(services: Services, delivery: Delivery, owner: str) -> None:
    if not services.store.deliveries.finish(delivery.id, "done", owner=owner):
        log.warning("a delivery was finished after its lease had run out", extra=_context(delivery))


def _failed(services: Services, delivery: Delivery, owner: str, error: Exception) -> str:
    """Record and log the failed attempt once, as its kind says; 'failed', or `RetryLater`."""
    kind = failures.classify(error)
    message = failures.describe(error)[:2000]
    context = {**_context(delivery), "failure": kind.value}
    deliveries = services.store.deliveries
    if kind is Kind.PERMANENT:
        log.error(
            "delivery failed for good, not retried: %s (%s)", message, failures.hint(error), extra=context
        )
        return _gave_up(services, delivery, owner, error, kind, retried=False)
    # A bug's traceback is logged the first time it happens to the delivery, not at every attempt.
    traceback = error if kind is Kind.BUG and message != delivery.error else None
    if delivery.attempts >= MAX_ATTEMPTS:
        log.error(
            "delivery failed for good after %d attempts: %s",
            delivery.attempts,
            message,
            exc_info=traceback,
            extra=context,
        )
        return _gave_up(services, delivery, owner, error, kind, retried=True)
    delay = failures.backoff(delivery.attempts, getattr(error, "retry_after", None))
    log.warning(
        "delivery attempt %d of %d failed (%s), next in %.0f s: %s",
        delivery.attempts,
        MAX_ATTEMPTS,
        kind.value,
        delay,
        message,
        exc_info=traceback,
        extra=context,
    )
    retry_at = services.now() + timedelta(seconds=delay)
    _record(lambda: deliveries.release(delivery.id, message, retry_at, owner, kind.value))
    raise RetryLater(delay)


def _gave_up(
    services: Services, delivery: Delivery, owner: str, error: Exception, kind: Kind, retried: bool
) -> str:
    """A delivery that failed for good: the benchmark request it was to dispatch is released
    first, while its lease still keeps the pull request's other deliveries away; then the delivery
    is marked failed, and the pull request told (a request released always is; else only after
    every attempt failed, not when the failure was permanent)."""
    payload = _payload(delivery)
    released = notes.release(delivery.event, payload, services, error)
    message = failures.describe(error)[:2000]
    _record(lambda: services.store.deliveries.finish(delivery.id, "failed", message, owner, kind.value))
    notes.delivery_failed(delivery.event, payload, services, error, released, retried)
    return "failed"


def _context(delivery: Delivery) -> dict[str, object]:
    return {
        "event": delivery.event,
        "action": delivery.action,
        "attempt": delivery.attempts,
        "max_attempts": MAX_ATTEMPTS,
    }


def _record(write) -> None:
    """A write of a job's outcome that may find the database gone: its lease then runs out, and
    the delivery is taken again (handlers are idempotent)."""
    try:
        write()
    except StorageUnavailable as error:
        _complain(f"could not record a delivery's outcome; it will be taken again: {error}")


@dataclass
class _Complaints:
    """One warning about the database being away per `every_s`, not one per job (the consumer's
    threads share it: the lock makes the check and the update one step)."""

    every_s: float = 10.0
    last: float = field(default=-1e9)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, text: str) -> None:
        now = time.monotonic()
        with self._lock:
            due = now - self.last >= self.every_s
            if due:
                self.last = now
        if due:
            log.warning(text)


_complain = _Complaints()


def _payload(delivery: Delivery) -> dict:
    try:
        payload = json.loads(delivery.payload)
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}


# ------------------------------------------------------------------ lost work


def take_over(services: Services, owner: str | None = None) -> list[int]:
    """Release the leases of dead workers of this host (a consumer killed and restarted, a server
    started again after a crash) and enqueue their deliveries at once; the ids."""
    me = owner or leases.owner_id()
    taken: list[int] = []
    for holder in services.store.deliveries.holders():
        if holder != me and leases.is_dead(holder):
            released = services.store.deliveries.release_holder(holder)
            if released:
                log.warning(
                    "took over the deliveries of a dead worker",
                    extra={"worker": holder, "deliveries": len(released)},
                )
            taken += released
    for delivery_id in taken:
        services.queue.enqueue(delivery_id)
    return taken


def requeue_stale(services: Services, older_than_s: float | None = None) -> int:
    """Enqueue again every pending delivery that nobody holds and nobody took in time, and those
    whose lease ran out (their worker died elsewhere); how many."""
    if older_than_s is None:
        older_than_s = UNQUEUED_IDLE_S if services.queue.pending() == 0 else UNQUEUED_S
    stale = services.store.deliveries.stale(older_than_s)
    for delivery_id in stale:
        services.queue.enqueue(delivery_id)
    if stale:
        log.warning("re-enqueued stale deliveries", extra={"count": len(stale)})
    return len(stale)


def housekeeping(services: Services) -> None:
    """The minutely sweep: take over dead workers' deliveries, re-enqueue lost ones, shed old
    payloads, forget old GUIDs, work keys and consumers."""
    taken = take_over(services)
    requeued = requeue_stale(services)
    now = services.now()
    forgotten = services.store.deliveries.prune(now, PAYLOAD_KEPT_S, DEDUPE_WINDOW_S)
    services.store.work.prune(now, WORK_KEPT_S)
    services.store.liveness.forget(CONSUMERS_KEPT_S)
    log.info("sweep", extra={"taken_over": len(taken), "requeued": requeued, "forgotten": forgotten})


# ------------------------------------------------------------------ a consumer's duties


class ConsumerDuties:
    """What a queue consumer process does besides running jobs: at start, take over the dead
    workers' deliveries (and with ``periodic``, sweep once); then, every heartbeat, renew the
    leases of the jobs it runs and say it is alive (`/healthz` reports consumers that are not).
    The periodic consumer also looks for lost work at every heartbeat, not only at the minutely
    sweep: a Redis restarted empty or a queue outage at intake costs under a minute."""

    def __init__(self, services: Services, threads: int, periodic: bool):
        self.services, self.threads, self.periodic = services, threads, periodic
        self.owner = leases.owner_id()
        self.started_at = services.now()
        self._heartbeat = leases.Heartbeat(self.beat)

    def start(self) -> ConsumerDuties:
        self._alive()
        take_over(self.services, self.owner)
        if self.periodic:
            housekeeping(self.services)
        self._heartbeat.start()
        return self

    def beat(self) -> None:
        running = self.services.running.renewable()
        if running:
            self.services.store.deliveries.renew(self.owner, running, LEASE_S)
        self._alive()
        if self.periodic:
            take_over(self.services, self.owner)
            requeue_stale(self.services)

    def _alive(self) -> None:
        self.services.store.liveness.beat(self.owner, self.started_at, self.periodic, self.threads)

    def stop(self) -> None:
        self._heartbeat.stop()
        try:
            self.services.store.liveness.stopped(self.owner)
        except StorageUnavailable as error:
            log.warning("could not record that this consumer stopped: %s", error)
