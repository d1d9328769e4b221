"""The sticky comment as a projection of stored state: the stored review's blocks above, the
pull request's benchmark section below, composed without asking GitHub or scoring anything."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.core.render import bench as render_bench
from bot.core.render import comment as render_comment
from bot.core.render.bench import BenchSection


@dataclass(frozen=True)
class Comment:
    """The sticky comment: the bot finds its own again by the marker."""

    marker: str
    body: str
    create: bool = True  # False: only update the comment if the pull request already has one


def compose(review: Sequence[str], bench: BenchSection | None, wants_comment: bool) -> Comment:
    """The comment of a review (its blocks) and the benchmark section, if any. The review gives way
    to the benchmarks under GitHub's limit; a benchmark is news enough for a new comment."""
    benchmarks = render_bench.section_markdown(bench) if bench is not None else ""
    budget = render_comment.BUDGET - len(benchmarks) - 1 if benchmarks else render_comment.BUDGET
    shown = render_comment.fit_review(review, budget) if review else ""
    return Comment(
        render_comment.MARKER,
        render_comment.with_marker(shown, benchmarks),
        create=wants_comment or bench is not None,
    )
