"""Record each merged pull request with the risk it merged with, for the dashboard."""

from __future__ import annotations

import logging
from datetime import datetime

from .ports import Merge, PullRequestGone
from .review import PullRef, assess
from .router import Router
from .services import Services

router = Router()
log = logging.getLogger("perfbot.merges")


@router.register("pull_request", "closed")
def on_closed(payload: dict, services: Services) -> None:
    pr = payload["pull_request"]
    if not pr.get("merged"):
        return
    ref = PullRef.from_payload(payload)
    score, level = _risk_at_merge(payload, services, ref)
    services.store.record_merge(
        Merge(
            ref.repo,
            ref.number,
            pr.get("title") or "",
            pr.get("merge_commit_sha"),
            ref.head_sha,
            score,
            level,
            _timestamp(pr.get("merged_at")),
        )
    )
    log.info("merge recorded", extra={"repo": ref.repo, "pr": ref.number, "level": level})


def _risk_at_merge(payload: dict, services: Services, ref: PullRef) -> tuple[int | None, str | None]:
    """The published review of the merged head; scored now when the bot never reviewed it."""
    review = services.store.review_for(ref.repo, ref.number)
    if review is not None and review.head_sha == ref.head_sha:
        return review.score, review.level
    try:
        report, _ = assess(services.github.for_installation(ref.installation_id), ref)
    except PullRequestGone:
        return None, None
    return report.score, report.level


def _timestamp(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
