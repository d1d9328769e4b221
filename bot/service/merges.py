"""Record each merged pull request with the risk it merged with, for the dashboard."""

from __future__ import annotations

import logging
from datetime import datetime

from .ports import Merge, PullRequestGone, Reason, Review
from .review import PullRef, assess
from .router import Router
from .services import Services

router = Router()
log = logging.getLogger("perfbot.merges")
MAX_REASONS = 20


@router.register("pull_request", "closed")
def on_closed(payload: dict, services: Services) -> None:
    pr = payload["pull_request"]
    if not pr.get("merged"):
        return
    ref = PullRef.from_payload(payload)
    score, level, reasons = _risk_at_merge(services, ref)
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
            author=(pr.get("user") or {}).get("login"),
            url=ref.html_url,
            reasons=reasons,
        )
    )
    log.info("merge recorded", extra={"repo": ref.repo, "pr": ref.number, "level": level})


def _risk_at_merge(services: Services, ref: PullRef) -> tuple[int | None, str | None, tuple[Reason, ...]]:
    """The score and level of the published review of the merged head (what maintainers saw),
    else of a scoring now; the reasons of the merged diff, for the dashboard and calibration."""
    review: Review | None = services.store.review_for(ref.repo, ref.number)
    if review is not None and review.head_sha != ref.head_sha:
        review = None
    try:
        report, _ = assess(services.github.for_installation(ref.installation_id), ref)
    except PullRequestGone:
        return (review.score, review.level, ()) if review else (None, None, ())
    reasons = tuple(Reason(s.rule, s.weight, s.sentence()) for s in report.signals[:MAX_REASONS])
    if review is not None:
        return review.score, review.level, reasons
    return report.score, report.level, reasons


def _timestamp(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
