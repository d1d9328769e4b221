"""Risk review of a pull request: diff -> score -> one sticky comment, a check and a label."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from bot.core.config import source as config_source
from bot.core.config.schema import ConfigError, RepoConfig
from bot.core.config.source import ConfigSource
from bot.core.render import comment as render_comment
from bot.core.risk import diff as diffs
from bot.core.risk import ruleset
from bot.core.risk import scoring as risk

from .ports import CheckResult, GitHub, PullRequestGone, Review
from .router import Router
from .services import Services

router = Router()
log = logging.getLogger("perfbot.review")

CHECK_NAME = "perfbot / risk"
LABEL_PREFIX = "perf-risk: "
LABELLED_LEVELS = ("high", "medium")
REVIEWED_ACTIONS = ("opened", "synchronize", "reopened", "ready_for_review", "edited")


@dataclass(frozen=True)
class PullRef:
    """The fields of a `pull_request` payload a review needs."""

    repo: str
    number: int
    head_sha: str
    default_branch: str
    html_url: str
    installation_id: int | None

    @classmethod
    def from_payload(cls, payload: dict) -> PullRef:
        pr, repo = payload["pull_request"], payload["repository"]
        installation = (payload.get("installation") or {}).get("id")
        return cls(
            repo["full_name"],
            pr["number"],
            pr["head"]["sha"],
            repo["default_branch"],
            pr["html_url"],
            installation,
        )


def _register(action: str):
    return router.register("pull_request", action)


@_register("opened")
@_register("synchronize")
@_register("reopened")
@_register("ready_for_review")
@_register("edited")
def on_pull_request(payload: dict, services: Services) -> None:
    if payload["action"] == "edited" and "base" not in (payload.get("changes") or {}):
        return  # a title or body edit cannot change the risk
    pr = payload["pull_request"]
    if pr.get("state") != "open" or pr.get("draft"):
        return
    ref = PullRef.from_payload(payload)
    try:
        github = services.github.for_installation(ref.installation_id)
        if github.pull_head_sha(ref.repo, ref.number) != ref.head_sha:
            log.info("superseded by a newer push; skipped", extra={"repo": ref.repo, "pr": ref.number})
            return
        report, config_error = assess(github, ref)
        publish(github, services, ref, report, config_error)
    except PullRequestGone:
        log.info("pull request gone; dropped", extra={"repo": ref.repo, "pr": ref.number})


def assess(github: GitHub, ref: PullRef) -> tuple[risk.RiskReport, str | None]:
    """Score the PR's diff under the config of the default branch (never the PR head's)."""
    config, error = default_branch_config(github, ref)
    parsed = diffs.parse(github.pull_diff(ref.repo, ref.number))
    paths = [f.path for f in parsed.files]
    try:
        rules = ruleset.build(config, paths)
    except ConfigError as problem:  # valid YAML and schema, but e.g. disables a rule that does not exist
        rules, error = ruleset.build(RepoConfig(), paths), str(problem)
    return risk.score(parsed, rules), error


def default_branch_config(github: GitHub, ref: PullRef) -> tuple[RepoConfig, str | None]:
    source = ConfigSource.default_branch(ref.default_branch)
    text = github.read_file(ref.repo, source.path, ref.default_branch)
    return config_source.read_or_defaults(text, source)


def publish(
    github: GitHub, services: Services, ref: PullRef, report: risk.RiskReport, config_error: str | None
) -> None:
    context = render_comment.PullContext(ref.html_url, ref.head_sha, ref.default_branch, config_error)
    comment_id = github.upsert_comment(
        ref.repo, ref.number, render_comment.MARKER, render_comment.comment_body(report, context)
    )
    github.publish_check(ref.repo, check_result(report, context))
    wanted = LABEL_PREFIX + report.level if report.level in LABELLED_LEVELS else None
    github.sync_labels(ref.repo, ref.number, LABEL_PREFIX, wanted)
    services.store.save_review(
        Review(ref.repo, ref.number, ref.head_sha, report.score, report.level, comment_id)
    )
    log.info(
        "reviewed", extra={"repo": ref.repo, "pr": ref.number, "score": report.score, "level": report.level}
    )


def check_result(report: risk.RiskReport, context: render_comment.PullContext) -> CheckResult:
    """Risk informs, it never blocks: 'neutral' when it is worth a look, else 'success'."""
    conclusion = "neutral" if report.level in LABELLED_LEVELS else "success"
    title = f"Performance risk: {report.level} ({report.score}/100)"
    summary = render_comment.fit(render_comment.review_markdown(report, context))
    return CheckResult(CHECK_NAME, context.head_sha, conclusion, title, summary)
