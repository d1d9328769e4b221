"""The decisions of a pull request's risk review, made without I/O: `plan` scores the diff under the
default branch's config, renders the review once and says what to publish.

`bot.service.review` gathers the facts (`PullFacts`) and applies the `ReviewPlan`: it upserts the
sticky comment, publishes the check run, syncs the label and saves the record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.core.config.schema import LEVELS, ConfigError, RepoConfig
from bot.core.render import bench as render_bench
from bot.core.render import comment as render_comment
from bot.core.render.bench import BenchSection
from bot.core.risk import diff as diffs
from bot.core.risk import ruleset
from bot.core.risk.scoring import RiskReport, score

CHECK_NAME = "perfbot / risk"
LABEL_PREFIX = "perf-risk: "
LABELLED_LEVELS = ("high", "medium")


@dataclass(frozen=True)
class PullFacts:
    """What the handler gathered about a pull request: where it lives, its diff, the default
    branch's config (``config_error``: why that config could not be used, if it could not), and its
    latest benchmark, if any."""

    html_url: str
    head_sha: str
    default_branch: str
    diff: str
    config: RepoConfig
    config_error: str | None = None
    bench: BenchSection | None = None


@dataclass(frozen=True)
class Comment:
    """The sticky comment: the bot finds its own again by the marker."""

    marker: str
    body: str
    create: bool = True  # False: only update the comment if the pull request already has one


@dataclass(frozen=True)
class Check:
    """The check run on the head commit; risk informs, it never blocks."""

    name: str
    head_sha: str
    conclusion: Literal["neutral", "success"]
    title: str
    summary: str


@dataclass(frozen=True)
class Label:
    """The one label starting with ``prefix`` the pull request should carry; None: none."""

    prefix: str
    wanted: str | None


@dataclass(frozen=True)
class Record:
    """What the store keeps of the review."""

    head_sha: str
    score: int
    level: str


@dataclass(frozen=True)
class ReviewPlan:
    comment: Comment
    check: Check
    label: Label
    record: Record


def assess(facts: PullFacts) -> tuple[RiskReport, str | None]:
    """The diff's risk under the config, and the config problem to tell the reader, if any (the
    built-in defaults were used instead)."""
    parsed = diffs.parse(facts.diff)
    paths = [f.path for f in parsed.files]
    try:
        rules, problem = ruleset.build(facts.config, paths), facts.config_error
    except ConfigError as error:  # valid YAML and schema, but e.g. disables a rule that does not exist
        rules, problem = ruleset.build(RepoConfig(), paths), str(error)
    return score(parsed, rules), problem


def worth_a_comment(level: str, threshold: str, news: bool) -> bool:
    """Quiet by default: a new comment only from the config's level up (medium unless set), or
    when there is ``news`` (a benchmark, a config problem); below it the check run says enough."""
    return news or LEVELS.index(level) >= LEVELS.index(threshold)


def plan(facts: PullFacts) -> ReviewPlan:
    """Everything to publish about the pull request; the review is rendered once, for the comment
    and the check run's summary alike."""
    report, config_error = assess(facts)
    pull = render_comment.PullContext(facts.html_url, facts.head_sha, facts.default_branch, config_error)
    benchmarks = render_bench.section_markdown(facts.bench) if facts.bench is not None else ""
    review = render_comment.review_markdown(report, pull)
    # The check run gets the whole review; the comment shares GitHub's limit with the benchmarks.
    shared = review if not benchmarks else render_comment.review_markdown(
        report, pull, render_comment.BUDGET - len(benchmarks) - 1)
    labelled = report.level in LABELLED_LEVELS
    return ReviewPlan(
        comment=Comment(render_comment.MARKER, render_comment.with_marker(shared, benchmarks),
                        create=worth_a_comment(report.level, facts.config.risk.comment,
                                               news=facts.bench is not None or config_error is not None)),
        check=Check(CHECK_NAME, facts.head_sha, "neutral" if labelled else "success",
                    f"Performance risk: {report.level} ({report.score}/100)", review),
        label=Label(LABEL_PREFIX, LABEL_PREFIX + report.level if labelled else None),
        record=Record(facts.head_sha, report.score, report.level),
    )
