"""The sticky comment composed from a stored review and a benchmark section."""

from __future__ import annotations

from bot.core.config.schema import load
from bot.core.render import comment as render_comment
from bot.core.render.bench import BenchSection, section_markdown
from bot.core.review import sticky
from bot.core.review.plan import PullFacts, plan
from tests.service import diffs

SHA = "a" * 40
RUNNING = BenchSection("running", "b" * 40, SHA, ("verify-step",), "command", "maintainer", "https://run/1")


def review_blocks(diff: str = diffs.HIGH) -> tuple[str, ...]:
    facts = PullFacts(html_url="https://github.com/o/r/pull/7", head_sha=SHA, default_branch="main", diff=diff,
                      config=load(diffs.BASE_CONFIG, "test"))
    return plan(facts).blocks


def test_the_comment_is_the_review_then_the_benchmarks():
    blocks = review_blocks()
    comment = sticky.compose(blocks, RUNNING, wants_comment=False)
    review, benchmarks = render_comment.fit_review(blocks), section_markdown(RUNNING)
    assert comment.body == f"{render_comment.MARKER}\n{review}\n{benchmarks}"
    assert comment.create, "a benchmark is news enough for a new comment"


def test_quiet_below_the_comment_level_unless_there_is_a_benchmark():
    blocks = review_blocks(diffs.COLD)
    assert not sticky.compose(blocks, None, wants_comment=False).create
    assert sticky.compose(blocks, None, wants_comment=True).create


def test_the_review_gives_way_to_the_benchmarks_under_githubs_limit():
    huge = tuple(f"block {i}: " + "x" * 5_000 for i in range(20))
    comment = sticky.compose(huge, RUNNING, wants_comment=True)
    assert len(comment.body) < render_comment.GITHUB_LIMIT
    assert comment.body.endswith(section_markdown(RUNNING)), "the benchmark section is never cut"
    assert "left out to stay under GitHub's comment size limit" in comment.body


def test_a_comment_without_a_stored_review_shows_the_benchmarks_alone():
    comment = sticky.compose((), RUNNING, wants_comment=False)
    assert comment.body.startswith(render_comment.MARKER) and "Benchmarks are running" in comment.body
