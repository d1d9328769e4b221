"""Write a pull request's sticky comment as a projection of stored state: the stored review and the
stored benchmark section (`bot.core.review.sticky`), with no GitHub read but the write itself and no
scoring. Each pipeline calls it at most once per delivery, after everything it changed is stored."""

from __future__ import annotations

import logging
from dataclasses import replace

from bot.core.review import sticky

from .bench_section import pull_section
from .ports.github import GitHub, PullRequestGone
from .records import Review
from .services import Services

log = logging.getLogger("perfbot.sticky")


def write(
    services: Services,
    github: GitHub,
    repo: str,
    number: int,
    head_sha: str | None,
    review: Review | None = None,
) -> int | None:
    """Compose and write the comment for the pull request whose head is ``head_sha`` now (None: the
    stored review's); ``review``: a review just made, stored with the comment's id once written,
    else the stored one. The comment's id, None when nothing was written (nothing to say yet, or
    quiet below the comment level)."""
    fresh = review
    review = fresh if fresh is not None else services.store.reviews.get(repo, number)
    head = head_sha or (review.head_sha if review is not None else None)
    section = pull_section(services.store, repo, number, head)
    if review is None and section is None:
        return None
    comment = sticky.compose(
        review.blocks if review else (), section, review.wants_comment if review else False
    )
    try:
        comment_id = github.upsert_comment(repo, number, comment.marker, comment.body, create=comment.create)
    except PullRequestGone:
        log.info("pull request gone; comment not written", extra={"repo": repo, "pr": number})
        return None
    written = comment_id is not None and comment_id != (review.comment_id if review else None)
    if review is not None and (fresh is not None or written):
        services.store.reviews.save(replace(review, comment_id=comment_id or review.comment_id))
    return comment_id
