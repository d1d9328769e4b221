"""The decisions of a pull request's risk review, made without I/O: whether a head is reviewed,
`assess` scores the diff under the default branch's config, `plan` renders the review once and says
what to publish.

`bot.service.pull_requests` gathers the facts (`PullFacts`, and the assessment, on which asking for
the author's permission depends) and applies the `ReviewPlan`: it publishes the check run, syncs the
label, stores the review (with its rendered blocks, from which `bot.core.review.sticky` composes the
sticky comment) and writes the comment once.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.checks import Check
from bot.core.config.schema import ConfigError, RepoConfig
from bot.core.pulls import PullInfo
from bot.core.render import comment as render_comment
from bot.core.review.record import Reason, Risk
from bot.core.risk import diff as diffs
from bot.core.risk import ruleset
from bot.core.risk.scoring import RiskReport, Signal, score
from bot.core.risk.stepmap_scoring import MapEvidence
from bot.core.vocabulary import FLAGGED_LEVELS, Level, reaches

CHECK_NAME = "perfbot / risk"
LABEL_PREFIX = "perf-risk: "
MAX_REASONS = 20  # what the dashboard keeps of a merge's reasons


@dataclass(frozen=True, kw_only=True)
class PullFacts:
    """What the handler gathered about a pull request: where it lives, its diff, the default
    branch's config (``config_error``: why that config could not be used, if it could not)."""

    html_url: str
    head_sha: str
    default_branch: str
    diff: str
    config: RepoConfig
    config_error: str | None = None
    step_map: MapEvidence | None = None  # what the repository's stored per-step map says


@dataclass(frozen=True)
class Assessment:
    """The diff's risk under the config, and the config problem to tell the reader, if any (the
    built-in defaults were used instead)."""

    report: RiskReport
    config_problem: str | None

    @property
    def level(self) -> Level:
        return self.report.level


@dataclass(frozen=True)
class Label:
    """The one label starting with ``prefix`` the pull request should carry; None: none."""

    prefix: str
    wanted: str | None


@dataclass(frozen=True, kw_only=True)
class ReviewPlan:
    """The review rendered once: its ``blocks`` make both the sticky comment's review and the check
    run's summary; ``wants_comment``: worth a new comment even without a benchmark below it."""

    head_sha: str
    score: int
    level: Level
    blocks: tuple[str, ...]
    wants_comment: bool
    check: Check
    label: Label
    reasons: tuple[Reason, ...]  # heaviest first

    @property
    def risk(self) -> Risk:
        return Risk(score=self.score, level=self.level, reasons=self.reasons)


def reviewed(pull: PullInfo, draft: bool = False) -> bool:
    """Whether the pull request's head gets a review: open and ready (``draft``: the event said it
    was a draft; the `ready_for_review` event that follows reviews it)."""
    return pull.open and not (pull.draft or draft)


def assess(facts: PullFacts) -> Assessment:
    """The diff's risk under the config, and the config problem to tell the reader, if any."""
    parsed = diffs.parse(facts.diff)
    paths = [f.path for f in parsed.files]
    try:
        rules, problem = ruleset.build(facts.config, paths), facts.config_error
    except ConfigError as error:  # valid YAML and schema, but e.g. disables a rule that does not exist
        rules, problem = ruleset.build(RepoConfig(), paths), str(error)
    return Assessment(score(parsed, rules, step_map=facts.step_map), problem)


def worth_a_comment(level: Level, threshold: Level, news: bool) -> bool:
    """Quiet by default: a new comment only from the config's level up (medium unless set), or
    when there is ``news`` (a benchmark, a config problem); below it the check run says enough."""
    return news or reaches(level, threshold)


def plan(facts: PullFacts, assessed: Assessment | None = None) -> ReviewPlan:
    """Everything to publish about the pull request's risk (``assessed``: `assess` of the same
    facts, when it was needed before)."""
    assessed = assessed if assessed is not None else assess(facts)
    report, config_error = assessed.report, assessed.config_problem
    pull = render_comment.PullContext(facts.html_url, facts.head_sha, facts.default_branch, config_error)
    blocks = render_comment.review_blocks(report, pull)
    labelled = report.level in FLAGGED_LEVELS
    return ReviewPlan(
        head_sha=facts.head_sha,
        score=report.score,
        level=report.level,
        blocks=blocks,
        wants_comment=worth_a_comment(report.level, facts.config.risk.comment, news=config_error is not None),
        check=Check(
            name=CHECK_NAME,
            head_sha=facts.head_sha,
            conclusion="neutral" if labelled else "success",
            title=f"Performance risk: {report.level} ({report.score}/100)",
            summary=render_comment.fit_review(blocks),
            status_description=(
                f"{report.level.upper()} risk ({report.score}/100): informational, "
                "not a pass; read the review"
                if labelled
                else None
            ),
        ),
        label=Label(LABEL_PREFIX, LABEL_PREFIX + report.level if labelled else None),
        reasons=tuple(_reason(s) for s in report.signals[:MAX_REASONS]),
    )


def _reason(signal: Signal) -> Reason:
    return Reason(signal.rule, signal.weight, signal.sentence())
