"""The sticky comment composed from a stored review and a benchmark section."""

from __future__ import annotations

import json

from bot.core.bench.judging import judge_suite
from bot.core.config.schema import load
from bot.core.judge import results
from bot.core.render import comment as render_comment
from bot.core.render.bench import BenchSection, SuiteResult, section_markdown
from bot.core.review import sticky
from bot.core.review.plan import PullFacts, plan
from tests.core.judge.results_data import BASE_SHA, FINGERPRINT, HEAD_SHA, document
from tests.service import diffs

SHA = "a" * 40
RUNNING = BenchSection("running", "b" * 40, SHA, ("verify-step",), "command", "maintainer", "https://run/1")


def review_blocks(diff: str = diffs.HIGH) -> tuple[str, ...]:
    facts = PullFacts(
        html_url="https://github.com/o/r/pull/7",
        head_sha=SHA,
        default_branch="main",
        diff=diff,
        config=load(diffs.BASE_CONFIG, "test"),
    )
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


def _verify_step_regression() -> dict:
    """A verify-step run of a slow commit: the piecewise cycle 9.7 -> 14.6 ms at the configured
    accept length, the plain decode step unchanged, so speculation now costs more than it saves."""

    def rounds(center: float, scatter: float = 0.002) -> list[float]:
        return [round(center * (1 + scatter * ((i * 7) % 5 - 2)), 4) for i in range(6)]

    base_cycle, head_cycle, decode = rounds(9.70), rounds(14.62), rounds(7.00)
    metrics = {
        "cycle_ms": ("ms", "lower", base_cycle, head_cycle),
        "tok_s": ("tok/s", "higher", [1800 / c for c in base_cycle], [1800 / c for c in head_cycle]),
        "verify_piecewise_ms": ("ms", "lower", rounds(9.16), rounds(14.08)),
        "draft_ms": ("ms", "lower", rounds(0.27), rounds(0.27)),
        "allreduce_verify_us": ("us", "lower", rounds(60.5, 0.01), rounds(122.4, 0.01)),
        "decode_ms": ("ms", "lower", decode, decode[::-1]),
        "baseline_tok_s": ("tok/s", "higher", [1000 / d for d in decode], [1000 / d for d in decode[::-1]]),
        "spec_speedup": (
            "x",
            "higher",
            [1.8 * d / c for d, c in zip(decode, base_cycle, strict=True)],
            [1.8 * d / c for d, c in zip(decode[::-1], head_cycle, strict=True)],
        ),
    }
    doc = document(metrics, suite="verify-step", base_fingerprint=FINGERPRINT)
    for name, spec in doc["metrics"].items():
        spec["role"] = {"cycle_ms": "headline", "tok_s": "primary"}.get(name, "diagnostic")
        if name in ("cycle_ms", "tok_s", "decode_ms", "baseline_tok_s", "spec_speedup"):
            spec["mode"] = "piecewise"
    doc["options"] = {"rounds": 6, "order": "ABBA", "speculation_floor": 1.2}
    return doc


def test_the_comment_with_a_benchmark_verdict_matches_its_golden_file(file_regression):
    """The whole comment as GitHub gets it: the review, then the benchmark with its per-round chart
    and the speculation break-even (docs/images/comment-chart.png is this file in a browser)."""
    judged = judge_suite(results.load(json.dumps(_verify_step_regression())))
    section = BenchSection(
        "completed",
        BASE_SHA,
        HEAD_SHA,
        ("verify-step",),
        "command",
        "maintainer",
        "https://github.com/o/r/actions/runs/1",
        conclusion="success",
        results=(SuiteResult(judged.suite, judged.verdict, judged.headline, judged.markdown),),
    )
    body = sticky.compose(review_blocks(), section, wants_comment=True).body
    assert "```mermaid\n" in body and "**Speculation break-even.** ⚠️ Speculation now costs more" in body
    file_regression.check(body, extension=".md", basename="sticky_comment_with_chart")
