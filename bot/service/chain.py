"""The bot's own jobs, queued like webhook deliveries: the steps of the default branch's watch
after a run on it (look → dispatch → announce, and release), each stored as a delivery of the
event `EVENT` and processed by the worker as any other (leased, tried again after a failure, shown
on the dashboard when it fails for good).

A step is queued once per subject: its GUID is made of the step and what it acts on, and the store
refuses a GUID it has seen, so a job queued again after a kill (or by a replayed delivery) is the
same job. The steps of one repository run one at a time (their delivery subject). GitHub never
sends `EVENT`: the intake ignores it from the web.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass
from typing import Any, Literal, cast, get_args

from .events import MalformedPayload
from .failures import Transient
from .services import Services

log = logging.getLogger("perfbot.chain")

EVENT = "perfbot.step"
HOOK_ID = "perfbot"

StepName = Literal["look", "dispatch", "release", "announce"]
LOOK: StepName = "look"  # a finished default-branch run's series looked at: cases opened, moved, ended
DISPATCH: StepName = "dispatch"  # an open case's bisect charged and dispatched
RELEASE: StepName = "release"  # a superseded bisect's run stopped and its reserve given back
ANNOUNCE: StepName = "announce"  # a confirmed culprit named on its pull request (and issue)


@dataclass(frozen=True, kw_only=True)
class Step:
    """One queued step: what it does, in which repository, on what (a run's correlation id for
    `LOOK`, a case's key for the others)."""

    action: StepName
    repo: str
    installation_id: int | None
    default_branch: str
    subject: str


def parse(payload: dict[str, Any]) -> Step:
    """The step a stored job's payload describes; `MalformedPayload` when it is not one."""
    action, repo, branch, subject = (payload.get(k) for k in ("action", "repo", "default_branch", "subject"))
    installation = payload.get("installation_id")
    if action not in get_args(StepName):
        raise MalformedPayload(f"{EVENT}: unknown action {str(action)[:40]!r}")
    if not all(isinstance(v, str) and v for v in (repo, branch, subject)):
        raise MalformedPayload(f"{EVENT}: repo, default_branch and subject must be non-empty strings")
    if installation is not None and (not isinstance(installation, int) or isinstance(installation, bool)):
        raise MalformedPayload(f"{EVENT}: installation_id must be an integer")
    return Step(
        action=cast(StepName, action),
        repo=str(repo),
        installation_id=installation,
        default_branch=str(branch),
        subject=str(subject),
    )


def queue(services: Services, step: Step, once: str | None = None) -> bool:
    """Queue ``step`` unless it was queued before for the same ``once`` (default: its subject);
    whether it was queued now. A step stored but not enqueued (the queue is down) is enqueued by
    the worker's sweep of pending deliveries. The database's refusal propagates: the job queueing
    it is tried again."""
    identity = f"{step.repo}\0{once if once is not None else step.subject}"
    guid = f"{step.action}:{hashlib.sha256(identity.encode()).hexdigest()[:48]}"
    body = json.dumps(asdict(step), sort_keys=True).encode()
    delivery_id = services.store.deliveries.claim(
        HOOK_ID, guid, EVENT, step.action, body, step.repo, subject=f"{step.repo}#watch"
    )
    if delivery_id is None:
        return False
    try:
        services.queue.enqueue(delivery_id)
    except Transient as error:
        log.warning(
            "step stored but not enqueued; the sweep will enqueue it (%s)", error, extra=_context(step)
        )
    except Exception:  # the delivery is stored: the sweep enqueues it
        log.exception("step stored but not enqueued; the sweep will enqueue it", extra=_context(step))
    log.info("step queued", extra=_context(step))
    return True


def _context(step: Step) -> dict[str, str]:
    return {"repo": step.repo, "step": step.action, "subject": step.subject[:120]}
