"""The risk a merge is recorded with: the published review's, completed by a scoring when needed."""

from __future__ import annotations

from bot.core.review import record
from bot.core.review.record import Published, Reason, Risk

SCORED = Risk(score=40, level="medium", reasons=(Reason("token.sync", 30.0, "a sync"),))
SEEN = Risk(score=88, level="high", reasons=(Reason("path.kernels", 60.0, "a kernel"),))


def test_the_review_maintainers_saw_is_recorded_without_a_scoring():
    published = Published(risk=SEEN, complete=True)
    assert not record.scores_merge(published)
    assert record.merge_risk(published, None) == SEEN


def test_a_review_stored_without_its_reasons_keeps_its_risk_and_takes_the_reasons_of_a_scoring():
    published = Published(risk=Risk(score=88, level="high"), complete=False)
    assert record.scores_merge(published)
    assert record.merge_risk(published, SCORED) == Risk(score=88, level="high", reasons=SCORED.reasons)
    assert record.merge_risk(published, None) == Risk(score=88, level="high"), "its diff was gone"


def test_a_merge_never_reviewed_is_recorded_with_a_scoring_or_as_unknown():
    assert record.scores_merge(None)
    assert record.merge_risk(None, SCORED) == SCORED
    assert record.merge_risk(None, None) == Risk(score=None, level=None, reasons=())
