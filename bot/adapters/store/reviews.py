"""The `Reviews` port over SQL: the last review of each pull request, with what its sticky comment
is composed from."""

from __future__ import annotations

import json

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.service.ports.store import Reviews
from bot.service.records import Reason, Review

from .database import Database, now
from .tables import ReviewRow


class SqlReviews(Reviews):
    def __init__(self, db: Database):
        self.db = db

    def save(self, review) -> None:
        with self.db.session() as session:
            row = pull_request_row(session, ReviewRow, review.repo, review.number)
            row.head_sha, row.score, row.level = review.head_sha, review.score, review.level
            row.comment_id, row.check_run_id = review.comment_id, review.check_run_id
            row.blocks = json.dumps(list(review.blocks))
            row.wants_comment = review.wants_comment
            row.reasons = reasons_json(review.reasons)
            row.updated_at = now()

    def get(self, repo, number) -> Review | None:
        with self.db.session() as session:
            row = session.scalar(select(ReviewRow).where(ReviewRow.repo == repo, ReviewRow.number == number))
            if row is None:
                return None
            return Review(
                repo=row.repo,
                number=row.number,
                head_sha=row.head_sha,
                score=row.score,
                level=row.level,
                comment_id=row.comment_id,
                check_run_id=row.check_run_id,
                blocks=tuple(json.loads(row.blocks)) if row.blocks else (),
                wants_comment=bool(row.wants_comment),
                reasons=reasons_from(row.reasons),
            )


def reasons_json(reasons: tuple[Reason, ...]) -> str:
    return json.dumps([{"rule": r.rule, "weight": r.weight, "reason": r.text} for r in reasons])


def reasons_from(text: str | None) -> tuple[Reason, ...]:
    items = json.loads(text) if text else []
    return tuple(Reason(i["rule"], i["weight"], i["reason"]) for i in items)


def pull_request_row(session: Session, row_type, repo: str, number: int):
    """The row of ``row_type`` for one pull request, added to the session if it is new."""
    row = session.scalar(select(row_type).where(row_type.repo == repo, row_type.number == number))
    if row is None:
        row = row_type(repo=repo, number=number)
        session.add(row)
    return row
